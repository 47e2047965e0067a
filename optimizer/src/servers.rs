//! Server placement (`[queues.NAME.servers]`): a dedicated-server round forms no match it
//! cannot place on a ready game server.
//!
//! The search forms the round's matches, each in the region that minimises its worst
//! player's latency (`factors::enemy_ping`). Placement then gives the ready servers of
//! each region to those matches: matches holding a player past `max_wait` first, then by
//! match score, so scarce servers go to the matches that need them most. A match whose
//! region has no server left moves to the region with a free server that serves its
//! players best, when every player's latency there scores above zero on the enemy-ping
//! curve (`ping.bad_ms`) and the quality floor in force for the match still holds there
//! (`max_enemy_ping_ms`, `min_match_score`): the floors and the enemy-ping factor decide,
//! not a fixed list of fallback regions. A match that no region can host is not formed:
//! its players stay queued, left over as [`LeftOverKind::NoServer`] with the region that
//! was full.
//!
//! Pure: the supply is a count of ready servers per region, read by the round's snapshot;
//! the commit allocates actual servers to the placed matches.

use std::collections::BTreeMap;

use super::error::PoolError;
use super::factors::ENEMY_PING;
use super::index::IndexedPool;
use super::left_over::{LeftOver, LeftOverKind};
use super::model::{FloorStep, Network, QueueModel};
use super::pool::Pool;
use super::round::{MatchOutcome, RoundOutcome};
use super::score::Scorer;

/// Ready servers per region.
pub type Supply = BTreeMap<String, u32>;

/// The round after placement.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    /// The placed matches (in the round's order, region as placed), every other player
    /// in `unmatched`, the round score over the placed matches.
    pub outcome: RoundOutcome,
    /// One per player of a match that could not be placed.
    pub left_over: Vec<LeftOver>,
    /// Matches placed outside the region they were formed for.
    pub moved: usize,
    /// Matches formed but not placed.
    pub unplaced: usize,
}

/// Place the round's matches on `supply`. A queue that is not dedicated-server is
/// returned as it is.
pub fn place_on_servers(
    pool: &Pool,
    model: &QueueModel,
    mut outcome: RoundOutcome,
    supply: &Supply,
) -> Result<Placement, PoolError> {
    if model.network != Network::Dedicated || outcome.matches.is_empty() {
        return Ok(Placement {
            outcome,
            left_over: Vec::new(),
            moved: 0,
            unplaced: 0,
        });
    }
    let ix = IndexedPool::build(pool, model)?;
    let sc = Rates::new(&ix, model);
    let index: std::collections::HashMap<&str, u32> = ix
        .ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i as u32))
        .collect();
    let players_of = |m: &MatchOutcome| -> Vec<u32> {
        m.teams
            .iter()
            .flatten()
            .filter_map(|id| index.get(id.as_str()).copied())
            .collect()
    };
    let overdue = |players: &[u32]| players.iter().any(|&p| ix.overdue[p as usize]);

    // Overdue matches first, then the best; ties in the round's order.
    let mut order: Vec<usize> = (0..outcome.matches.len()).collect();
    let keys: Vec<(bool, f64)> = outcome
        .matches
        .iter()
        .map(|m| (!overdue(&players_of(m)), -m.score))
        .collect();
    order.sort_by(|&a, &b| {
        keys[a]
            .0
            .cmp(&keys[b].0)
            .then(keys[a].1.total_cmp(&keys[b].1))
            .then(a.cmp(&b))
    });
    let mut wanted: BTreeMap<&str, u32> = BTreeMap::new();
    for m in &outcome.matches {
        if let Some(r) = m.region.as_deref() {
            *wanted.entry(r).or_default() += 1;
        }
    }
    let wanted: BTreeMap<String, u32> = wanted
        .into_iter()
        .map(|(r, n)| (r.to_string(), n))
        .collect();

    let mut free = supply.clone();
    let mut placed = vec![false; outcome.matches.len()];
    let mut reasons: Vec<Option<String>> = vec![None; outcome.matches.len()];
    let mut moved = 0;
    for &i in &order {
        let m = &outcome.matches[i];
        let home = m.region.clone().unwrap_or_default();
        if take(&mut free, &home) {
            placed[i] = true;
            continue;
        }
        let players = players_of(m);
        match best_other_region(&sc, &players, m, &free) {
            Some((r, new_ping)) => {
                let name = ix.regions[r].clone();
                take(&mut free, &name);
                let m = &mut outcome.matches[i];
                rescore_ping(&sc, m, new_ping);
                m.region = Some(name);
                placed[i] = true;
                moved += 1;
            }
            None => {
                let elsewhere = free.values().any(|&n| n > 0);
                reasons[i] = Some(format!(
                    "no ready server in region {home}: {} ready, {} matches of the round \
                     wanted one there; {}",
                    supply.get(&home).copied().unwrap_or(0),
                    wanted.get(&home).copied().unwrap_or(0),
                    if elsewhere {
                        "no region with a free server is within the ping limits of every \
                         player of the match"
                    } else {
                        "no other region had a free server"
                    }
                ));
            }
        }
    }

    let mut left_over = Vec::new();
    let mut matches = Vec::new();
    let mut unplaced = 0;
    for (i, m) in std::mem::take(&mut outcome.matches).into_iter().enumerate() {
        if placed[i] {
            matches.push(m);
            continue;
        }
        unplaced += 1;
        let reason = reasons[i].take().unwrap_or_default();
        for id in m.teams.iter().flatten() {
            outcome.unmatched.push(id.clone());
            left_over.push(LeftOver {
                player: id.clone(),
                kind: LeftOverKind::NoServer,
                reason: reason.clone(),
            });
        }
    }
    if unplaced > 0 || moved > 0 {
        outcome.score = sc.round_score(&matches);
    }
    outcome.matches = matches;
    Ok(Placement {
        outcome,
        left_over,
        moved,
        unplaced,
    })
}

