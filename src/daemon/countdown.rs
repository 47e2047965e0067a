//! The countdown rows the leader writes to `queue_state`.

use chrono::{DateTime, Utc};

use crate::config::QueueConfig;
use crate::db::{QueueStateRow, WaitingFor};

/// The queue state with a given next round time.
pub fn state_row(
    queue: &str,
    config: &QueueConfig,
    next_round_at: Option<DateTime<Utc>>,
    waiting_for: WaitingFor,
) -> QueueStateRow {
    QueueStateRow {
        queue: queue.to_string(),
        next_round_at,
        waiting_for,
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

/// Right after a round at `now`: the next schedule tick.
pub fn after_round(queue: &str, config: &QueueConfig, now: DateTime<Utc>) -> QueueStateRow {
    state_row(
        queue,
        config,
        Some(next_tick(config, now)),
        WaitingFor::Schedule,
    )
}

/// The schedule's next tick after `after`.
pub fn next_tick(config: &QueueConfig, after: DateTime<Utc>) -> DateTime<Utc> {
    match config.round.schedule() {
        Ok(schedule) => schedule.next_after(after),
        // Unreachable for a validated config; never fire rather than spin.
        Err(_) => DateTime::<Utc>::MAX_UTC,
    }
}
