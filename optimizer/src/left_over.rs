//! Why a player was left over: what `matchmaker explain` tells an operator and a player.
//!
//! The solver returns the players it did not place (`RoundOutcome::unmatched`). For each
//! of their units (a solo or a whole party) this module looks for a valid match that
//! includes them, with the queue's own rules (`Scorer::evaluate`: team sizes, parties on
//! one team, strict roles):
//!
//! - in place of one to three units of a match the round made (the nearest matches in
//!   skill first): found, the unit was **outscored**, the round was better with that
//!   match as it was;
//! - among the other left-over players: found, a valid match existed that the search did
//!   not form within its budget (**not_found**; the objective always prefers one more
//!   match, so only the budget explains it);
//! - neither, but some of the matches tried were valid except that nobody in them could
//!   host (peer-to-peer, the Awesomenauts post's host rule, a hard rule here): **no_host**, with how
//!   many pooled players are within `hosts.max_ping_ms` of them;
//! - none at all: **no_valid_match**, with what was tried.
//!
//! Pure and bounded: at most [`MATCHES_TRIED`] matches per unit and [`EVALUATIONS`]
//! match evaluations per round, so a round with a large bench costs milliseconds.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::error::PoolError;
use super::index::IndexedPool;
use super::model::{QueueModel, RoleMode};
use super::pool::Pool;
use super::round::RoundOutcome;
use super::score::{Broken, MatchEval, Scorer};

/// Matches (nearest in mean skill first) in which a left-over unit is tried.
pub const MATCHES_TRIED: usize = 64;
/// Match evaluations for the whole round's explanation.
pub const EVALUATIONS: usize = 200_000;

/// What became of a pooled player who was not matched. The solver's own answers come
/// from [`explain_left_over`]; the commit adds the rest (it knows who left meanwhile).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeftOverKind {
    /// No valid match could include them (too few players, party shape, strict roles).
    NoValidMatch,
    /// Peer-to-peer: every match tried with them had nobody who could host it (reach
    /// everyone within `hosts.max_ping_ms`); they wait for players who can.
    NoHost,
    /// A valid match with them existed, but the round scored higher without it.
    Outscored,
    /// A valid match existed among the left-over players; the search's budget ended
    /// before it formed it.
    NotFound,
    /// Their party was incomplete in the snapshot (a member locked by a client call, or
    /// gone): the whole party sat this round out.
    PartySatOut,
    /// The queue cannot use the entry (the reason says why).
    Rejected,
    /// Their entry left the queue (cancel, expiry, matched in another queue) or was held
    /// by a client call while the solver ran: their match was dropped.
    LeftDuringSolve,
    /// A match-mate left during the solve: their match was dropped; they stay queued.
    MatchDropped,
    /// The queue's filters (`same`, crossplay) left too few players they may meet.
    Filtered,
    /// Every valid match with them broke an avoid (theirs or another player's).
    Avoided,
    /// A valid match existed but broke the quality floor in force; the reason names the
    /// limit and when it next relaxes.
    Floor,
    /// Their match was formed but no ready game server could host it (its region was
    /// full and no other region's server was within its players' pings); the reason
    /// names the region.
    NoServer,
    /// Queues with maps: every valid match tried with them had every map of the pool
    /// vetoed by one of its players.
    Vetoed,
}

impl LeftOverKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LeftOverKind::NoValidMatch => "no_valid_match",
            LeftOverKind::NoHost => "no_host",
            LeftOverKind::Outscored => "outscored",
            LeftOverKind::NotFound => "not_found",
            LeftOverKind::PartySatOut => "party_sat_out",
            LeftOverKind::Rejected => "rejected",
            LeftOverKind::LeftDuringSolve => "left_during_solve",
            LeftOverKind::MatchDropped => "match_dropped",
            LeftOverKind::Filtered => "filtered",
            LeftOverKind::Avoided => "avoided",
            LeftOverKind::Floor => "floor",
            LeftOverKind::NoServer => "no_server",
            LeftOverKind::Vetoed => "vetoed",
        }
    }
}