/// What placement reads of the queue's scoring: the enemy-ping weight among the
/// weights in force, and the floor steps. A big format (`crate::lobby`) has no split
/// tables to build: its weights come from the lobby path's scorer.
struct Rates<'a> {
    ix: &'a IndexedPool,
    model: &'a QueueModel,
    ping_weight: f64,
    total_weight: f64,
}

impl<'a> Rates<'a> {
    fn new(ix: &'a IndexedPool, model: &'a QueueModel) -> Self {
        let (ping_weight, total_weight) = if model.is_big() {
            crate::lobby::score::Ctx::new(ix, model).ping_weight()
        } else {
            let sc = Scorer::new(ix, model);
            (sc.weights[ENEMY_PING], sc.weights.iter().sum())
        };
        Rates {
            ix,
            model,
            ping_weight,
            total_weight,
        }
    }

    /// The floor step in force for a match of these players (`Scorer::floor_in_force`).
    fn floor_in_force(&self, players: &[u32]) -> Option<&'a FloorStep> {
        let wait = players
            .iter()
            .map(|&p| self.ix.wait_minutes[p as usize])
            .fold(0.0, f64::max);
        self.model
            .floors
            .iter()
            .rev()
            .find(|s| wait >= s.after.as_secs_f64() / 60.0)
    }

    /// The round score (power mean) of the placed matches.
    fn round_score(&self, matches: &[MatchOutcome]) -> f64 {
        if matches.is_empty() {
            return 0.0;
        }
        let power = self.model.round_score_power;
        let shaped = |s: f64| {
            if power == 1.0 {
                s
            } else {
                s.max(0.0).powf(power)
            }
        };
        let mean = matches.iter().map(|m| shaped(m.score)).sum::<f64>() / matches.len() as f64;
        if power == 1.0 {
            mean
        } else {
            mean.powf(1.0 / power)
        }
    }
}

/// One server of `region` taken from `free`, if any is left.
fn take(free: &mut Supply, region: &str) -> bool {
    match free.get_mut(region) {
        Some(n) if *n > 0 => {
            *n -= 1;
            true
        }
        _ => false,
    }
}

