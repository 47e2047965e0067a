//! Triggers with an injected clock: schedule, early start at the target pool size,
//! min pool with the max-wait fallback; and the pure decision behind them.

use chrono::Duration as D;
use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::trigger::{Decision, QueueView, decide};
use matchmaker::daemon::worker::StepOutcome;
use matchmaker::db::{RoundTrigger, WaitingFor};

use crate::support::*;

fn ran(outcome: &StepOutcome) -> Option<RoundTrigger> {
    match outcome {
        StepOutcome::Ran(r) => Some(r.trigger),
        _ => None,
    }
}

#[test]
fn decision_table() {
    let config = queue_config("every = \"2m\"\ntarget_pool = 30\nmin_pool = 12");
    let now = t0();
    let view = |pool, oldest_min: i64, due_in: i64, unchanged| QueueView {
        now,
        pool_size: pool,
        oldest_enqueued_at: Some(now - D::minutes(oldest_min)),
        oldest_fresh_enqueued_at: Some(now - D::minutes(oldest_min)),
        next_due: now + D::seconds(due_in),
        unchanged_since_last_round: unchanged,
    };
    // Early start at the target, before the tick; not again on an unchanged pool.
    assert_eq!(
        decide(&config, &view(30, 1, 60, false)),
        Decision::Run(RoundTrigger::PoolSize)
    );
    assert!(matches!(
        decide(&config, &view(30, 1, 60, true)),
        Decision::Wait { .. }
    ));
    // The tick with enough players.
    assert_eq!(
        decide(&config, &view(12, 1, 0, false)),
        Decision::Run(RoundTrigger::Schedule)
    );
    // The tick below min_pool waits; the countdown shows the max-wait fallback.
    assert_eq!(
        decide(&config, &view(8, 1, -5, false)),
        Decision::Wait {
            next_round_at: Some(now - D::minutes(1) + D::minutes(10)),
            waiting_for: WaitingFor::MinPool
        }
    );
    // Max wait reached and a match can be formed.
    assert_eq!(
        decide(&config, &view(8, 10, -5, false)),
        Decision::Run(RoundTrigger::MaxWait)
    );
    // ... but not one match: wait for players, whatever the wait.
    assert_eq!(
        decide(&config, &view(5, 30, -5, false)),
        Decision::Wait {
            next_round_at: None,
            waiting_for: WaitingFor::Players
        }
    );
    // Before the tick: the countdown is the tick.
    assert_eq!(
        decide(&config, &view(8, 1, 60, false)),
        Decision::Wait {
            next_round_at: Some(now + D::seconds(60)),
            waiting_for: WaitingFor::Schedule
        }
    );
}

/// A flexible queue (5v5 that allows 4v4) runs at its tick with the 8 players of its
/// smallest format, and its max-wait fallback counts a 4v4 as a match that can form.
#[test]
fn a_flexible_queue_triggers_at_its_smallest_format() {
    let config = matchmaker::config::Config::from_toml_str(
        "[queues.q]\nteams = 2\nteam_size = 5\n[queues.q.alliance]\nplayer_min_number = 4\n\
         [queues.q.round]\nevery = \"2m\"\n",
    )
    .unwrap()
    .queues["q"]
        .clone();
    let now = t0();
    let view = |pool, oldest_min: i64, due_in: i64| QueueView {
        now,
        pool_size: pool,
        oldest_enqueued_at: Some(now - D::minutes(oldest_min)),
        oldest_fresh_enqueued_at: Some(now - D::minutes(oldest_min)),
        next_due: now + D::seconds(due_in),
        unchanged_since_last_round: false,
    };
    assert_eq!(
        decide(&config, &view(8, 1, 0)),
        Decision::Run(RoundTrigger::Schedule)
    );
    assert_eq!(
        decide(&config, &view(8, 10, 60)),
        Decision::Run(RoundTrigger::MaxWait)
    );
    assert_eq!(
        decide(&config, &view(7, 30, -5)),
        Decision::Wait {
            next_round_at: None,
            waiting_for: WaitingFor::Players
        }
    );
}

