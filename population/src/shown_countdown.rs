//! What a player was shown while queued, and when the round it names should start: the
//! measure of a countdown (`matchmaker-lab peak`, the countdown tests and figures). Pure.
//!
//! A countdown names the next moment a round can run, the players it still misses
//! (counted from when the leader counted the pool) and the latest moment it runs
//! regardless. Its round should start at the next moment once those players arrived, or
//! at the latest moment if that comes first; a running round is the player's own round
//! if they were in its pool.

use chrono::{DateTime, Utc};

/// One read of a countdown (`queue_countdown`, `player_status`).
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    /// When it was read (the database's clock, as the rounds' times).
    pub read_at: DateTime<Utc>,
    /// When the leader counted the pool the countdown is made of (None: `read_at`).
    pub counted_at: Option<DateTime<Utc>>,
    pub next_round_at: Option<DateTime<Utc>>,
    pub waiting_for: String,
    pub players_missing: i32,
    pub latest_round_at: Option<DateTime<Utc>>,
    pub round_started_at: Option<DateTime<Utc>>,
}

/// When the round `shown` names should start for a player enqueued at `enqueued_at`,
/// given the queue's arrivals (enqueue times, sorted). None: the condition it named was
/// never met and it named no latest moment (or the round running then did not have them).
pub fn predicted_start(
    shown: &Shown,
    enqueued_at: DateTime<Utc>,
    arrivals: &[DateTime<Utc>],
) -> Option<DateTime<Utc>> {
    if shown.waiting_for == "round" {
        return shown
            .round_started_at
            .filter(|started| enqueued_at <= *started);
    }
    let next = shown.next_round_at?;
    let from = shown.counted_at.unwrap_or(shown.read_at);
    let missing = usize::try_from(shown.players_missing).unwrap_or(0);
    let condition_met = if missing == 0 {
        Some(from)
    } else {
        let first_after = arrivals.partition_point(|at| *at <= from);
        arrivals.get(first_after + missing - 1).copied()
    };
    let when_met = condition_met.map(|at| at.max(next));
    match (when_met, shown.latest_round_at) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration as D, TimeZone};

    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap() + D::seconds(s)
    }

    fn shown(waiting_for: &str, next: Option<i64>, missing: i32, latest: Option<i64>) -> Shown {
        Shown {
            read_at: at(10),
            counted_at: Some(at(9)),
            next_round_at: next.map(at),
            waiting_for: waiting_for.into(),
            players_missing: missing,
            latest_round_at: latest.map(at),
            round_started_at: None,
        }
    }

    #[test]
    fn a_tick_with_nothing_missing_is_the_tick() {
        assert_eq!(
            predicted_start(&shown("schedule", Some(30), 0, Some(30)), at(0), &[]),
            Some(at(30))
        );
    }

    #[test]
    fn players_missing_count_from_the_pool_count() {
        // Two missing: arrivals at 9.5 (after the count) and 20; the tick at 30 passed.
        let arrivals = [at(5), at(9) + D::milliseconds(500), at(20), at(40)];
        let s = shown("min_pool", Some(-5), 2, Some(100));
        assert_eq!(predicted_start(&s, at(0), &arrivals), Some(at(20)));
        // Before the tick: the tick, once they came.
        let s = shown("schedule", Some(30), 2, Some(100));
        assert_eq!(predicted_start(&s, at(0), &arrivals), Some(at(30)));
        // Not enough arrivals: the latest round; none named: unknown.
        let s = shown("min_pool", Some(-5), 5, Some(100));
        assert_eq!(predicted_start(&s, at(0), &arrivals), Some(at(100)));
        let s = shown("players", Some(-5), 5, None);
        assert_eq!(predicted_start(&s, at(0), &arrivals), None);
        // The fallback before the arrivals.
        let s = shown("min_pool", Some(-5), 2, Some(15));
        assert_eq!(predicted_start(&s, at(0), &arrivals), Some(at(15)));
    }

    #[test]
    fn a_running_round_is_theirs_only_if_they_were_in_its_pool() {
        let mut s = shown("round", None, 0, None);
        s.round_started_at = Some(at(8));
        assert_eq!(predicted_start(&s, at(7), &[]), Some(at(8)));
        assert_eq!(predicted_start(&s, at(9), &[]), None);
    }
}
