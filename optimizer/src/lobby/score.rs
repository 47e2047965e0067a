//! A lobby's score and hard rules: the factors the lobby path scores, the region of a
//! dedicated-server lobby, the meeting rules (`index::Meet`) and the quality floor in
//! force for its longest-waiting player (`[[queues.NAME.floors]]`, as `score::rules`).
//!
//! Factors, each in [0, 1], averaged with the queue's weights:
//! - `equal_players`: `equal_players.curve` of the standard deviation of the lobby's
//!   skills (a lobby of 64 or 100 is judged by its spread, not by its pairs);
//! - `enemy_ping`: the small path's dedicated-server factor, the mean perceived
//!   latency score at the region minimising the worst latency
//!   (`factors::enemy_ping::choose_region`);
//! - two-team formats only: `equal_teams`, `equal_teams.curve` of the gap between the two
//!   team means; `premades`, `premades.table` at |premade players of side 0 - of side 1|
//!   / `team_size` (premade players are members of parties of two or more).
//!
//! The formation search scores a lobby before its split: `equal_teams` and `premades`
//! count as 1 there (`Eval::score` is an upper bound of the final score), and the split
//! search (`teams`) then balances the lobby it was given.

use crate::factors::{enemy_ping, premades};
use crate::index::IndexedPool;
use crate::model::{AvoidScope, FloorStep, QueueModel};

/// The first hard rule a lobby breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    /// The `same` filter or a crossplay opt-out.
    Filter,
    /// Two players one of whom avoids the other (match scope, or the same team).
    Avoid,
    /// The floor step in force: the limit's key.
    Floor(&'static str),
}

/// A lobby's factors (final or before the split).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Factors {
    pub equal_teams: f64,
    pub equal_players: f64,
    pub premades: f64,
    pub enemy_ping: f64,
}

/// A lobby before its split, as the formation search sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Eval {
    pub broken: Option<Broken>,
    /// Players past `max_wait`.
    pub overdue: u32,
    /// Score with `equal_teams` and `premades` at 1.
    pub score: f64,
    /// `score` plus the wait credit of its players (`wait_priority_per_minute`).
    pub quality: f64,
    pub region: Option<usize>,
    /// Worst latency to `region`, ms.
    pub worst_ms: f64,
    /// Standard deviation of the skills.
    pub spread: f64,
}

impl Eval {
    pub fn valid(&self) -> bool {
        self.broken.is_none()
    }
}

/// The queue's lobby format, weights and floors over one indexed pool.
pub struct Ctx<'a> {
    pub ix: &'a IndexedPool,
    pub model: &'a QueueModel,
    /// Players per lobby.
    pub size: usize,
    pub two_teams: bool,
    /// Weights of `equal_teams`, `equal_players`, `premades`, `enemy_ping` (0 for a
    /// factor the format does not score).
    weights: [f64; 4],
    /// Floor steps with their wait in minutes, ascending.
    steps: Vec<(f64, FloorStep)>,
    wait_credit: f64,
}

/// The factor names, in `Factors` order.
pub const NAMES: [&str; 4] = ["equal_teams", "equal_players", "premades", "enemy_ping"];

impl<'a> Ctx<'a> {
    pub fn new(ix: &'a IndexedPool, model: &'a QueueModel) -> Self {
        let two_teams = model.teams == 2;
        let w = &model.weights;
        let weights = if two_teams {
            [w.equal_teams, w.equal_players, w.premades, w.enemy_ping]
        } else {
            [0.0, w.equal_players, 0.0, w.enemy_ping]
        };
        Ctx {
            ix,
            model,
            size: model.players_per_match(),
            two_teams,
            weights,
            steps: model
                .floors
                .iter()
                .map(|s| (s.after.as_secs_f64() / 60.0, s.clone()))
                .collect(),
            wait_credit: model.wait_priority_per_minute,
        }
    }