/// One pooled player who was not matched, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeftOver {
    pub player: String,
    pub kind: LeftOverKind,
    /// For people: what was tried or what happened.
    pub reason: String,
}

/// Explain every player of `outcome.unmatched` (the solver's left-overs of `pool`).
pub fn explain_left_over(
    pool: &Pool,
    model: &QueueModel,
    outcome: &RoundOutcome,
) -> Result<Vec<LeftOver>, PoolError> {
    if outcome.unmatched.is_empty() {
        return Ok(Vec::new());
    }
    let ix = IndexedPool::build(pool, model)?;
    if model.is_big() {
        // no split tables for a lobby of 64: the lobby path says why
        return Ok(crate::lobby::explain_left_over(&ix, model, outcome));
    }
    let sc = Scorer::new(&ix, model);
    let index: HashMap<&str, u32> = ix
        .ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i as u32))
        .collect();
    let round = Round {
        model,
        ix: &ix,
        sc: &sc,
        matches: matches_as_units(&ix, &index, outcome),
        bench: bench_units(&ix, &index, outcome),
    };
    let mut evaluations = 0usize;
    let mut out = Vec::new();
    for &u in &round.bench {
        let unit = &ix.units[u as usize];
        let (kind, mut reason) = round.explain_unit(u, &mut evaluations);
        if unit.members.iter().any(|&p| ix.overdue[p as usize]) {
            reason.push_str(" (waited past max_wait)");
        }
        for &p in &unit.members {
            out.push(LeftOver {
                player: ix.ids[p as usize].clone(),
                kind,
                reason: reason.clone(),
            });
        }
    }
    Ok(out)
}

/// The round's matches as units, with their mean skill and score.
fn matches_as_units(
    ix: &IndexedPool,
    index: &HashMap<&str, u32>,
    outcome: &RoundOutcome,
) -> Vec<(Vec<u32>, f64, f64)> {
    let unit_of = |id: &str| index.get(id).map(|&p| ix.unit_of[p as usize]);
    outcome
        .matches
        .iter()
        .filter_map(|m| {
            let mut units: Vec<u32> = Vec::new();
            for id in m.teams.iter().flatten() {
                let u = unit_of(id)?;
                if !units.contains(&u) {
                    units.push(u);
                }
            }
            let players: Vec<u32> = m
                .teams
                .iter()
                .flatten()
                .filter_map(|id| index.get(id.as_str()).copied())
                .collect();
            let mean = players.iter().map(|&p| ix.skill[p as usize]).sum::<f64>()
                / players.len().max(1) as f64;
            Some((units, mean, m.score))
        })
        .collect()
}

/// The units of the left-over players, in the order first named.
fn bench_units(ix: &IndexedPool, index: &HashMap<&str, u32>, outcome: &RoundOutcome) -> Vec<u32> {
    let mut bench: Vec<u32> = Vec::new();
    for id in &outcome.unmatched {
        if let Some(u) = index.get(id.as_str()).map(|&p| ix.unit_of[p as usize])
            && !bench.contains(&u)
        {
            bench.push(u);
        }
    }
    bench
}

/// What the explanation of one round reads.
struct Round<'a> {
    model: &'a QueueModel,
    ix: &'a IndexedPool,
    sc: &'a Scorer<'a>,
    /// The round's matches: units, mean skill, score.
    matches: Vec<(Vec<u32>, f64, f64)>,
    /// The left-over units.
    bench: Vec<u32>,
}

