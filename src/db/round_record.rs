//! Everything a round writes, as one record: what the round read (the snapshot), what
//! the solver made of it, the lease that fences the commit, and the times. Made by
//! [`RoundRecord::new`], the rest set by its `with_` methods, and written by
//! `commit::commit_round`.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::commit::RoundTrigger;
use super::lease::Lease;
use super::queue_state::QueueStateRow;
use super::round_snapshot::ReplayRecord;
use super::snapshot::Snapshot;
use matchmaker_optimizer::{MatchOutcome, Rejection, RoundOutcome};

/// The queue's config as a round stores it (`rounds.config_hash`, `rounds.config`) and
/// acts on it at the commit.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundConfig {
    pub hash: String,
    pub json: serde_json::Value,
    /// `round.history_matches`: how many recent matches per player `recent_matches`
    /// keeps.
    pub history_matches: usize,
    /// The ready check's timeout (None: no ready check, matches final at once).
    pub ready_timeout: Option<Duration>,
    /// How a match's players' `win_probability` is predicted.
    pub win_model: WinModel,
    /// `[queues.NAME.servers]` required: the ttl of a server's announcement. Every new
    /// match the commit writes is allocated a ready server (see `servers`); None: no
    /// servers.
    pub servers_ttl: Option<Duration>,
}

/// The prediction of each team's chance to win: Weng-Lin's Bradley-Terry model over the
/// players' skills and uncertainties (a rated queue's rating model, else the queue's
/// predicted-fairness factor).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WinModel {
    /// Skill points of one class.
    pub beta: f64,
    /// The uncertainty of a player enqueued without one.
    pub default_sigma: f64,
}

impl WinModel {
    /// A player's (skill, uncertainty) as the prediction reads them.
    pub fn rating(&self, skill: f64, skill_sigma: Option<f64>) -> (f64, f64) {
        (skill, skill_sigma.unwrap_or(self.default_sigma))
    }

    /// Each team's chance to win, its players' (skill, uncertainty) read by `rating`;
    /// None for fewer than two teams or a team of which no player is known.
    pub fn predict(
        &self,
        teams: &[Vec<String>],
        rating: impl Fn(&str) -> Option<(f64, f64)>,
    ) -> Option<Vec<f64>> {
        let rated: Vec<Vec<(f64, f64)>> = teams
            .iter()
            .map(|t| t.iter().filter_map(|p| rating(p)).collect())
            .collect();
        if rated.len() < 2 || rated.iter().any(Vec::is_empty) {
            return None;
        }
        Some(matchmaker_optimizer::rating::win_probabilities(
            &rated, self.beta,
        ))
    }
}

/// Everything a round writes.
pub struct RoundRecord<'a> {
    pub snapshot: &'a Snapshot,
    pub trigger: RoundTrigger,
    pub lease: &'a Lease,
    /// The time the lease fence compares against; None: the database's clock.
    pub lease_now: Option<DateTime<Utc>>,
    pub started_at: DateTime<Utc>,
    pub snapshot_at: DateTime<Utc>,
    /// The commit time (`now`): matched_at of the players.
    pub committed_at: DateTime<Utc>,
    pub outcome: &'a RoundOutcome,
    /// Every rejection of the round: conversion failures and the core's.
    pub rejected: &'a [Rejection],
    pub seed: u64,
    pub config_hash: &'a str,
    pub config: &'a serde_json::Value,
    pub snapshot_ms: f64,
    pub solve_ms: f64,
    /// The countdown after this round.
    pub next_state: &'a QueueStateRow,
    /// What the solver saw, for `matchmaker replay` and `explain` (`round_snapshots`);
    /// None writes no snapshot.
    pub replay: Option<&'a ReplayRecord>,
    /// The backfill requests this round tried: fills and why the others stayed open.
    pub backfill: &'a BackfillRecord,
    /// Leave `queue_state` (the scheduled rounds' countdown) as it is: an immediate
    /// backfill round.
    pub keep_countdown: bool,
    /// The queue's `round.history_matches`: how many recent matches per player
    /// `recent_matches` keeps (the snapshot reads them, retention keeps them).
    pub history_matches: usize,
    /// The queue's ready check timeout: the round's new matches are pending until their
    /// players accept (see `ready_check`); None: final at once.
    pub ready_timeout: Option<std::time::Duration>,
    /// How a match's players' `win_probability` is predicted.
    pub win_model: WinModel,
    /// The ttl of a server's announcement when the queue requires servers (see
    /// [`RoundConfig::servers_ttl`]).
    pub servers_ttl: Option<Duration>,
    /// Matches the round formed but could not place on a server (`rounds.no_server_matches`,
    /// with those the commit could not place).
    pub unplaced_matches: usize,
}