    /// The scored factors, by name (those with a weight).
    pub fn enabled(&self) -> impl Iterator<Item = (usize, &'static str)> + '_ {
        NAMES
            .iter()
            .enumerate()
            .filter(|(i, _)| self.weights[*i] > 0.0)
            .map(|(i, n)| (i, *n))
    }

    /// Weight of `enemy_ping` and the sum of the weights (servers' re-scoring).
    pub fn ping_weight(&self) -> (f64, f64) {
        (self.weights[3], self.weights.iter().sum())
    }

    /// The weighted mean of the factors.
    pub fn score(&self, f: &Factors) -> f64 {
        let v = [f.equal_teams, f.equal_players, f.premades, f.enemy_ping];
        let total: f64 = self.weights.iter().sum();
        self.weights.iter().zip(v).map(|(w, x)| w * x).sum::<f64>() / total
    }

    /// The floor step in force for these players: the last whose `after` the
    /// longest-waiting of them has waited.
    pub fn floor_in_force(&self, players: &[u32]) -> Option<&FloorStep> {
        if self.steps.is_empty() {
            return None;
        }
        let wait = players
            .iter()
            .map(|&p| self.ix.wait_minutes[p as usize])
            .fold(0.0, f64::max);
        self.steps
            .iter()
            .rev()
            .find(|(after, _)| wait >= *after)
            .map(|(_, s)| s)
    }

    /// Score a lobby before its split (players in any order).
    pub fn evaluate(&self, players: &[u32]) -> Eval {
        let ix = self.ix;
        let n = players.len() as f64;
        let (mut sum, mut sq, mut overdue, mut wait) = (0.0, 0.0, 0u32, 0.0);
        for &p in players {
            let h = ix.hot[p as usize];
            sum += h.skill;
            sq += h.skill * h.skill;
            overdue += h.overdue;
            wait += h.wait_capped;
        }
        let mean = sum / n;
        let spread = (sq / n - mean * mean).max(0.0).sqrt();
        let (region, ping_score) = enemy_ping::choose_region(ix, players, &self.model.ping);
        let unknown = self.model.ping.unknown_ms;
        let worst_ms = region.map_or(unknown, |r| {
            players
                .iter()
                .map(|&p| ix.latency(p, r).map_or(unknown, f64::from))
                .fold(0.0, f64::max)
        });
        let f = Factors {
            equal_teams: 1.0,
            equal_players: self.model.equal_players.curve.score(spread),
            premades: 1.0,
            enemy_ping: ping_score,
        };
        let score = self.score(&f);
        let mut broken = self.meet_rule(players, None);
        if broken.is_none()
            && let Some(step) = self.floor_in_force(players)
        {
            if step.max_enemy_ping_ms.is_some_and(|m| worst_ms > m) {
                broken = Some(Broken::Floor("max_enemy_ping_ms"));
            } else if step.min_match_score.is_some_and(|m| score < m) {
                broken = Some(Broken::Floor("min_match_score"));
            }
        }
        Eval {
            broken,
            overdue,
            score,
            quality: score + self.wait_credit * wait,
            region,
            worst_ms,
            spread,
        }
    }

    /// The meeting rules over a lobby: the `same` filter, crossplay, avoids. With
    /// `team` (each player's team or squad, same order) a team-scope avoid only counts
    /// within one team or squad; without it (the formation search's view, before the
    /// split) only match-scope avoids count, and the split keeps the rest apart.
    pub fn meet_rule(&self, players: &[u32], team: Option<&[u8]>) -> Option<Broken> {
        let m = &self.ix.meet;
        if !m.any() {
            return None;
        }
        if !m.same_key.is_empty() {
            let k = m.same_key[players[0] as usize];
            if players.iter().any(|&p| m.same_key[p as usize] != k) {
                return Some(Broken::Filter);
            }
        }
        if !m.platform.is_empty() {
            let mut need = None;
            for &p in players {
                if m.crossplay_off[p as usize] {
                    let pf = m.platform[p as usize];
                    if need.is_some_and(|n| n != pf) {
                        return Some(Broken::Filter);
                    }
                    need = Some(pf);
                }
            }
            if let Some(pf) = need
                && players.iter().any(|&p| m.platform[p as usize] != pf)
            {
                return Some(Broken::Filter);
            }
        }
        if !m.avoids.is_empty() {
            let team_scope = self.model.avoids.scope == AvoidScope::Team;
            let mut sorted: Vec<(u32, u8)> = players
                .iter()
                .enumerate()
                .map(|(i, &p)| (p, team.map_or(0, |t| t[i])))
                .collect();
            sorted.sort_unstable();
            for &(a, ta) in &sorted {
                for &b in &m.avoids[a as usize] {
                    if let Ok(i) = sorted.binary_search_by_key(&b, |e| e.0) {
                        let tb = sorted[i].1;
                        // before the split a team-scope avoid is left to the split
                        if !team_scope || (team.is_some() && ta == tb) {
                            return Some(Broken::Avoid);
                        }
                    }
                }
            }
        }
        None
    }

    /// The final factors of a split lobby: `teams[t]` its players per team.
    pub fn factors(&self, teams: &[Vec<u32>], pre: &Eval) -> Factors {
        let ix = self.ix;
        let mut f = Factors {
            equal_teams: 1.0,
            equal_players: self.model.equal_players.curve.score(pre.spread),
            premades: 1.0,
            enemy_ping: 0.0,
        };
        let all: Vec<u32> = teams.iter().flatten().copied().collect();
        f.enemy_ping = enemy_ping::choose_region(ix, &all, &self.model.ping).1;
        if self.two_teams {
            (f.equal_teams, f.premades) = self.split_factors(teams);
        }
        f
    }

    /// `equal_teams` and `premades` of a two-team split.
    pub fn split_factors(&self, teams: &[Vec<u32>]) -> (f64, f64) {
        let ix = self.ix;
        let equal = self.model.equal_teams.curve.score(self.team_gap(teams));
        let prem: Vec<usize> = teams
            .iter()
            .map(|t| {
                t.iter()
                    .filter(|&&p| ix.units[ix.unit_of[p as usize] as usize].size() > 1)
                    .count()
            })
            .collect();
        let x = prem[0].abs_diff(prem[1]) as f64 / self.model.team_size as f64;
        (equal, premades::interpolate(&self.model.premades.table, x))
    }

    /// What the split adds to the score: the weighted `equal_teams` and `premades`.
    pub fn split_value(&self, teams: &[Vec<u32>]) -> f64 {
        let (equal, premades) = self.split_factors(teams);
        self.weights[0] * equal + self.weights[2] * premades
    }

    /// Largest gap between team means (squad means in squad formats).
    pub fn team_gap(&self, teams: &[Vec<u32>]) -> f64 {
        let means = teams
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| t.iter().map(|&p| self.ix.skill[p as usize]).sum::<f64>() / t.len() as f64);
        let (lo, hi) = means.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), m| {
            (lo.min(m), hi.max(m))
        });
        if hi < lo { 0.0 } else { hi - lo }
    }

    /// The rules only a split lobby can be judged on: team-scope avoids, and the floor's
    /// `max_team_gap` and `min_match_score` on the final score.
    pub fn judge_split(&self, teams: &[Vec<u32>], score: f64) -> Option<Broken> {
        let players: Vec<u32> = teams.iter().flatten().copied().collect();
        let team: Vec<u8> = teams
            .iter()
            .enumerate()
            .flat_map(|(t, m)| std::iter::repeat_n(t as u8, m.len()))
            .collect();
        if let Some(b) = self.meet_rule(&players, Some(&team)) {
            return Some(b);
        }
        let step = self.floor_in_force(&players)?;
        if step.max_team_gap.is_some_and(|m| self.team_gap(teams) > m) {
            return Some(Broken::Floor("max_team_gap"));
        }
        if step.min_match_score.is_some_and(|m| score < m) {
            return Some(Broken::Floor("min_match_score"));
        }
        None
    }
}
