//! `[queues.NAME.round]`: when a queue's rounds run, on how many players, with what
//! budget and seed.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use matchmaker_optimizer::{Budget, Strategy};

use super::{DEFAULT_EVERY, Schedule};

/// `[queues.NAME.round]`: the daemon's part of a queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoundConfig {
    /// A round this long after the previous one. At most one of `every` / `cron`;
    /// neither: every 2 minutes.
    #[serde(
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub every: Option<Duration>,
    /// A round at each tick of this cron expression (UTC; 5 fields, or 6 with seconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// Start a round early as soon as this many players are queued (the Awesomenauts matchmaker post: 100-300).
    /// Absent: no early start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_pool: Option<usize>,
    /// A scheduled round waits while fewer players are queued; it starts when the pool
    /// reaches this size, or when the longest-waiting player reaches the model's
    /// `max_wait` (if a match can be formed). Default: one match worth of players (of
    /// the smallest format a flexible queue allows: a 5v5 queue that allows 4v4 forms a
    /// match from 8 players).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_pool: Option<usize>,
    /// At most this many players per round, oldest first; the rest wait for the next.
    pub max_round_size: usize,
    /// Wall-clock time the solver may spend on one round.
    #[serde(with = "humantime_serde")]
    pub budget: Duration,
    /// A deterministic budget: exactly this many solver restarts instead of the time
    /// `budget`, so the round gives the same matches on any machine and any number of
    /// threads, and `matchmaker replay` reproduces it exactly. Absent: the time budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarts: Option<u64>,
    /// Steps of one annealing restart. Absent: 2,000 per unit of the pool (at least
    /// 20,000) with `restarts`, the whole time budget without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moves_per_restart: Option<u64>,
    /// Search strategy of the core.
    pub strategy: Strategy,
    /// Fixed solver seed. Absent: each round derives its seed from its start time. Either
    /// way the seed used is stored with the round, so it can be replayed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Solver threads of this queue's rounds, at most (the daemon grants what is free of
    /// `[daemon] solver_threads`). Absent: every free core of that budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// How many recent matches per pooled player the snapshot reads as history for
    /// opponent variation. Absent: the model's `opponent_variation.depth` (the Awesomenauts matchmaker post looks
    /// at the previous match: 1); never less than that.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_matches: Option<usize>,
}

impl Default for RoundConfig {
    fn default() -> Self {
        RoundConfig {
            every: None,
            cron: None,
            target_pool: None,
            min_pool: None,
            max_round_size: 10_000,
            budget: Duration::from_secs(2),
            restarts: None,
            moves_per_restart: None,
            strategy: Strategy::Default,
            seed: None,
            threads: None,
            history_matches: None,
        }
    }
}

impl RoundConfig {
    /// The solver's budget: `restarts` when set (deterministic), else the time `budget`.
    pub fn solve_budget(&self) -> Budget {
        match self.restarts {
            Some(n) => Budget::Restarts(n),
            None => Budget::Time(self.budget),
        }
    }

    /// The schedule (valid once the config was validated).
    pub fn schedule(&self) -> Result<Schedule, String> {
        match (&self.every, &self.cron) {
            (Some(every), None) => Ok(Schedule::every(*every)),
            (None, Some(cron)) => Schedule::cron(cron),
            (Some(_), Some(_)) => Err("set either `every` or `cron`, not both".into()),
            (None, None) => Ok(Schedule::every(DEFAULT_EVERY)),
        }
    }
}