/// The backfill side of a round (see `matchmaker_optimizer::backfill`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BackfillRecord {
    pub fills: Vec<BackfillFill>,
    /// (request id, why the round could not fill it).
    pub unfilled: Vec<(i64, String)>,
}

/// One request filled: the added players as a match (teams at the session's indices).
#[derive(Debug, Clone, PartialEq)]
pub struct BackfillFill {
    pub request_id: i64,
    pub session_id: String,
    pub outcome: MatchOutcome,
}

/// No backfill request tried.
static NO_BACKFILL: BackfillRecord = BackfillRecord {
    fills: Vec::new(),
    unfilled: Vec::new(),
};

impl<'a> RoundRecord<'a> {
    /// The round of `snapshot` that `outcome` solved, committed at `committed_at` under
    /// `lease` with the queue's `config`, its countdown then `next_state`. Until set by
    /// the `with_` methods: it started and took its snapshot at `committed_at`, took no
    /// time, seed 0, the lease fenced by the database's clock, no rejection, no replay
    /// record, no backfill request tried. A backfill round keeps the countdown.
    pub fn new(
        snapshot: &'a Snapshot,
        trigger: RoundTrigger,
        lease: &'a Lease,
        config: &'a RoundConfig,
        outcome: &'a RoundOutcome,
        next_state: &'a QueueStateRow,
        committed_at: DateTime<Utc>,
    ) -> Self {
        RoundRecord {
            snapshot,
            trigger,
            lease,
            lease_now: None,
            started_at: committed_at,
            snapshot_at: committed_at,
            committed_at,
            outcome,
            rejected: &[],
            seed: 0,
            config_hash: &config.hash,
            config: &config.json,
            snapshot_ms: 0.0,
            solve_ms: 0.0,
            next_state,
            replay: None,
            backfill: &NO_BACKFILL,
            keep_countdown: trigger == RoundTrigger::Backfill,
            history_matches: config.history_matches,
            ready_timeout: config.ready_timeout,
            win_model: config.win_model,
            servers_ttl: config.servers_ttl,
            unplaced_matches: 0,
        }
    }

    /// The lease fence compares against `lease_now` (None: the database's clock).
    pub fn with_lease_now(mut self, lease_now: Option<DateTime<Utc>>) -> Self {
        self.lease_now = lease_now;
        self
    }

    /// When the round started and took its snapshot, and how long the snapshot and the
    /// solve took (ms).
    pub fn with_times(
        mut self,
        started_at: DateTime<Utc>,
        snapshot_at: DateTime<Utc>,
        snapshot_ms: f64,
        solve_ms: f64,
    ) -> Self {
        self.started_at = started_at;
        self.snapshot_at = snapshot_at;
        self.snapshot_ms = snapshot_ms;
        self.solve_ms = solve_ms;
        self
    }

    /// The solver's seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Every rejection of the round: conversion failures and the core's.
    pub fn with_rejected(mut self, rejected: &'a [Rejection]) -> Self {
        self.rejected = rejected;
        self
    }

    /// What the solver saw, stored for `replay` and `explain`.
    pub fn with_replay(mut self, replay: Option<&'a ReplayRecord>) -> Self {
        self.replay = replay;
        self
    }

    /// Matches the round formed but could not place on a server.
    pub fn with_unplaced_matches(mut self, unplaced: usize) -> Self {
        self.unplaced_matches = unplaced;
        self
    }

    /// The backfill requests the round tried.
    pub fn with_backfill(mut self, backfill: &'a BackfillRecord) -> Self {
        self.backfill = backfill;
        self
    }
}
