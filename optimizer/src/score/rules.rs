//! The hard rules a match must keep besides its shape: who may meet whom (the queue's
//! `same` filter and crossplay, players' avoids: `index::Meet`), someone to host it
//! (peer-to-peer) and the quality floor in force for its longest-waiting player
//! (`[[queues.NAME.floors]]`, FlexMatch's expansions: the limits relax with wait).
//!
//! A match that breaks one is worth nothing to the round's objective, as a hostless
//! match is (`MatchEval::allowed`). The check runs once per evaluated match, on its
//! best split: a few compares per player when the pool has such rules, one branch
//! when it has none (the common case, and the search's hot path).

use super::*;
use crate::model::{AvoidScope, FloorStep};

/// What a relay match gives up in the objective's quality term: more than any match
/// adds there (a match score is at most 1), so that among rounds placing the same
/// players in as many matches, the one with fewer relay matches wins; a relay match
/// still counts as a match, so it is formed when nothing hosted can take its players.
pub const RELAY_PENALTY: f64 = 2.0;

/// The first hard rule a feasible match breaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Broken {
    #[default]
    None,
    /// Two players whose `same` filter values differ, or a crossplay opt-out with a
    /// player of another platform.
    Filter,
    /// Two players one of whom avoids the other (in the queue's avoid scope).
    Avoid,
    /// Peer-to-peer: nobody in the match can host it, and no relay step is in force.
    NoHost,
    /// The floor in force for its longest-waiting player.
    Floor,
    /// Queues with maps: every map of the pool is vetoed by one of its players, and no
    /// floor step with `relax_vetoes` is in force.
    Veto,
}

/// One floor step with its wait in minutes (the index's unit).
#[derive(Debug, Clone)]
struct Step {
    after_min: f64,
    step: FloorStep,
}

/// A scorer's precomputed rules.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Meeting rules present in the pool (filters with more than one value, an
    /// opt-out, an avoid).
    meet: bool,
    team_scope: bool,
    steps: Vec<Step>,
    /// Some step can relax the host rule.
    any_relay: bool,
    /// Some step limits the enemy ping or the team gap (split-dependent limits).
    split_limits: bool,
    /// Some player of the pool vetoes a map.
    vetoes: bool,
}

impl Rules {
    pub fn new(ix: &IndexedPool, model: &QueueModel) -> Rules {
        let steps: Vec<Step> = model
            .floors
            .iter()
            .map(|s| Step {
                after_min: s.after.as_secs_f64() / 60.0,
                step: s.clone(),
            })
            .collect();
        Rules {
            meet: ix.meet.any(),
            team_scope: model.avoids.scope == AvoidScope::Team,
            any_relay: model.network == Network::PeerToPeer && steps.iter().any(|s| s.step.relay),
            split_limits: steps
                .iter()
                .any(|s| s.step.max_team_gap.is_some() || s.step.max_enemy_ping_ms.is_some()),
            vetoes: ix.maps.any_veto,
            steps,
        }
    }

    /// Some rule beyond the host rule applies to this pool.
    #[inline(always)]
    pub fn active(&self) -> bool {
        self.meet || self.vetoes || !self.steps.is_empty()
    }

    /// Whether another split of the same players may keep the rule this one broke.
    #[inline(always)]
    pub fn split_dependent(&self, broken: Broken) -> bool {
        match broken {
            Broken::Avoid => self.team_scope,
            Broken::Floor => self.split_limits,
            _ => false,
        }
    }
}

