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
//! The decision also yields the countdown: the next moment a round can run, what it
//! waits for (the tick, or how many players are still missing and against which
//! threshold), and the latest moment a round runs even if nobody else arrives.

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
        /// The next moment a round can run: the schedule's tick (or a fresh player's
        /// max-wait round before it); once the tick has passed and the queue only waits
        /// for players, the tick itself (in the past): a round runs as soon as
        /// `players_missing` more arrive.
        next_round_at: Option<DateTime<Utc>>,
        waiting_for: WaitingFor,
        /// Players still missing for that round, counted against the threshold that will
        /// fire it: `min_pool` for the tick, one match of the smallest format when the
        /// max-wait fallback only lacks a match (0: the round runs at `next_round_at`).
        players_missing: usize,
        /// The latest moment a round runs without anyone arriving: the tick when the pool
        /// is large enough, else the oldest player's max-wait fallback (None: unknown, not
        /// one match can be formed).
        latest_round_at: Option<DateTime<Utc>>,
    },
}

impl Decision {
    /// When the decision next changes with time alone (None: only arrivals change it):
    /// the next round's moment while it lies ahead, else the latest round's.
    pub fn wake_at(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match *self {
            Decision::Run(_) => Some(now),
            Decision::Wait {
                next_round_at,
                latest_round_at,
                ..
            } => next_round_at.filter(|at| *at > now).or(latest_round_at),
        }
    }
}

