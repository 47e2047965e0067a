//! The countdown rows the leader writes to `queue_state`.

use chrono::{DateTime, Utc};

use super::trigger::Decision;
use crate::config::QueueConfig;
use crate::db::{QueueStateRow, WaitingFor};

/// What a waiting queue shows: the next possible round, what it waits for, the latest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Countdown {
    pub next_round_at: Option<DateTime<Utc>>,
    pub waiting_for: WaitingFor,
    pub players_missing: usize,
    pub latest_round_at: Option<DateTime<Utc>>,
    pub round_started_at: Option<DateTime<Utc>>,
}

impl Countdown {
    /// The countdown of a decision to wait (None for a decision to run).
    pub fn of(decision: &Decision) -> Option<Countdown> {
        match *decision {
            Decision::Run(_) => None,
            Decision::Wait {
                next_round_at,
                waiting_for,
                players_missing,
                latest_round_at,
            } => Some(Countdown {
                next_round_at,
                waiting_for,
                players_missing,
                latest_round_at,
                round_started_at: None,
            }),
        }
    }

    /// The next schedule tick, nothing missing: what a round leaves.
    pub fn tick(at: DateTime<Utc>) -> Countdown {
        Countdown {
            next_round_at: Some(at),
            waiting_for: WaitingFor::Schedule,
            players_missing: 0,
            latest_round_at: None,
            round_started_at: None,
        }
    }

    /// A round is running since `started_at`.
    pub fn round_running(started_at: DateTime<Utc>) -> Countdown {
        Countdown {
            next_round_at: None,
            waiting_for: WaitingFor::Round,
            players_missing: 0,
            latest_round_at: None,
            round_started_at: Some(started_at),
        }
    }
}

/// The queue state showing `countdown`.
pub fn state_row(queue: &str, config: &QueueConfig, countdown: &Countdown) -> QueueStateRow {
    QueueStateRow {
        queue: queue.to_string(),
        next_round_at: countdown.next_round_at,
        waiting_for: countdown.waiting_for,
        players_missing: i32::try_from(countdown.players_missing).unwrap_or(i32::MAX),
        latest_round_at: countdown.latest_round_at,
        round_started_at: countdown.round_started_at,
        schedule: config
            .round
            .schedule()
            .map(|s| s.to_string())
            .unwrap_or_default(),
        target_pool: config.round.target_pool.map(|t| t as i32),
        min_pool: config.min_pool() as i32,
        players_per_match: config.model.players_per_match() as i32,
        max_wait_secs: config.model.max_wait.as_secs_f64(),
        config_hash: config.hash(),
    }
}

/// Right after a round at `now`: the next schedule tick. What the pool it left waits
/// for (players missing, the latest round) the leader's next look writes, at once.
pub fn after_round(queue: &str, config: &QueueConfig, now: DateTime<Utc>) -> QueueStateRow {
    state_row(queue, config, &Countdown::tick(next_tick(config, now)))
}

/// The schedule's next tick after `after`.
pub fn next_tick(config: &QueueConfig, after: DateTime<Utc>) -> DateTime<Utc> {
    match config.round.schedule() {
        Ok(schedule) => schedule.next_after(after),
        // Unreachable for a validated config; never fire rather than spin.
        Err(_) => DateTime::<Utc>::MAX_UTC,
    }
}