#[tokio::test]
async fn schedule_early_start_and_max_wait_with_an_injected_clock() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    let config = queue_config("every = \"2m\"\ntarget_pool = 18\nmin_pool = 12");
    let mut w = worker(db, &clock, "a", config);

    // 6 players: before the tick, wait for it.
    enqueue_n(db, "q", "a", 6, t0()).await;
    let s = w.step().await.unwrap();
    assert_eq!(
        s,
        StepOutcome::Waiting {
            next_round_at: Some(t0() + D::minutes(2)),
            waiting_for: WaitingFor::Schedule
        }
    );

    // Early start: the pool reaches the target before the tick.
    clock.advance(secs(30));
    enqueue_n(db, "q", "b", 12, clock_now(&clock)).await;
    let s = w.step().await.unwrap();
    assert_eq!(ran(&s), Some(RoundTrigger::PoolSize));
    let StepOutcome::Ran(report) = &s else {
        unreachable!()
    };
    assert_eq!(report.matched, 18);
    // The next tick counts from that round.
    assert_eq!(
        report.next_round_at,
        Some(t0() + D::seconds(30) + D::minutes(2))
    );

    // The tick with enough players (min_pool 12).
    enqueue_n(db, "q", "c", 12, clock_now(&clock)).await;
    clock.advance(secs(60));
    assert_eq!(ran(&w.step().await.unwrap()), None, "before the tick");
    clock.advance(secs(60));
    assert_eq!(ran(&w.step().await.unwrap()), Some(RoundTrigger::Schedule));

    // Below min_pool: the tick passes, the round waits; the countdown shows the
    // max-wait fallback of the oldest player (max_wait 10m).
    let enq = clock_now(&clock);
    enqueue_n(db, "q", "d", 6, enq).await;
    clock.advance(secs(150));
    let s = w.step().await.unwrap();
    assert_eq!(
        s,
        StepOutcome::Waiting {
            next_round_at: Some(enq + D::minutes(10)),
            waiting_for: WaitingFor::MinPool
        }
    );
    let waiting: String =
        sqlx::query_scalar("SELECT waiting_for FROM queue_state WHERE queue = 'q'")
            .fetch_one(db)
            .await
            .unwrap();
    assert_eq!(waiting, "min_pool");

    // Max wait: the oldest player has waited 10 minutes; one match can be formed.
    clock.set(enq + D::minutes(10));
    assert_eq!(ran(&w.step().await.unwrap()), Some(RoundTrigger::MaxWait));
    let pool_after = count(
        db,
        "SELECT count(*) FROM queue_entries WHERE status = 'queued'",
    )
    .await;
    assert_eq!(pool_after, 0);

    let triggers: Vec<String> = sqlx::query_scalar("SELECT trigger FROM rounds ORDER BY round_id")
        .fetch_all(db)
        .await
        .unwrap();
    assert_eq!(triggers, ["pool_size", "schedule", "max_wait"]);
    assert_nobody_matched_twice(db).await;
}

#[tokio::test]
async fn cron_schedule_runs_at_its_ticks() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0() + D::seconds(10));
    let config = queue_config("cron = \"*/5 * * * *\"");
    let mut w = worker(db, &clock, "a", config);
    enqueue_n(db, "q", "a", 6, t0()).await;
    let s = w.step().await.unwrap();
    assert_eq!(
        s,
        StepOutcome::Waiting {
            next_round_at: Some(t0() + D::minutes(5)),
            waiting_for: WaitingFor::Schedule
        }
    );
    clock.set(t0() + D::minutes(5));
    assert_eq!(ran(&w.step().await.unwrap()), Some(RoundTrigger::Schedule));
}

fn clock_now(clock: &ManualClock) -> chrono::DateTime<chrono::Utc> {
    matchmaker::daemon::clock::Clock::now(clock)
}

#[tokio::test]
async fn a_reloaded_schedule_moves_the_countdown_at_once() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    let mut w = worker(db, &clock, "a", queue_config("every = \"2m\""));
    enqueue_n(db, "q", "a", 6, t0()).await;
    clock.advance(secs(130));
    assert_eq!(
        ran(&w.step().await.unwrap()),
        None,
        "first look announces t0 + 2m10s + 2m"
    );
    assert_eq!(ran(&w.step().await.unwrap()), None);
    clock.advance(secs(20));
    // The operator shortens the schedule: the next round is 1 minute after... the
    // previous one, or, with none yet, after now.
    w.set_config(queue_config("every = \"1m\""));
    let s = w.step().await.unwrap();
    assert_eq!(
        s,
        StepOutcome::Waiting {
            next_round_at: Some(t0() + D::seconds(150) + D::minutes(1)),
            waiting_for: WaitingFor::Schedule
        }
    );
    let (next, schedule): (chrono::DateTime<chrono::Utc>, String) =
        sqlx::query_as("SELECT next_round_at, schedule FROM queue_state WHERE queue = 'q'")
            .fetch_one(db)
            .await
            .unwrap();
    assert_eq!(next, t0() + D::seconds(210));
    assert_eq!(schedule, "every 1m");
}

