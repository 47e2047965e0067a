//! When a queue's round runs: the triggers of seed 003, as one pure decision.
//!
//! * **pool size**: the pool reached `target_pool` — start early (more players do not
//!   wait for the tick);
//! * **schedule**: the tick (interval or cron) is due and the pool has at least
//!   `min_pool` players; below that the round waits for players;
//! * **max wait**: a player reached the model's `max_wait` and at least one match can be
//!   formed (of the smallest format the queue allows) — whatever the schedule says.
//!
//! The pool-size trigger needs the pool to have changed since the last round: a pool the
//! solver just left as it is would only give the same answer again. A player gets one
//! max-wait round for reaching `max_wait` (changed pool or not: past it, they come first
//! in the solve), and only one: a player the last round already had past it, and left
//! over, does not start another at every enqueue (a storm of rounds, each leaving them
//! over, that put off the tick for good). They are tried again at each tick, even below
//! `min_pool`, and with any player who reaches `max_wait` later. So the countdown always
//! names the next crossing when it comes before the tick.
//! The decision also yields the countdown (`next_round_at`, what the queue waits for).

use chrono::{DateTime, Utc};

use crate::config::QueueConfig;
use crate::db::{RoundTrigger, WaitingFor};

/// What the queue looks like now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueView {
    pub now: DateTime<Utc>,
    pub pool_size: usize,
    pub oldest_enqueued_at: Option<DateTime<Utc>>,
    /// The oldest player who was not past `max_wait` yet when this leader's last round
    /// started (the oldest of all before its first round).
    pub oldest_fresh_enqueued_at: Option<DateTime<Utc>>,
    /// When the schedule's next tick is (or was) due.
    pub next_due: DateTime<Utc>,
    /// The pool is exactly as the last round left it.
    pub unchanged_since_last_round: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    Run(RoundTrigger),
    Wait {
        /// The countdown: when the next round will start if nothing else happens (None:
        /// unknown, not enough players for a match).
        next_round_at: Option<DateTime<Utc>>,
        waiting_for: WaitingFor,
    },
}

pub fn decide(config: &QueueConfig, view: &QueueView) -> Decision {
    // The smallest format: a flexible queue forms a 5v4 or a 4v4 from fewer players.
    let per_match = config.model.min_players_per_match();
    let can_form_match = view.pool_size >= per_match;
    let changed = !view.unchanged_since_last_round;
    let max_wait =
        chrono::Duration::from_std(config.model.max_wait).unwrap_or(chrono::Duration::MAX);
    let after_max_wait = |at: Option<DateTime<Utc>>| {
        at.filter(|_| can_form_match)
            .and_then(|oldest| oldest.checked_add_signed(max_wait))
    };
    // The next max-wait round: when a player not yet tried past max_wait reaches it.
    let max_wait_at = after_max_wait(view.oldest_fresh_enqueued_at);
    // Someone is past max_wait (tried or not): the tick runs for them below min_pool.
    let overdue = after_max_wait(view.oldest_enqueued_at).is_some_and(|at| view.now >= at);

    if changed
        && config
            .round
            .target_pool
            .is_some_and(|target| view.pool_size >= target)
    {
        return Decision::Run(RoundTrigger::PoolSize);
    }
    if view.now >= view.next_due && view.pool_size >= config.min_pool() {
        return Decision::Run(RoundTrigger::Schedule);
    }
    if max_wait_at.is_some_and(|at| view.now >= at) {
        return Decision::Run(RoundTrigger::MaxWait);
    }
    if view.now >= view.next_due && overdue {
        return Decision::Run(RoundTrigger::MaxWait);
    }
    if view.now < view.next_due {
        // Before the tick; the max-wait fallback may come first.
        let next = match max_wait_at {
            Some(at) if at < view.next_due => at,
            _ => view.next_due,
        };
        Decision::Wait {
            next_round_at: Some(next),
            waiting_for: WaitingFor::Schedule,
        }
    } else if can_form_match {
        Decision::Wait {
            next_round_at: max_wait_at,
            waiting_for: WaitingFor::MinPool,
        }
    } else {
        Decision::Wait {
            next_round_at: None,
            waiting_for: WaitingFor::Players,
        }
    }
}