impl Round<'_> {
    /// Why unit `u` was left over: the first answer that holds, in the order of the
    /// module's list (the searches share the round's `evaluations`).
    fn explain_unit(&self, u: u32, evaluations: &mut usize) -> (LeftOverKind, String) {
        let (ix, model) = (self.ix, self.model);
        let per_match = model.players_per_match();
        let unit = &ix.units[u as usize];
        let size = unit.size();
        // the hard rules the matches tried broke
        let mut seen = Seen::default();
        let meets = may_meet_count(ix, u);
        if ix.ids.len() < model.min_players_per_match() {
            return (LeftOverKind::NoValidMatch, self.too_few_players());
        }
        if ix.ids.len() < per_match {
            return (LeftOverKind::NoValidMatch, self.too_few_for_full_match());
        }
        if let Some((count, what)) = meets.clone().filter(|(count, _)| count + size < per_match) {
            return (
                LeftOverKind::Filtered,
                format!(
                    "the queue's filters let them meet {count} other player{} ({what}), fewer than a match needs ({per_match})",
                    if count == 1 { "" } else { "s" }
                ),
            );
        }
        if let Some((swapped, m, score)) = in_place_of(
            self.sc,
            &self.matches,
            u,
            unit.skill,
            evaluations,
            &mut seen,
        ) {
            return (LeftOverKind::Outscored, self.outscored(&swapped, m, score));
        }
        if among_left_over(self.sc, &self.bench, u, per_match, evaluations, &mut seen) {
            return (
                LeftOverKind::NotFound,
                "a valid match among the left-over players existed; the search's budget ended before it formed it"
                    .to_string(),
            );
        }
        if let Some((candidate, eval)) = &seen.floor {
            return (LeftOverKind::Floor, floor_reason(self.sc, candidate, eval));
        }
        if seen.no_host {
            return (LeftOverKind::NoHost, self.no_host(u));
        }
        if seen.avoid {
            return (
                LeftOverKind::Avoided,
                "every valid match tried with them broke an avoid (theirs or another player's)"
                    .to_string(),
            );
        }
        if seen.veto {
            return (LeftOverKind::Vetoed, self.vetoed(u));
        }
        if seen.filter {
            return (
                LeftOverKind::Filtered,
                format!(
                    "every match tried with them broke the queue's filters ({})",
                    meets.map_or_else(|| "same, crossplay".to_string(), |m| m.1)
                ),
            );
        }
        (LeftOverKind::NoValidMatch, self.breaks_rules(size))
    }

    /// A unit for people: the player, or the first member and the party's size.
    fn name(&self, u: u32) -> String {
        let members = &self.ix.units[u as usize].members;
        let first = &self.ix.ids[members[0] as usize];
        if members.len() == 1 {
            first.clone()
        } else {
            format!("{first} (party of {})", members.len())
        }
    }

    /// The maps this unit's players veto, and what that leaves.
    fn vetoed(&self, u: u32) -> String {
        let maps = &self.ix.maps;
        let members = &self.ix.units[u as usize].members;
        let own = maps.open(members);
        let names = |bits: u64| {
            (0..maps.names.len())
                .filter(|&m| bits & (1 << m) != 0)
                .map(|m| maps.names[m].as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let vetoed = maps.all & !own;
        let relax = self
            .model
            .floors
            .iter()
            .find(|s| s.relax_vetoes)
            .map_or(String::new(), |s| {
                format!(
                    "; vetoes relax after {} of wait",
                    short_duration(s.after.as_secs_f64() / 60.0)
                )
            });
        format!(
            "every valid match tried with them left no map that none of its players vetoed (they veto {}; the others' vetoes covered {}){relax}",
            if vetoed == 0 {
                "none".to_string()
            } else {
                names(vetoed)
            },
            if own == 0 {
                "nothing else".to_string()
            } else {
                names(own)
            },
        )
    }

    fn too_few_players(&self) -> String {
        format!(
            "the pool had {} players, fewer than one match ({})",
            self.ix.ids.len(),
            self.model.min_players_per_match()
        )
    }

    /// Flexible queue: only the smaller formats were possible, and the short-match
    /// pass formed those that reached the minimum score, without this unit.
    fn too_few_for_full_match(&self) -> String {
        let model = self.model;
        format!(
            "the pool had {} players, fewer than a full match ({}); the smaller formats ({}) formed only matches scoring at least alliance.short_match_min_score ({}), and none with them",
            self.ix.ids.len(),
            model.players_per_match(),
            model.formats()[1..]
                .iter()
                .map(|f| super::model::format_label(f))
                .collect::<Vec<_>>()
                .join(", "),
            model.alliance.short_match_min_score
        )
    }

    /// In place of `swapped` in match `m`, the unit made a valid match scoring `score`.
    fn outscored(&self, swapped: &[u32], m: usize, score: f64) -> String {
        let out: Vec<String> = swapped.iter().map(|&v| self.name(v)).collect();
        // the match, named by a player who stays in it
        let stays = self.matches[m]
            .0
            .iter()
            .find(|v| !swapped.contains(v))
            .map_or_else(String::new, |&v| {
                format!(" in the match of {}", self.name(v))
            });
        format!(
            "a valid match with them existed (in place of {}{stays}), scoring {score:.3} against that match's {:.3}; the round scored higher without it",
            out.join(", "),
            self.matches[m].2
        )
    }

    /// Nobody could host: how many pooled players are within reach of the unit.
    fn no_host(&self, u: u32) -> String {
        let (ix, model) = (self.ix, self.model);
        let unit = &ix.units[u as usize];
        let size = unit.size();
        let limit = model.hosts.max_ping_ms;
        let p = &model.ping;
        // the member with the most players in reach speaks for the party
        let reach = unit
            .members
            .iter()
            .map(|&a| {
                (0..ix.ids.len() as u32)
                    .filter(|&b| {
                        b != a && ix.ping_ms(a, b, p.relay_overhead_ms, p.unknown_ms) <= limit
                    })
                    .count()
            })
            .max()
            .unwrap_or(0);
        let (tried, others) = (self.matches.len().min(MATCHES_TRIED), ix.ids.len() - 1);
        format!(
            "nobody could host a match with {}: in every valid match tried (in place of players of the {tried} nearest match{}, or with the other left-over players) no player reaches everyone within hosts.max_ping_ms ({limit} ms); {reach} of the {others} other player{} in the pool {} within {limit} ms of them",
            if size == 1 {
                "them".to_string()
            } else {
                format!("the party of {size}")
            },
            if tried == 1 { "" } else { "es" },
            if others == 1 { "" } else { "s" },
            if reach == 1 { "is" } else { "are" },
        ) + &relay_note(self.sc, unit)
    }

    /// Every match tried broke the queue's own rules.
    fn breaks_rules(&self, size: usize) -> String {
        let model = self.model;
        let tried = self.matches.len().min(MATCHES_TRIED);
        let mut rules = vec!["team sizes", "parties on one team"];
        if !model.roles.is_empty() && model.role_mode == RoleMode::Strict {
            rules.push("strict roles");
        }
        format!(
            "{} in place of players of the {tried} nearest match{}, or with the other left-over players, breaks the queue's rules ({})",
            if size == 1 {
                "the player".to_string()
            } else {
                format!("the party of {size}")
            },
            if tried == 1 { "" } else { "es" },
            rules.join(", ")
        )
    }
}

/// A match of the round in which unit `u` takes the place of one to three of its units
/// of the same total size and the match stays valid: (the units replaced, the match's
/// index, the new match's score).
fn in_place_of(
    sc: &Scorer,
    matches: &[(Vec<u32>, f64, f64)],
    u: u32,
    skill: f64,
    evaluations: &mut usize,
    seen: &mut Seen,
) -> Option<(Vec<u32>, usize, f64)> {
    let size = sc.ix.units[u as usize].size();
    let mut order: Vec<usize> = (0..matches.len()).collect();
    order.sort_by(|&a, &b| {
        (matches[a].1 - skill)
            .abs()
            .total_cmp(&(matches[b].1 - skill).abs())
            .then(a.cmp(&b))
    });
    let unit_size = |v: u32| sc.ix.units[v as usize].size();
    for &m in order.iter().take(MATCHES_TRIED) {
        let units = &matches[m].0;
        let k = units.len();
        let mut subsets: Vec<Vec<usize>> = Vec::new();
        for a in 0..k {
            subsets.push(vec![a]);
            for b in a + 1..k {
                subsets.push(vec![a, b]);
                for c in b + 1..k {
                    subsets.push(vec![a, b, c]);
                }
            }
        }
        for subset in subsets {
            if subset.iter().map(|&i| unit_size(units[i])).sum::<usize>() != size {
                continue;
            }
            if *evaluations >= EVALUATIONS {
                return None;
            }
            *evaluations += 1;
            let mut candidate: Vec<u32> = units
                .iter()
                .enumerate()
                .filter(|(i, _)| !subset.contains(i))
                .map(|(_, &v)| v)
                .collect();
            candidate.push(u);
            let eval = sc.evaluate(&candidate);
            if eval.valid() {
                return Some((subset.iter().map(|&i| units[i]).collect(), m, eval.score));
            }
            seen.note(&candidate, &eval);
        }
    }
    None
}

/// Whether `u` and other left-over units form a valid match with a host: filled greedily with the
/// units nearest in skill, then with each other left-over unit as the last one.
fn among_left_over(
    sc: &Scorer,
    bench: &[u32],
    u: u32,
    per_match: usize,
    evaluations: &mut usize,
    seen: &mut Seen,
) -> bool {
    let units = &sc.ix.units;
    let skill = units[u as usize].skill;
    // only the players the filters let them meet
    let mut others: Vec<u32> = bench
        .iter()
        .copied()
        .filter(|&v| v != u && may_meet(sc.ix, u, v))
        .collect();
    others.sort_by(|&a, &b| {
        (units[a as usize].skill - skill)
            .abs()
            .total_cmp(&(units[b as usize].skill - skill).abs())
            .then(a.cmp(&b))
    });
    // skip each of the nearest few in turn: a party that does not fit the split may
    // block the greedy fill
    for skip in 0..=others.len().min(8) {
        if *evaluations >= EVALUATIONS {
            return false;
        }
        let mut candidate = vec![u];
        let mut total = units[u as usize].size();
        for (i, &v) in others.iter().enumerate() {
            if i + 1 == skip {
                continue;
            }
            let s = units[v as usize].size();
            if total + s <= per_match {
                candidate.push(v);
                total += s;
            }
            if total == per_match {
                break;
            }
        }
        if total < per_match {
            return false;
        }
        *evaluations += 1;
        let eval = sc.evaluate(&candidate);
        if eval.valid() {
            return true;
        }
        seen.note(&candidate, &eval);
    }
    false
}

/// The hard rules the feasible matches tried for a unit broke.
#[derive(Default)]
struct Seen {
    no_host: bool,
    avoid: bool,
    filter: bool,
    veto: bool,
    /// The first match tried that broke only the floor in force.
    floor: Option<(Vec<u32>, MatchEval)>,
}

impl Seen {
    fn note(&mut self, candidate: &[u32], eval: &MatchEval) {
        if !eval.feasible {
            return;
        }
        match eval.broken {
            Broken::NoHost => self.no_host = true,
            Broken::Avoid => self.avoid = true,
            Broken::Filter => self.filter = true,
            Broken::Veto => self.veto = true,
            Broken::Floor if self.floor.is_none() => {
                self.floor = Some((candidate.to_vec(), *eval));
            }
            _ => {}
        }
    }
}

/// Whether the filters (`same`, crossplay) let the players of units a and b meet.
fn may_meet(ix: &IndexedPool, a: u32, b: u32) -> bool {
    let m = &ix.meet;
    let (pa, pb) = (
        ix.units[a as usize].members[0],
        ix.units[b as usize].members[0],
    );
    if !m.same_key.is_empty() && m.same_key[pa as usize] != m.same_key[pb as usize] {
        return false;
    }
    if !m.platform.is_empty() {
        let off = |u: u32| {
            ix.units[u as usize]
                .members
                .iter()
                .any(|&p| m.crossplay_off[p as usize])
        };
        let platforms = |u: u32| -> Vec<u32> {
            ix.units[u as usize]
                .members
                .iter()
                .map(|&p| m.platform[p as usize])
                .collect()
        };
        let (xa, xb) = (platforms(a), platforms(b));
        let one = |x: &[u32], y: &[u32]| x.iter().chain(y).all(|&p| p == x[0]);
        if (off(a) || off(b)) && !one(&xa, &xb) {
            return false;
        }
    }
    true
}

/// With filters in the pool: (other players the filters let unit u meet, the values
/// that decided it), for the `filtered` reason.
fn may_meet_count(ix: &IndexedPool, u: u32) -> Option<(usize, String)> {
    let m = &ix.meet;
    if m.same_key.is_empty() && m.platform.is_empty() {
        return None;
    }
    let first = ix.units[u as usize].members[0] as usize;
    let mut what = Vec::new();
    if !m.same_key.is_empty() {
        what.push(m.same_names[m.same_key[first] as usize].clone());
    }
    if !m.platform.is_empty()
        && ix.units[u as usize]
            .members
            .iter()
            .any(|&p| m.crossplay_off[p as usize])
    {
        what.push(format!(
            "crossplay off on {}",
            m.platform_names[m.platform[first] as usize]
        ));
    }
    let count = (0..ix.units.len() as u32)
        .filter(|&v| v != u && may_meet(ix, u, v))
        .map(|v| ix.units[v as usize].size())
        .sum();
    Some((
        count,
        if what.is_empty() {
            "filters".into()
        } else {
            what.join(", ")
        },
    ))
}

/// `m` minutes and seconds as a short duration: "2m", "45s", "1m30s".
fn short_duration(minutes: f64) -> String {
    let secs = (minutes * 60.0).round().max(0.0) as u64;
    match (secs / 60, secs % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

/// The `floor` reason of a match that broke only the floor in force: the limit, the
/// match's value, and when that limit next relaxes.
fn floor_reason(sc: &Scorer, units: &[u32], eval: &MatchEval) -> String {
    let ix = sc.ix;
    let detail = sc.describe(units, eval);
    let mut players = Vec::new();
    let mut team = Vec::new();
    for (t, members) in detail.teams.iter().enumerate() {
        for &p in members {
            players.push(p);
            team.push(t as u8);
        }
    }
    let wait = players
        .iter()
        .map(|&p| ix.wait_minutes[p as usize])
        .fold(0.0, f64::max);
    let Some(step) = sc.floor_in_force(&players) else {
        return "the best match tried broke the quality floor".into();
    };
    let Some((key, value)) = sc.floor_breaks(step, &players, &team, eval.score) else {
        return "the best match tried broke the quality floor".into();
    };
    let (label, limit, unit) = match key {
        "max_team_gap" => ("team gap", step.max_team_gap, ""),
        "max_enemy_ping_ms" => ("enemy ping", step.max_enemy_ping_ms, " ms"),
        _ => ("match score", step.min_match_score, ""),
    };
    let limit = limit.unwrap_or(0.0);
    let fmt = |v: f64| {
        if key == "min_match_score" {
            format!("{v:.2}")
        } else {
            format!("{v:.0}")
        }
    };
    let relation = if key == "min_match_score" { "<" } else { ">" };
    // the next step that relaxes this limit
    let next = sc.model.floors.iter().find(|s| {
        s.after.as_secs_f64() / 60.0 > wait
            && match key {
                "max_team_gap" => s.max_team_gap.is_none_or(|v| v > limit),
                "max_enemy_ping_ms" => s.max_enemy_ping_ms.is_none_or(|v| v > limit),
                _ => s.min_match_score.is_none_or(|v| v < limit),
            }
    });
    let when = match next {
        Some(s) => {
            let after = s.after.as_secs_f64() / 60.0;
            format!(
                " until {} of wait (in {})",
                short_duration(after),
                short_duration(after - wait)
            )
        }
        None => " (the last step: it does not relax further)".to_string(),
    };
    format!(
        "the best match tried broke the floor in force: {label} {}{unit} {relation} {}{unit}{when}",
        fmt(value),
        fmt(limit)
    )
}

/// The `no_host` reason's word on relay: when a relay step applies, or that none is
/// configured.
fn relay_note(sc: &Scorer, unit: &crate::index::Unit) -> String {
    let wait = unit
        .members
        .iter()
        .map(|&p| sc.ix.wait_minutes[p as usize])
        .fold(0.0, f64::max);
    match sc.model.floors.iter().find(|s| s.relay) {
        None => "; no relay configured".to_string(),
        Some(s) => {
            let after = s.after.as_secs_f64() / 60.0;
            if after > wait {
                format!(
                    "; a relay step applies from {} of wait (in {})",
                    short_duration(after),
                    short_duration(after - wait)
                )
            } else {
                "; a relay step is in force: the next round may relay their match".to_string()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Player, SolveOptions, solve};

    fn player(id: &str, skill: f64, roles: &[&str]) -> Player {
        Player {
            id: id.into(),
            party: None,
            skill,
            skill_sigma: None,
            enqueued_at: None,
            latencies: [("eu".to_string(), 20.0)].into_iter().collect(),
            peer_pings: Default::default(),
            roles: roles.iter().map(|r| r.to_string()).collect(),
            side: None,
            ..Default::default()
        }
    }

    fn explain(pool: &Pool, model: &QueueModel) -> Vec<LeftOver> {
        let outcome = solve(
            pool,
            model,
            &SolveOptions {
                budget: crate::Budget::Restarts(2),
                threads: Some(1),
                ..SolveOptions::default()
            },
        )
        .unwrap();
        explain_left_over(pool, model, &outcome).unwrap()
    }

    #[test]
    fn a_seventh_solo_is_outscored_and_a_short_pool_has_no_match() {
        let model = QueueModel::default();
        let players: Vec<Player> = (0..7)
            .map(|i| player(&format!("p{i}"), 1000.0 + 10.0 * i as f64, &[]))
            .collect();
        let pool = Pool {
            players: players.clone(),
            ..Pool::default()
        };
        let left = explain(&pool, &model);
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(left[0].kind, LeftOverKind::Outscored, "{left:?}");
        assert!(left[0].reason.contains("in place of"), "{left:?}");

        let short = Pool {
            players: players[..4].to_vec(),
            ..Pool::default()
        };
        let left = explain(&short, &model);
        assert_eq!(left.len(), 4);
        assert!(left.iter().all(|l| l.kind == LeftOverKind::NoValidMatch));
        assert!(left[0].reason.contains("fewer than one match"), "{left:?}");
    }

    #[test]
    fn parties_that_cannot_split_into_teams_have_no_valid_match() {
        // three parties of two in a 3v3 queue: six players, but 2 + 2 + 2 has no 3 + 3
        let model = QueueModel::default();
        let players: Vec<Player> = (0..6)
            .map(|i| Player {
                party: Some(format!("duo{}", i / 2)),
                ..player(&format!("p{i}"), 1000.0, &[])
            })
            .collect();
        let pool = Pool {
            players,
            ..Pool::default()
        };
        let left = explain(&pool, &model);
        assert_eq!(left.len(), 6, "{left:?}");
        assert!(
            left.iter().all(|l| l.kind == LeftOverKind::NoValidMatch),
            "{left:?}"
        );
        assert!(left[0].reason.contains("the party of 2"), "{left:?}");
    }

    #[test]
    fn a_player_nobody_can_host_is_told_who_reaches_them_in_agreeing_words() {
        // Six players close to each other make a match; x and y reach only each other
        // (30 ms), everyone else through eu at 220 ms, past hosts.max_ping_ms (150).
        let model = QueueModel::default();
        let mut players: Vec<Player> = (0..6)
            .map(|i| player(&format!("c{i}"), 1000.0 + i as f64, &[]))
            .collect();
        for (id, other) in [("x", "y"), ("y", "x")] {
            players.push(Player {
                latencies: [("eu".to_string(), 200.0)].into_iter().collect(),
                peer_pings: [(other.to_string(), 30.0)].into_iter().collect(),
                ..player(id, 1000.0, &[])
            });
        }
        let left = explain(
            &Pool {
                players,
                ..Pool::default()
            },
            &model,
        );
        let x = left.iter().find(|l| l.player == "x").expect("x left over");
        assert_eq!(x.kind, LeftOverKind::NoHost, "{left:?}");
        assert!(
            x.reason.contains("players of the 1 nearest match, or")
                && x.reason
                    .ends_with("1 of the 7 other players in the pool is within 150 ms of them; no relay configured"),
            "{}",
            x.reason
        );
    }
}