/// Tanks only, in a queue whose teams need a tank, a healer and a dps: no match can form.
async fn enqueue_tanks(
    db: &sqlx::PgPool,
    prefix: &str,
    n: usize,
    at: chrono::DateTime<chrono::Utc>,
) {
    let players: Vec<_> = (0..n)
        .map(|i| {
            let mut p = player(&format!("{prefix}{i}"), 1000.0 + 37.0 * i as f64, at);
            p.roles = vec!["tank".into()];
            p
        })
        .collect();
    matchmaker::db::enqueue::enqueue_many(db, "q", &players, at)
        .await
        .expect("enqueue");
}

/// A max-wait round that leaves its overdue players over runs once: the enqueues after it
/// do not start another each (a storm of rounds that put off the tick for good, found by
/// `matchmaker peak`); the overdue players wait for the tick, and a player who reaches
/// max_wait later starts the next max-wait round.
#[tokio::test]
async fn a_max_wait_round_that_leaves_its_players_over_is_not_repeated_at_every_enqueue() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    let config = matchmaker::config::Config::from_toml_str(
        "[queues.q]\nroles = [\"tank\", \"healer\", \"dps\"]\nrole_mode = \"strict\"\n\
         [queues.q.round]\nevery = \"2m\"\nmin_pool = 12\nbudget = \"50ms\"\n",
    )
    .unwrap();
    let config = std::sync::Arc::new(config.queues["q"].clone());
    let mut w = worker(db, &clock, "a", config);

    enqueue_tanks(db, "a", 6, t0()).await;
    clock.set(t0() + D::minutes(10));
    let s = w.step().await.unwrap();
    assert_eq!(ran(&s), Some(RoundTrigger::MaxWait), "{s:?}");
    let StepOutcome::Ran(report) = &s else {
        unreachable!()
    };
    assert_eq!((report.matched, report.left_over), (0, 6), "{report:?}");

    // Enqueues after it: no round at each; the countdown shows the tick.
    let tick = report.next_round_at.expect("a tick after the round");
    for i in 0..5 {
        clock.advance(secs(1));
        enqueue_tanks(db, &format!("b{i}-"), 1, clock_now(&clock)).await;
        let s = w.step().await.unwrap();
        assert_eq!(
            s,
            StepOutcome::Waiting {
                next_round_at: Some(tick),
                waiting_for: WaitingFor::Schedule
            },
            "enqueue {i}"
        );
    }
    // At the tick, below min_pool (11 of 12), the overdue players are tried again: once.
    clock.set(tick);
    let s = w.step().await.unwrap();
    assert_eq!(ran(&s), Some(RoundTrigger::MaxWait), "{s:?}");
    let StepOutcome::Ran(report) = &s else {
        unreachable!()
    };
    let next_tick = report.next_round_at.expect("a tick after the round");
    clock.advance(secs(1));
    enqueue_tanks(db, "c", 1, clock_now(&clock)).await;
    assert_eq!(
        w.step().await.unwrap(),
        StepOutcome::Waiting {
            next_round_at: Some(next_tick),
            waiting_for: WaitingFor::Schedule
        }
    );
    let rounds = count(db, "SELECT count(*) FROM rounds").await;
    assert_eq!(rounds, 2);
}

/// The decision behind it: an overdue player the last round already tried starts no
/// max-wait round on a pool change; one who reached max_wait since does.
#[test]
fn only_a_player_newly_past_max_wait_starts_a_max_wait_round() {
    let config = queue_config("every = \"2m\"\nmin_pool = 12");
    let now = t0();
    let view = |fresh_min: Option<i64>, due_in: i64| QueueView {
        now,
        pool_size: 8,
        oldest_enqueued_at: Some(now - D::minutes(30)),
        oldest_fresh_enqueued_at: fresh_min.map(|m| now - D::minutes(m)),
        next_due: now + D::seconds(due_in),
        unchanged_since_last_round: false,
    };
    // Tried already (none fresh, or the fresh one not yet due): the tick.
    for fresh in [None, Some(3)] {
        assert_eq!(
            decide(&config, &view(fresh, 60)),
            Decision::Wait {
                next_round_at: Some(now + D::seconds(60)),
                waiting_for: WaitingFor::Schedule
            }
        );
    }
    // A fresh player due before the tick: the countdown says so, and then it runs.
    assert_eq!(
        decide(&config, &view(Some(9), 300)),
        Decision::Wait {
            next_round_at: Some(now + D::minutes(1)),
            waiting_for: WaitingFor::Schedule
        }
    );
    assert_eq!(
        decide(&config, &view(Some(10), 300)),
        Decision::Run(RoundTrigger::MaxWait)
    );
    // At the tick below min_pool, the overdue players are tried again.
    assert_eq!(
        decide(&config, &view(None, 0)),
        Decision::Run(RoundTrigger::MaxWait)
    );
}
