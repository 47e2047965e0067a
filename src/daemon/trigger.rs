//! When a queue's round runs: the triggers of the Awesomenauts matchmaker post, as one pure decision.
//!
//! * **schedule**: the tick (interval or cron) is due and the pool has at least
//!   `min_pool` players; below that the round waits for players;
//! * **pool size**: the pool reached `target_pool` — start early (more players do not
//!   wait for the tick);
//! * **max wait**: a player reached the model's `max_wait` and at least one match can be
//!   formed (of the smallest format the queue allows): the fallback of a due round that
//!   waits below `min_pool` (at the tick if someone is past it already, else when the
//!   oldest reaches it), and, before the tick, the round of a player who reached it
//!   without having been in any round (a `max_wait` shorter than the interval).
//!
//! A player a round left over starts no round before the tick, whatever their wait: the
//! countdown players see is the tick, and it holds (the Awesomenauts post's promise: "we can tell the
//! player beforehand exactly how long they'll have to wait"). Past `max_wait` they come
//! first in the tick's round (the solver places overdue players whenever any valid match
//! can include them), so a player who can be matched waits at most `max_wait` plus one
//! round. A round at their crossing instead depended on arrivals the countdown could not
//! know (the pool below one match at the crossing, then someone arrives: a round up to a
//! whole interval before the announced tick), and players nobody can host, crossing one
//! after another, displaced the schedule with small rounds at odd times (`matchmaker
//! peak`, README). The same rule keeps the fallback from repeating: its round sets the
//! next tick, and the players it left over wait for that tick.
//!
//! The pool-size trigger needs the pool to have changed since the last round: a pool the
//! solver just left as it is would only give the same answer again.
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
    /// The oldest player no round has had yet: enqueued after this leader's last round
    /// started (the oldest of all before any round).
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
            .and_then(|enqueued| enqueued.checked_add_signed(max_wait))
    };

    if changed
        && config
            .round
            .target_pool
            .is_some_and(|target| view.pool_size >= target)
    {
        return Decision::Run(RoundTrigger::PoolSize);
    }
    if view.now < view.next_due {
        // Before the tick: only a player no round has had yet may come first.
        let fresh_at = after_max_wait(view.oldest_fresh_enqueued_at);
        if fresh_at.is_some_and(|at| view.now >= at) {
            return Decision::Run(RoundTrigger::MaxWait);
        }
        return Decision::Wait {
            next_round_at: Some(fresh_at.map_or(view.next_due, |at| at.min(view.next_due))),
            waiting_for: WaitingFor::Schedule,
        };
    }
    // The tick is due.
    if view.pool_size >= config.min_pool() {
        return Decision::Run(RoundTrigger::Schedule);
    }
    // Below min_pool: the max-wait fallback, for anyone past it (tried before or not).
    let max_wait_at = after_max_wait(view.oldest_enqueued_at);
    if max_wait_at.is_some_and(|at| view.now >= at) {
        return Decision::Run(RoundTrigger::MaxWait);
    }
    if can_form_match {
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