impl Scorer<'_> {
    /// The host rule alone: (broken, relay) for a match with `hosts` possible hosts.
    #[inline(always)]
    pub(crate) fn judge_hosts(&self, hosts: u32) -> (Broken, bool) {
        if self.p2p && hosts == 0 {
            (Broken::NoHost, false)
        } else {
            (Broken::None, false)
        }
    }

    /// The floor step in force for a match of these players: the last step whose
    /// `after` its longest-waiting player has waited.
    pub fn floor_in_force(&self, players: &[u32]) -> Option<&FloorStep> {
        let steps = &self.rules.steps;
        if steps.is_empty() {
            return None;
        }
        let wait = players
            .iter()
            .map(|&p| self.ix.wait_minutes[p as usize])
            .fold(0.0, f64::max);
        steps
            .iter()
            .rev()
            .find(|s| wait >= s.after_min)
            .map(|s| &s.step)
    }

    /// Judge a feasible match: its players (slot order), each slot's team under the
    /// split, its possible hosts and its score. (first rule broken, formed by relay).
    #[inline(always)]
    pub(crate) fn judge(
        &self,
        hosts: u32,
        players: &[u32],
        team: &[u8],
        score: f64,
    ) -> (Broken, bool) {
        if !self.rules.active() {
            return self.judge_hosts(hosts);
        }
        self.judge_rules(hosts, players, team, score)
    }

    #[inline(never)]
    fn judge_rules(&self, hosts: u32, players: &[u32], team: &[u8], score: f64) -> (Broken, bool) {
        if self.rules.meet {
            let b = self.meet_rule(players, team);
            if b != Broken::None {
                return (b, false);
            }
        }
        let step = self.floor_in_force(players);
        if self.rules.vetoes
            && self.ix.maps.open(players) == 0
            && !step.is_some_and(|s| s.relax_vetoes)
        {
            return (Broken::Veto, false);
        }
        let mut relay = false;
        if self.p2p && hosts == 0 {
            if self.rules.any_relay && step.is_some_and(|s| s.relay) {
                relay = true;
            } else {
                return (Broken::NoHost, false);
            }
        }
        if let Some(step) = step
            && self.floor_breaks(step, players, team, score).is_some()
        {
            return (Broken::Floor, false);
        }
        (Broken::None, relay)
    }

    /// The `same` filter, crossplay and avoids over a match's players.
    fn meet_rule(&self, players: &[u32], team: &[u8]) -> Broken {
        let m = &self.ix.meet;
        if !m.same_key.is_empty() {
            let k = m.same_key[players[0] as usize];
            if players.iter().any(|&p| m.same_key[p as usize] != k) {
                return Broken::Filter;
            }
        }
        if !m.platform.is_empty() {
            // an opt-out fixes the match's platform
            let mut need = None;
            for &p in players {
                if m.crossplay_off[p as usize] {
                    let pf = m.platform[p as usize];
                    if need.is_some_and(|n| n != pf) {
                        return Broken::Filter;
                    }
                    need = Some(pf);
                }
            }
            if let Some(pf) = need
                && players.iter().any(|&p| m.platform[p as usize] != pf)
            {
                return Broken::Filter;
            }
        }
        if !m.avoids.is_empty() {
            for (i, &a) in players.iter().enumerate() {
                if m.avoids[a as usize].is_empty() {
                    continue;
                }
                for (j, &b) in players.iter().enumerate().skip(i + 1) {
                    if (!self.rules.team_scope || team[i] == team[j]) && m.avoid(a, b) {
                        return Broken::Avoid;
                    }
                }
            }
        }
        Broken::None
    }

    /// The first limit of `step` the match breaks: (limit key, the match's value).
    pub fn floor_breaks(
        &self,
        step: &FloorStep,
        players: &[u32],
        team: &[u8],
        score: f64,
    ) -> Option<(&'static str, f64)> {
        if let Some(min) = step.min_match_score
            && score < min
        {
            return Some(("min_match_score", score));
        }
        if let Some(max) = step.max_team_gap {
            let gap = self.team_gap(players, team);
            if gap > max {
                return Some(("max_team_gap", gap));
            }
        }
        if let Some(max) = step.max_enemy_ping_ms {
            let ping = self.enemy_ping_ms(players, team);
            if ping > max {
                return Some(("max_enemy_ping_ms", ping));
            }
        }
        None
    }

    /// Largest difference between team mean skills (capped skills).
    pub fn team_gap(&self, players: &[u32], team: &[u8]) -> f64 {
        let mut sum = [0.0f64; MAXP];
        let mut count = [0u32; MAXP];
        for (&p, &t) in players.iter().zip(team) {
            sum[t as usize] += self.ix.skill[p as usize];
            count[t as usize] += 1;
        }
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for t in 0..self.tables.teams {
            if count[t] > 0 {
                let mean = sum[t] / count[t] as f64;
                lo = lo.min(mean);
                hi = hi.max(mean);
            }
        }
        if hi < lo { 0.0 } else { hi - lo }
    }

    /// The enemy-ping factor's ping: peer-to-peer, the largest ping between players on
    /// different teams; dedicated, the worst latency to the match's region.
    pub fn enemy_ping_ms(&self, players: &[u32], team: &[u8]) -> f64 {
        let p = &self.model.ping;
        if self.p2p {
            let mut worst = 0.0f64;
            for i in 0..players.len() {
                for j in i + 1..players.len() {
                    if team[i] != team[j] {
                        worst = worst.max(self.ix.ping_ms(
                            players[i],
                            players[j],
                            p.relay_overhead_ms,
                            p.unknown_ms,
                        ));
                    }
                }
            }
            worst
        } else {
            let (region, _) = enemy_ping::choose_region(self.ix, players, p);
            match region {
                None => p.unknown_ms,
                Some(r) => players
                    .iter()
                    .map(|&q| self.ix.latency(q, r).map_or(p.unknown_ms, |v| v as f64))
                    .fold(0.0, f64::max),
            }
        }
    }

    /// Whether the last of a growing match's units may meet the others as far as
    /// the pairwise rules go (filters, match-scope avoids): the constructions prune
    /// with it. Always true when the pool has no such rule.
    pub fn last_may_meet(&self, units: &[u32]) -> bool {
        let Some((&last, others)) = units.split_last() else {
            return true;
        };
        if !self.rules.meet || others.is_empty() {
            return true;
        }
        let mut players: Vec<u32> = self.ix.members_of(last).to_vec();
        let own = players.len();
        for &u in others {
            players.extend_from_slice(self.ix.members_of(u));
        }
        // a team-scope avoid is left to the split
        let m = &self.ix.meet;
        let pair_ok = |a: u32, b: u32| {
            if !m.same_key.is_empty() && m.same_key[a as usize] != m.same_key[b as usize] {
                return false;
            }
            if !m.platform.is_empty()
                && (m.crossplay_off[a as usize] || m.crossplay_off[b as usize])
                && m.platform[a as usize] != m.platform[b as usize]
            {
                return false;
            }
            self.rules.team_scope || !m.avoid(a, b)
        };
        players[..own]
            .iter()
            .all(|&a| players[own..].iter().all(|&b| pair_ok(a, b)))
    }

    /// The units of a match's players, in their order.
    pub(crate) fn units_of(&self, players: &[u32]) -> Vec<u32> {
        let mut units: Vec<u32> = Vec::with_capacity(players.len());
        for &p in players {
            let u = self.ix.unit_of[p as usize];
            if !units.contains(&u) {
                units.push(u);
            }
        }
        units
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::{TimeZone, Utc};

    use crate::model::{AvoidScope, FloorStep, Network, QueueModel};
    use crate::pool::{Attribute, Player, Pool};
    use crate::{Budget, LeftOverKind, RoundOutcome, SolveOptions, explain_left_over, solve};

    fn player(id: &str, skill: f64) -> Player {
        Player {
            id: id.into(),
            skill,
            latencies: [("eu".to_string(), 20.0)].into_iter().collect(),
            ..Default::default()
        }
    }

    fn with(mut p: Player, attr: &str, value: &str) -> Player {
        p.attributes
            .insert(attr.into(), Attribute::One(value.into()));
        p
    }

    fn options() -> SolveOptions {
        SolveOptions {
            budget: Budget::Restarts(4),
            moves_per_restart: Some(5_000),
            threads: Some(1),
            check_delta: true,
            ..SolveOptions::default()
        }
    }

    fn run(players: Vec<Player>, model: &QueueModel) -> (RoundOutcome, Pool) {
        let pool = Pool {
            players,
            ..Pool::default()
        };
        (solve(&pool, model, &options()).unwrap(), pool)
    }

    fn find<'a>(pool: &'a Pool, id: &str) -> &'a Player {
        pool.players.iter().find(|p| p.id == id).unwrap()
    }

    #[test]
    fn two_builds_never_share_a_match() {
        let mut model = QueueModel::default();
        model.filters.same = vec!["build".into()];
        // skills interleaved, so that the best matches without the filter mix builds
        let players: Vec<Player> = (0..12)
            .map(|i| {
                let build = if i % 2 == 0 { "1.0" } else { "1.1" };
                with(
                    player(&format!("p{i:02}"), 1500.0 + i as f64 * 10.0),
                    "build",
                    build,
                )
            })
            .collect();
        let (out, pool) = run(players, &model);
        assert_eq!(out.matches.len(), 2);
        for m in &out.matches {
            let builds: std::collections::BTreeSet<Vec<String>> = m
                .teams
                .iter()
                .flatten()
                .map(|id| find(&pool, id).attributes["build"].values().to_vec())
                .collect();
            assert_eq!(builds.len(), 1, "{m:?}");
        }
        // five of one build: too few for a match, said so
        let players: Vec<Player> = (0..11)
            .map(|i| {
                let build = if i < 6 { "1.0" } else { "1.1" };
                with(player(&format!("p{i:02}"), 1500.0), "build", build)
            })
            .collect();
        let (out, pool) = run(players, &model);
        assert_eq!(out.matches.len(), 1);
        let why = explain_left_over(&pool, &model, &out).unwrap();
        assert_eq!(why.len(), 5);
        for w in &why {
            assert_eq!(w.kind, LeftOverKind::Filtered, "{w:?}");
            assert!(w.reason.contains("build = 1.1"), "{}", w.reason);
        }
    }

    #[test]
    fn a_party_mixing_builds_is_rejected() {
        let mut model = QueueModel::default();
        model.filters.same = vec!["build".into()];
        let mut players: Vec<Player> = (0..6)
            .map(|i| with(player(&format!("p{i}"), 1500.0), "build", "1.0"))
            .collect();
        players[0].party = Some("x".into());
        players[1].party = Some("x".into());
        players[1]
            .attributes
            .insert("build".into(), Attribute::One("0.9".into()));
        let (out, _) = run(players, &model);
        assert_eq!(out.rejected.len(), 2);
        assert!(
            out.rejected[0].reason.contains("mixes build"),
            "{:?}",
            out.rejected
        );
    }

    #[test]
    fn crossplay_opt_outs_meet_only_their_platform() {
        let mut model = QueueModel::default();
        model.filters.crossplay = Some("platform".into());
        let mut players = Vec::new();
        for i in 0..12 {
            let platform = if i < 6 { "pc" } else { "console" };
            let mut p = with(
                player(&format!("p{i:02}"), 1500.0 + (i * 37 % 12) as f64),
                "platform",
                platform,
            );
            if i % 3 == 0 {
                p = with(p, "crossplay", "off");
            }
            players.push(p);
        }
        let (out, pool) = run(players, &model);
        assert_eq!(out.matches.len(), 2);
        for m in &out.matches {
            let ids: Vec<&String> = m.teams.iter().flatten().collect();
            for a in &ids {
                let pa = find(&pool, a);
                if pa.attributes.contains_key("crossplay") {
                    for b in &ids {
                        assert_eq!(
                            find(&pool, b).attributes["platform"],
                            pa.attributes["platform"],
                            "{a} opted out, met {b}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn avoids_never_meet_in_either_scope() {
        for scope in [AvoidScope::Match, AvoidScope::Team] {
            let mut model = QueueModel::default();
            model.avoids.scope = scope;
            let mut players: Vec<Player> = (0..12)
                .map(|i| player(&format!("p{i:02}"), 1500.0 + i as f64))
                .collect();
            // neighbours in skill avoid each other, one way
            for i in (0..12).step_by(2) {
                players[i].avoids = vec![format!("p{:02}", i + 1), "gone".into()];
            }
            let (out, pool) = run(players, &model);
            assert_eq!(out.matches.len(), 2, "{scope:?}");
            for m in &out.matches {
                for (t, team) in m.teams.iter().enumerate() {
                    for a in team {
                        for b in &find(&pool, a).avoids {
                            let same_team = team.contains(b);
                            let same_match = m.teams.iter().flatten().any(|x| x == b);
                            assert!(!same_team, "{scope:?}: {a} and {b} on team {t}");
                            if scope == AvoidScope::Match {
                                assert!(!same_match, "{a} met {b}");
                            }
                        }
                    }
                }
            }
        }
        // six players, one avoid, match scope: nothing can form, and the reason says so
        let mut players: Vec<Player> = (0..6).map(|i| player(&format!("p{i}"), 1500.0)).collect();
        players[5].avoids = vec!["p0".into()];
        let model = QueueModel::default();
        let (out, pool) = run(players, &model);
        assert!(out.matches.is_empty());
        let why = explain_left_over(&pool, &model, &out).unwrap();
        assert_eq!(why.len(), 6);
        assert!(
            why.iter().all(|w| w.kind == LeftOverKind::Avoided),
            "{why:?}"
        );
        // honoured only up to max_per_player (the first listed)
        let mut model = QueueModel::default();
        model.avoids.max_per_player = 1;
        let mut players: Vec<Player> = (0..6).map(|i| player(&format!("p{i}"), 1500.0)).collect();
        players[5].avoids = vec!["p9".into(), "p0".into()];
        let (out, _) = run(players, &model);
        assert_eq!(out.matches.len(), 1, "the second avoid is past the limit");
    }

    fn at(secs: i64) -> chrono::DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + secs, 0).unwrap()
    }

    /// A premade of three strong players and three weak solos: a gap no split fixes.
    fn stomp(waited_secs: i64) -> Vec<Player> {
        let mut players = Vec::new();
        for i in 0..3 {
            let mut p = player(&format!("s{i}"), 2280.0);
            p.party = Some("premade".into());
            p.enqueued_at = Some(at(-waited_secs));
            players.push(p);
        }
        for i in 0..3 {
            let mut p = player(&format!("w{i}"), 1360.0);
            p.enqueued_at = Some(at(0));
            players.push(p);
        }
        players
    }

    fn floors() -> Vec<FloorStep> {
        vec![
            FloorStep {
                max_team_gap: Some(150.0),
                ..FloorStep::default()
            },
            FloorStep {
                after: Duration::from_secs(120),
                max_team_gap: Some(1000.0),
                ..FloorStep::default()
            },
        ]
    }

    #[test]
    fn a_floor_keeps_a_stomp_out_until_it_relaxes() {
        let model = QueueModel {
            floors: floors(),
            ..QueueModel::default()
        };
        let pool = |waited| Pool {
            now: Some(at(0)),
            players: stomp(waited),
            ..Pool::default()
        };
        let early = pool(75);
        let out = solve(&early, &model, &options()).unwrap();
        assert!(out.matches.is_empty());
        let why = explain_left_over(&early, &model, &out).unwrap();
        assert_eq!(why.len(), 6);
        for w in &why {
            assert_eq!(w.kind, LeftOverKind::Floor, "{w:?}");
            assert!(
                w.reason
                    .contains("team gap 920 > 150 until 2m of wait (in 45s)"),
                "{}",
                w.reason
            );
        }
        let late = pool(130);
        let out = solve(&late, &model, &options()).unwrap();
        assert_eq!(out.matches.len(), 1);
        // without floors the stomp forms at once
        let out = solve(&early, &QueueModel::default(), &options()).unwrap();
        assert_eq!(out.matches.len(), 1);
    }

    fn far_apart(n: usize) -> Vec<Player> {
        // every pair 400 ms apart: nobody can host (hosts.max_ping_ms 150)
        (0..n)
            .map(|i| {
                let mut p = player(&format!("p{i}"), 1500.0);
                p.latencies.clear();
                p.enqueued_at = Some(at(-600));
                for j in 0..n {
                    if j != i {
                        p.peer_pings.insert(format!("p{j}"), 400.0);
                    }
                }
                p
            })
            .collect()
    }

    #[test]
    fn a_relay_step_forms_the_match_nobody_can_host() {
        let mut model = QueueModel {
            network: Network::PeerToPeer,
            ..QueueModel::default()
        };
        let pool = Pool {
            now: Some(at(0)),
            players: far_apart(6),
            ..Pool::default()
        };
        let out = solve(&pool, &model, &options()).unwrap();
        assert!(out.matches.is_empty());
        let why = explain_left_over(&pool, &model, &out).unwrap();
        assert!(
            why.iter()
                .all(|w| w.kind == LeftOverKind::NoHost && w.reason.contains("no relay configured")),
            "{why:?}"
        );
        model.floors = vec![FloorStep {
            after: Duration::from_secs(900),
            relay: true,
            ..FloorStep::default()
        }];
        let out = solve(&pool, &model, &options()).unwrap();
        assert!(out.matches.is_empty(), "the relay step is not in force yet");
        let why = explain_left_over(&pool, &model, &out).unwrap();
        assert!(
            why.iter().all(|w| w
                .reason
                .contains("a relay step applies from 15m of wait (in 5m)")),
            "{why:?}"
        );
        model.floors[0].after = Duration::from_secs(300);
        let out = solve(&pool, &model, &options()).unwrap();
        assert_eq!(out.matches.len(), 1);
        let m = &out.matches[0];
        assert!(m.relay);
        assert_eq!(m.hosts, Some(Vec::new()));
        assert_eq!((m.host.as_ref(), m.backup_host.as_ref()), (None, None));
    }

    #[test]
    fn hosted_matches_come_before_relay_ones() {
        // six far apart, six who reach everyone within 100 ms: the round forms two
        // matches; any mix of the groups is hostless for the far players, so the six
        // who can host play hosted and the far six by relay, never the reverse
        let mut players = far_apart(6);
        for i in 6..12 {
            let mut p = player(&format!("p{i}"), 1500.0);
            p.latencies.clear();
            p.enqueued_at = Some(at(-600));
            for j in 0..12 {
                if j != i {
                    p.peer_pings
                        .insert(format!("p{j}"), if j >= 6 { 50.0 } else { 400.0 });
                }
            }
            players.push(p);
        }
        let model = QueueModel {
            network: Network::PeerToPeer,
            floors: vec![FloorStep {
                relay: true,
                ..FloorStep::default()
            }],
            ..QueueModel::default()
        };
        let pool = Pool {
            now: Some(at(0)),
            players,
            ..Pool::default()
        };
        let out = solve(&pool, &model, &options()).unwrap();
        assert_eq!(out.matches.len(), 2);
        assert_eq!(out.matches.iter().filter(|m| m.relay).count(), 1);
        for m in &out.matches {
            assert_eq!(m.relay, m.hosts.as_ref().unwrap().is_empty());
        }
    }

    #[test]
    fn floor_steps_are_validated() {
        let check = |floors: Vec<FloorStep>, network: Network| {
            QueueModel {
                floors,
                network,
                ..QueueModel::default()
            }
            .validate()
            .err()
            .map(|e| e.to_string())
        };
        let step = |after: u64, gap: Option<f64>, relay: bool| FloorStep {
            after: Duration::from_secs(after),
            max_team_gap: gap,
            relay,
            ..FloorStep::default()
        };
        let p2p = || Network::PeerToPeer;
        assert_eq!(
            check(
                vec![step(0, Some(100.0), false), step(60, None, true)],
                p2p()
            ),
            None
        );
        for (floors, network, want) in [
            (
                vec![step(60, None, false), step(0, None, false)],
                p2p(),
                "floors[1].after",
            ),
            (
                vec![step(0, Some(300.0), false), step(60, Some(200.0), false)],
                p2p(),
                "floors[1].max_team_gap",
            ),
            (
                vec![step(0, None, false), step(60, Some(200.0), false)],
                p2p(),
                "floors[1].max_team_gap",
            ),
            (
                vec![step(0, Some(f64::NAN), false)],
                p2p(),
                "floors[0].max_team_gap",
            ),
            (
                vec![step(0, None, true), step(60, None, false)],
                p2p(),
                "floors[1].relay",
            ),
            (
                vec![step(0, None, true)],
                Network::Dedicated,
                "floors[0].relay",
            ),
        ] {
            let e = check(floors, network).expect("refused");
            assert!(e.contains(want), "{e} should name {want}");
        }
    }
}