/// The region with a free server that serves the match's players best (lowest worst
/// latency, then lowest total, then name), among those where every player's latency
/// scores above zero and the match's floor still holds; with the enemy-ping factor's
/// score there.
fn best_other_region(
    sc: &Rates,
    players: &[u32],
    m: &MatchOutcome,
    free: &Supply,
) -> Option<(usize, f64)> {
    let ping = &sc.model.ping;
    let floor = sc.floor_in_force(players);
    let mut best: Option<(f64, f64, usize, f64)> = None;
    for (r, name) in sc.ix.regions.iter().enumerate() {
        if free.get(name).is_none_or(|&n| n == 0) || m.region.as_deref() == Some(name) {
            continue;
        }
        let latencies: Vec<f64> = players
            .iter()
            .map(|&p| sc.ix.latency(p, r).map_or(ping.unknown_ms, f64::from))
            .collect();
        let worst = latencies.iter().copied().fold(0.0, f64::max);
        let sum: f64 = latencies.iter().sum();
        if worst >= ping.bad_ms {
            continue;
        }
        let factor = latencies.iter().map(|&l| ping.score(l)).sum::<f64>() / players.len() as f64;
        if let Some(step) = floor {
            if step.max_enemy_ping_ms.is_some_and(|max| worst > max) {
                continue;
            }
            if step
                .min_match_score
                .is_some_and(|min| rescored(sc, m, factor) < min)
            {
                continue;
            }
        }
        if best.is_none_or(|(w, s, _, _)| worst < w || (worst == w && sum < s)) {
            best = Some((worst, sum, r, factor));
        }
    }
    best.map(|(_, _, r, factor)| (r, factor))
}

/// The match's score with the enemy-ping factor at `factor` instead (the score is the
/// weighted mean of the factors).
fn rescored(sc: &Rates, m: &MatchOutcome, factor: f64) -> f64 {
    let w = sc.ping_weight;
    let total = sc.total_weight;
    if w == 0.0 || total == 0.0 {
        return m.score;
    }
    let old = m.factors.get("enemy_ping").copied().unwrap_or(factor);
    (m.score + w * (factor - old) / total).clamp(0.0, 1.0)
}

