//! What a round ends with: its report, or the error that stopped it. Shared by the round
//! (which makes them), the worker and the metrics (which read them).

use chrono::{DateTime, Utc};
use thiserror::Error;

use crate::db::{DbError, RoundTrigger};
use matchmaker_optimizer::PoolError;

#[derive(Debug, Error)]
pub enum RoundError {
    #[error(transparent)]
    Db(#[from] DbError),
    /// The queue's model is refused by the core (a config problem: nothing is written).
    #[error("queue {queue}: the core refused the round: {source}")]
    Core {
        queue: String,
        #[source]
        source: PoolError,
    },
    #[error("solver thread failed: {0}")]
    Join(#[from] tokio::task::JoinError),
}

impl RoundError {
    /// The round was not committed because another replica holds the lease now.
    pub fn is_lease_lost(&self) -> bool {
        matches!(self, RoundError::Db(DbError::LeaseLost { .. }))
    }
}

/// What a committed round did: the summary line of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundReport {
    pub queue: String,
    pub trigger: RoundTrigger,
    pub round_id: i64,
    pub players: usize,
    pub matches: usize,
    pub matched: usize,
    pub left_over: usize,
    pub rejected: usize,
    pub dropped_by_cancel: usize,
    /// The matched players' entries in other queues, withdrawn by the commit.
    pub withdrawn: usize,
    /// Backfill requests filled (their fills count in `matches` and `matched`).
    pub backfilled: usize,
    /// Players of incomplete parties, left queued for a later round.
    pub sat_out: usize,
    pub score: Option<f64>,
    pub snapshot_ms: f64,
    pub solve_ms: f64,
    pub commit_ms: f64,
    pub elapsed_ms: f64,
    pub next_round_at: Option<DateTime<Utc>>,
    /// The round's pooled players as the wait estimate learns from them.
    pub pooled: Vec<super::wait_estimate::WaitObservation>,
}
