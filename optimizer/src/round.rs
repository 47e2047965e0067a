//! The output of one round: matches, who stays queued, who was rejected, and how the
//! search went.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::deadline::StopReason;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundOutcome {
    pub matches: Vec<MatchOutcome>,
    /// Valid players left for the next round.
    pub unmatched: Vec<String>,
    /// Players this queue can never use, with a reason a person can read.
    pub rejected: Vec<Rejection>,
    /// The round's megascore (the Awesomenauts matchmaker post): mean (or power mean) of the match scores.
    pub score: f64,
    pub stats: SolveStats,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchOutcome {
    /// Player ids per team, teams in side order (team 0 is side 0).
    pub teams: Vec<Vec<String>>,
    /// Weighted match score in [0, 1].
    pub score: f64,
    /// Score of each enabled factor in [0, 1], by factor name.
    pub factors: BTreeMap<String, f64>,
    /// Role of each player, in role-restricted queues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roles: Option<BTreeMap<String, String>>,
    /// Server region, in dedicated-server queues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Players who can host (reach everyone within `hosts.max_ping_ms`), best first,
    /// peer-to-peer queues. Never empty there: a match nobody can host is never made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<String>>,
    /// Who hosts (peer-to-peer): the first of `hosts`, the Awesomenauts post's host rule (lowest
    /// worst ping to the others, ties by player id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Who takes over if the host drops (host migration): the second of `hosts`; none
    /// when only one player can host (the two-hosts factor then scores
    /// `hosts.one_host_score`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_host: Option<String>,
    /// Peer-to-peer: nobody in the match can host it, and a floor step with `relay = true`
    /// was in force for its longest-waiting player; the game backend routes it through
    /// its relay (`host` and `backup_host` are None, `hosts` empty).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub relay: bool,
    /// The map it is played on, in queues with maps (`[queues.NAME.maps]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<String>,
    /// Players of the match who vetoed its map: a floor step with `relax_vetoes` was in
    /// force and every map was vetoed by one of them. 0 otherwise.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub map_vetoed_by: u32,
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rejection {
    pub id: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SolveStats {
    pub strategy: String,
    #[serde(with = "humantime_serde")]
    pub elapsed: Duration,
    /// `elapsed` in milliseconds, for tools that want a number.
    pub elapsed_ms: f64,
    pub restarts: u64,
    pub moves_evaluated: u64,
    /// Of `moves_evaluated`, the moves the annealing rejected by an upper bound on
    /// their score, before the split loops ran (the rest were fully re-split).
    pub moves_rejected_by_bound: u64,
    pub moves_per_second: f64,
    #[serde(with = "humantime_serde")]
    pub time_to_best: Duration,
    /// `time_to_best` in milliseconds.
    pub time_to_best_ms: f64,
    pub stop_reason: StopReason,
    pub threads: usize,
    pub seed: u64,
    /// Applied moves checked against a full re-score (`SolveOptions::check_delta`);
    /// left out of the JSON when the check is off.
    #[serde(skip_serializing_if = "is_zero")]
    pub delta_checks: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