/// Move the match's enemy-ping factor and score to `factor`.
fn rescore_ping(sc: &Rates, m: &mut MatchOutcome, factor: f64) {
    m.score = rescored(sc, m, factor);
    if let Some(f) = m.factors.get_mut("enemy_ping") {
        *f = factor;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FloorStep;
    use crate::pool::Player;
    use crate::{Budget, SolveOptions, solve};
    use std::time::Duration;

    /// 3v3 on dedicated servers, every player's latency given for two regions.
    fn model() -> QueueModel {
        QueueModel {
            network: Network::Dedicated,
            ..QueueModel::default()
        }
    }

    fn player(id: &str, skill: f64, eu: f64, us: f64, waited_min: i64) -> Player {
        Player {
            id: id.into(),
            skill,
            latencies: [("eu".to_string(), eu), ("us".to_string(), us)].into(),
            enqueued_at: chrono::DateTime::from_timestamp(1_000_000 - waited_min * 60, 0),
            ..Player::default()
        }
    }

    fn pool(players: Vec<Player>) -> Pool {
        Pool {
            queue: Some("q".into()),
            now: chrono::DateTime::from_timestamp(1_000_000, 0),
            players,
            history: Vec::new(),
        }
    }

    fn solved(pool: &Pool, model: &QueueModel) -> RoundOutcome {
        let options = SolveOptions {
            budget: Budget::Restarts(2),
            threads: Some(1),
            ..SolveOptions::default()
        };
        solve(pool, model, &options).unwrap()
    }

    fn supply(eu: u32, us: u32) -> Supply {
        [("eu".to_string(), eu), ("us".to_string(), us)].into()
    }

    /// Twelve players near eu, far-ish from us: two eu matches.
    fn eu_players(us_ms: f64) -> Vec<Player> {
        (0..12)
            .map(|i| {
                player(
                    &format!("p{i:02}"),
                    1000.0 + 10.0 * i as f64,
                    20.0,
                    us_ms,
                    1,
                )
            })
            .collect()
    }

    #[test]
    fn no_more_matches_than_servers_and_the_rest_say_which_region_was_full() {
        let pool = pool(eu_players(400.0));
        let model = model();
        let out = solved(&pool, &model);
        assert_eq!(out.matches.len(), 2);
        let placed = place_on_servers(&pool, &model, out, &supply(1, 0)).unwrap();
        assert_eq!(placed.outcome.matches.len(), 1);
        assert_eq!(placed.unplaced, 1);
        assert_eq!(placed.outcome.unmatched.len(), 6);
        assert_eq!(placed.left_over.len(), 6);
        for l in &placed.left_over {
            assert_eq!(l.kind, LeftOverKind::NoServer);
            assert!(
                l.reason.contains("region eu: 1 ready, 2 matches"),
                "{}",
                l.reason
            );
            assert!(
                l.reason.contains("no other region had a free server"),
                "{}",
                l.reason
            );
        }
    }

    #[test]
    fn a_full_region_sends_a_match_next_door_when_pings_allow() {
        let pool = pool(eu_players(90.0));
        let model = model();
        let out = solved(&pool, &model);
        let before: Vec<f64> = out.matches.iter().map(|m| m.score).collect();
        let placed = place_on_servers(&pool, &model, out, &supply(1, 5)).unwrap();
        assert_eq!(placed.outcome.matches.len(), 2);
        assert_eq!(placed.moved, 1);
        let regions: Vec<&str> = placed
            .outcome
            .matches
            .iter()
            .map(|m| m.region.as_deref().unwrap())
            .collect();
        assert!(
            regions.contains(&"eu") && regions.contains(&"us"),
            "{regions:?}"
        );
        // the moved match pays for its ping in its score
        let moved = placed
            .outcome
            .matches
            .iter()
            .position(|m| m.region.as_deref() == Some("us"))
            .unwrap();
        assert!(placed.outcome.matches[moved].score < before[moved]);
        assert!(placed.outcome.matches[moved].factors["enemy_ping"] < 1.0);
    }

    #[test]
    fn a_region_beyond_the_ping_curve_or_the_floor_is_not_used() {
        let model_floor = QueueModel {
            floors: vec![FloorStep {
                after: Duration::ZERO,
                max_enemy_ping_ms: Some(80.0),
                ..FloorStep::default()
            }],
            ..model()
        };
        let pool = pool(eu_players(90.0));
        let out = solved(&pool, &model_floor);
        let placed = place_on_servers(&pool, &model_floor, out, &supply(1, 5)).unwrap();
        assert_eq!(placed.outcome.matches.len(), 1);
        assert!(
            placed.left_over[0]
                .reason
                .contains("within the ping limits")
        );

        let pool = crate::servers::tests::pool(eu_players(310.0));
        let model = model();
        let out = solved(&pool, &model);
        let placed = place_on_servers(&pool, &model, out, &supply(1, 5)).unwrap();
        assert_eq!(
            placed.outcome.matches.len(),
            1,
            "300 ms scores 0: never used"
        );
    }

    #[test]
    fn the_overdue_match_gets_the_last_server() {
        // Two eu matches; the one of long waiters (past max_wait) scores worse.
        let mut players: Vec<Player> = (0..6)
            .map(|i| player(&format!("a{i}"), 1000.0, 20.0, 400.0, 1))
            .collect();
        players.extend((0..6).map(|i| player(&format!("b{i}"), 1000.0, 20.0, 400.0, 30)));
        let pool = pool(players);
        let model = model();
        let mut out = solved(&pool, &model);
        let one = |prefix: &str, score: f64| MatchOutcome {
            teams: vec![
                (0..3).map(|i| format!("{prefix}{i}")).collect(),
                (3..6).map(|i| format!("{prefix}{i}")).collect(),
            ],
            score,
            factors: [("enemy_ping".to_string(), 1.0)].into(),
            roles: None,
            region: Some("eu".into()),
            hosts: None,
            host: None,
            backup_host: None,
            relay: false,
            map: None,
            map_vetoed_by: 0,
        };
        out.matches = vec![one("a", 0.9), one("b", 0.6)];
        out.unmatched.clear();
        let placed = place_on_servers(&pool, &model, out, &supply(1, 0)).unwrap();
        assert_eq!(placed.outcome.matches.len(), 1);
        assert_eq!(placed.outcome.matches[0].teams[0][0], "b0");
        assert!(
            placed
                .outcome
                .unmatched
                .iter()
                .all(|id| id.starts_with('a'))
        );
    }

    #[test]
    fn enough_servers_change_nothing() {
        let pool = pool(eu_players(90.0));
        let model = model();
        let out = solved(&pool, &model);
        let placed = place_on_servers(&pool, &model, out.clone(), &supply(2, 0)).unwrap();
        assert_eq!(placed.outcome, out);
        assert_eq!((placed.moved, placed.unplaced), (0, 0));
    }
}