pub fn decide(config: &QueueConfig, view: &QueueView) -> Decision {
    // The smallest format: a flexible queue forms a 5v4 or a 4v4 from fewer players.
    let per_match = config.model.min_players_per_match();
    let min_pool = config.min_pool();
    let can_form_match = view.pool_size >= per_match;
    let changed = !view.unchanged_since_last_round;
    let max_wait =
        chrono::Duration::from_std(config.model.max_wait).unwrap_or(chrono::Duration::MAX);
    let after_max_wait = |at: Option<DateTime<Utc>>| {
        at.filter(|_| can_form_match)
            .and_then(|enqueued| enqueued.checked_add_signed(max_wait))
    };
    let missing_for_min_pool = min_pool.saturating_sub(view.pool_size);

    if changed
        && config
            .round
            .target_pool
            .is_some_and(|target| view.pool_size >= target)
    {
        return Decision::Run(RoundTrigger::PoolSize);
    }
    // The fallback of a round due below min_pool: when its oldest player (tried before
    // or not) reaches max_wait, not before the tick.
    let fallback_at = after_max_wait(view.oldest_enqueued_at).map(|at| at.max(view.next_due));
    if view.now < view.next_due {
        // Before the tick: only a player no round has had yet may come first.
        let fresh_at = after_max_wait(view.oldest_fresh_enqueued_at);
        if fresh_at.is_some_and(|at| view.now >= at) {
            return Decision::Run(RoundTrigger::MaxWait);
        }
        if let Some(at) = fresh_at.filter(|at| *at < view.next_due) {
            // That player's round comes first, with whoever is there.
            return Decision::Wait {
                next_round_at: Some(at),
                waiting_for: WaitingFor::Schedule,
                players_missing: 0,
                latest_round_at: Some(at),
            };
        }
        let latest_round_at = if missing_for_min_pool == 0 {
            Some(view.next_due)
        } else {
            fallback_at
        };
        return Decision::Wait {
            next_round_at: Some(view.next_due),
            waiting_for: WaitingFor::Schedule,
            players_missing: missing_for_min_pool,
            latest_round_at,
        };
    }
    // The tick is due.
    if missing_for_min_pool == 0 {
        return Decision::Run(RoundTrigger::Schedule);
    }
    // Below min_pool: the max-wait fallback, for anyone past it (tried before or not).
    let max_wait_at = after_max_wait(view.oldest_enqueued_at);
    if max_wait_at.is_some_and(|at| view.now >= at) {
        return Decision::Run(RoundTrigger::MaxWait);
    }
    if can_form_match {
        return Decision::Wait {
            next_round_at: Some(view.next_due),
            waiting_for: WaitingFor::MinPool,
            players_missing: missing_for_min_pool,
            latest_round_at: max_wait_at,
        };
    }
    // Not one match: once the oldest player has waited max_wait, one match runs the
    // fallback at once; before that only min_pool does.
    let oldest_past_max_wait = view
        .oldest_enqueued_at
        .and_then(|at| at.checked_add_signed(max_wait))
        .is_some_and(|at| view.now >= at);
    let players_missing = if oldest_past_max_wait {
        per_match - view.pool_size
    } else {
        missing_for_min_pool
    };
    Decision::Wait {
        next_round_at: Some(view.next_due),
        waiting_for: WaitingFor::Players,
        players_missing,
        latest_round_at: None,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration as D, TimeZone};

    use super::*;
    use crate::config::Config;

    /// 3v3 (6 players a match), `min_pool` 12, early start at 30, `max_wait` 10 min.
    fn config() -> QueueConfig {
        Config::from_toml_str(
            "[queues.q]\nteams = 2\nteam_size = 3\n[queues.q.round]\nevery = \"2m\"\n\
             target_pool = 30\nmin_pool = 12\n",
        )
        .unwrap()
        .queues["q"]
            .clone()
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap()
    }

    /// `pool` players, the oldest (no round has had them) waiting `oldest_secs`, the tick
    /// `due_in` seconds away (negative: passed).
    fn view(pool: usize, oldest_secs: i64, due_in: i64) -> QueueView {
        let oldest = Some(now() - D::seconds(oldest_secs));
        QueueView {
            now: now(),
            pool_size: pool,
            oldest_enqueued_at: oldest,
            oldest_fresh_enqueued_at: oldest,
            next_due: now() + D::seconds(due_in),
            unchanged_since_last_round: false,
        }
    }

    fn wait(
        next_in: i64,
        waiting_for: WaitingFor,
        players_missing: usize,
        latest_in: Option<i64>,
    ) -> Decision {
        Decision::Wait {
            next_round_at: Some(now() + D::seconds(next_in)),
            waiting_for,
            players_missing,
            latest_round_at: latest_in.map(|s| now() + D::seconds(s)),
        }
    }

    #[test]
    fn before_the_tick_with_min_pool_the_tick_is_next_and_latest() {
        assert_eq!(
            decide(&config(), &view(12, 60, 45)),
            wait(45, WaitingFor::Schedule, 0, Some(45))
        );
    }

    #[test]
    fn before_the_tick_below_min_pool_names_the_missing_and_the_fallback() {
        // 8 of 12: 4 missing at the tick; the fallback when the oldest reaches 10 min.
        assert_eq!(
            decide(&config(), &view(8, 60, 45)),
            wait(45, WaitingFor::Schedule, 4, Some(540))
        );
        // A left-over player's fallback already due by the tick runs at the tick.
        let mut left_over = view(8, 590, 45);
        left_over.oldest_fresh_enqueued_at = None;
        assert_eq!(
            decide(&config(), &left_over),
            wait(45, WaitingFor::Schedule, 4, Some(45))
        );
        // Not one match: no fallback known.
        assert_eq!(
            decide(&config(), &view(5, 60, 45)),
            wait(45, WaitingFor::Schedule, 7, None)
        );
    }

    #[test]
    fn a_fresh_player_reaching_max_wait_before_the_tick_comes_first() {
        let mut v = view(8, 590, 60);
        assert_eq!(
            decide(&config(), &v),
            wait(10, WaitingFor::Schedule, 0, Some(10))
        );
        // The same player left over by a round waits for the tick.
        v.oldest_fresh_enqueued_at = None;
        assert_eq!(
            decide(&config(), &v),
            wait(60, WaitingFor::Schedule, 4, Some(60))
        );
    }

    #[test]
    fn past_the_tick_below_min_pool_a_round_runs_as_soon_as_the_players_arrive() {
        // The reported case: the tick passed, one player short of min_pool. The next
        // round is now (the passed tick, 0 s) once 1 more arrives; the fallback is latest.
        let d = decide(&config(), &view(11, 14, -30));
        assert_eq!(d, wait(-30, WaitingFor::MinPool, 1, Some(586)));
        assert_eq!(d.wake_at(now()), Some(now() + D::seconds(586)));
        // One more player: the round runs.
        assert_eq!(
            decide(&config(), &view(12, 14, -30)),
            Decision::Run(RoundTrigger::Schedule)
        );
    }

    #[test]
    fn not_one_match_counts_against_the_threshold_that_fires() {
        // Nobody waited max_wait: only min_pool starts a round.
        let d = decide(&config(), &view(5, 60, -30));
        assert_eq!(d, wait(-30, WaitingFor::Players, 7, None));
        assert_eq!(d.wake_at(now()), None);
        // The oldest waited max_wait: one match (6) runs the fallback at once.
        assert_eq!(
            decide(&config(), &view(5, 700, -30)),
            wait(-30, WaitingFor::Players, 1, None)
        );
        assert_eq!(
            decide(&config(), &view(6, 700, -30)),
            Decision::Run(RoundTrigger::MaxWait)
        );
    }

    #[test]
    fn early_start_and_runs() {
        assert_eq!(
            decide(&config(), &view(30, 60, 45)),
            Decision::Run(RoundTrigger::PoolSize)
        );
        let mut unchanged = view(30, 60, 45);
        unchanged.unchanged_since_last_round = true;
        assert_eq!(
            decide(&config(), &unchanged),
            wait(45, WaitingFor::Schedule, 0, Some(45))
        );
        assert_eq!(
            decide(&config(), &view(12, 60, 0)),
            Decision::Run(RoundTrigger::Schedule)
        );
        let d = decide(&config(), &view(12, 60, 0));
        assert_eq!(d.wake_at(now()), Some(now()));
    }

    #[test]
    fn wake_at_is_the_next_round_while_it_lies_ahead() {
        let d = decide(&config(), &view(8, 60, 45));
        assert_eq!(d.wake_at(now()), Some(now() + D::seconds(45)));
    }
}
