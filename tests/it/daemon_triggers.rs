//! Triggers with an injected clock: schedule, early start at the target pool size,
//! min pool with the max-wait fallback; and the pure decision behind them.

use chrono::{DateTime, Duration as D, Utc};
use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::trigger::{Decision, QueueView, decide};
use matchmaker::daemon::worker::StepOutcome;
use matchmaker::db::{RoundTrigger, WaitingFor};

use crate::support::*;

/// The next round and what it waits for, of a step that waited.
fn shown(outcome: &StepOutcome) -> Option<(Option<DateTime<Utc>>, WaitingFor)> {
    match outcome {
        StepOutcome::Waiting {
            next_round_at,
            waiting_for,
            ..
        } => Some((*next_round_at, *waiting_for)),
        _ => None,
    }
}

/// The same of a decision.
fn waits(decision: Decision) -> Option<(Option<DateTime<Utc>>, WaitingFor)> {
    match decision {
        Decision::Wait {
            next_round_at,
            waiting_for,
            ..
        } => Some((next_round_at, waiting_for)),
        Decision::Run(_) => None,
    }
}

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
    // The tick below min_pool waits for players, the max-wait fallback at the latest.
    assert_eq!(
        decide(&config, &view(8, 1, -5, false)),
        Decision::Wait {
            // The round runs as soon as 4 more arrive (the passed tick: 0 s) ...
            next_round_at: Some(now - D::seconds(5)),
            waiting_for: WaitingFor::MinPool,
            players_missing: 4,
            // ... and at the latest at the oldest player's max-wait fallback.
            latest_round_at: Some(now - D::minutes(1) + D::minutes(10)),
        }
    );
    // Max wait reached and a match can be formed.
    assert_eq!(
        decide(&config, &view(8, 10, -5, false)),
        Decision::Run(RoundTrigger::MaxWait)
    );
    // ... but not one match: wait for players, whatever the wait.
    assert_eq!(
        waits(decide(&config, &view(5, 30, -5, false))),
        Some((Some(now - D::seconds(5)), WaitingFor::Players))
    );
    // Before the tick: the countdown is the tick.
    assert_eq!(
        waits(decide(&config, &view(8, 1, 60, false))),
        Some((Some(now + D::seconds(60)), WaitingFor::Schedule))
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
        waits(decide(&config, &view(7, 30, -5))),
        Some((Some(now - D::seconds(5)), WaitingFor::Players))
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
        shown(&s),
        Some((Some(t0() + D::minutes(2)), WaitingFor::Schedule))
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

    // Below min_pool: the tick passes, the round waits for 6 more players; the
    // countdown shows the passed tick (a round as soon as they come) and the max-wait
    // fallback of the oldest player (max_wait 10m) as the latest round.
    let enq = clock_now(&clock);
    enqueue_n(db, "q", "d", 6, enq).await;
    clock.advance(secs(150));
    let s = w.step().await.unwrap();
    assert_eq!(
        s,
        StepOutcome::Waiting {
            next_round_at: Some(enq + D::minutes(2)),
            waiting_for: WaitingFor::MinPool,
            players_missing: 6,
            latest_round_at: Some(enq + D::minutes(10)),
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
        shown(&s),
        Some((Some(t0() + D::minutes(5)), WaitingFor::Schedule))
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
        shown(&s),
        Some((
            Some(t0() + D::seconds(150) + D::minutes(1)),
            WaitingFor::Schedule
        ))
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
/// `matchmaker-lab peak`); the overdue players wait for the tick, and a player who reaches
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
            shown(&s),
            Some((Some(tick), WaitingFor::Schedule)),
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
        shown(&w.step().await.unwrap()),
        Some((Some(next_tick), WaitingFor::Schedule))
    );
    let rounds = count(db, "SELECT count(*) FROM rounds").await;
    assert_eq!(rounds, 2);

    // The overdue players leave; a match's worth of new players waits through the ticks
    // below min_pool (no round: nobody is overdue) and starts a max-wait round when they
    // reach max_wait (10m by default), between two ticks.
    let queued: Vec<String> =
        sqlx::query_scalar("SELECT player_id FROM queue_entries WHERE status = 'queued'")
            .fetch_all(db)
            .await
            .unwrap();
    for p in &queued {
        matchmaker::db::enqueue::cancel(db, Some("q"), p)
            .await
            .unwrap();
    }
    let arrived = clock_now(&clock) + D::seconds(60);
    clock.set(arrived);
    enqueue_tanks(db, "d", 6, arrived).await;
    let crossing = arrived + D::minutes(10);
    while clock_now(&clock) + D::seconds(30) < crossing {
        clock.advance(secs(30));
        let s = w.step().await.unwrap();
        assert!(
            matches!(s, StepOutcome::Waiting { .. }),
            "no round before the crossing at {}: {s:?}",
            clock_now(&clock)
        );
    }
    clock.set(crossing - D::seconds(1));
    let s = w.step().await.unwrap();
    assert!(
        matches!(s, StepOutcome::Waiting { .. }),
        "no round a second before the crossing: {s:?}"
    );
    clock.set(crossing);
    let s = w.step().await.unwrap();
    assert_eq!(ran(&s), Some(RoundTrigger::MaxWait), "{s:?}");
    let StepOutcome::Ran(report) = &s else {
        unreachable!()
    };
    assert_eq!((report.players, report.left_over), (6, 6), "{report:?}");
    assert_eq!(count(db, "SELECT count(*) FROM rounds").await, 3);
}

/// The decision behind it: before the tick, only a player no round has had yet (the
/// worker's `oldest_fresh_enqueued_at`) starts a max-wait round; players a round left
/// over wait for the tick, where the fallback tries them below min_pool too.
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
            waits(decide(&config, &view(fresh, 60))),
            Some((Some(now + D::seconds(60)), WaitingFor::Schedule))
        );
    }
    // A fresh player due before the tick: the countdown says so, and then it runs.
    assert_eq!(
        waits(decide(&config, &view(Some(9), 300))),
        Some((Some(now + D::minutes(1)), WaitingFor::Schedule))
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

/// A strict-roles queue like the peak's 3v3 (a round every 30 s, max_wait 90 s).
fn roles_config(round: &str) -> std::sync::Arc<matchmaker::config::QueueConfig> {
    let config = matchmaker::config::Config::from_toml_str(&format!(
        "[queues.q]\nroles = [\"tank\", \"healer\", \"dps\"]\nrole_mode = \"strict\"\n\
         max_wait = \"90s\"\n[queues.q.round]\nbudget = \"50ms\"\n{round}\n"
    ))
    .unwrap();
    std::sync::Arc::new(config.queues["q"].clone())
}

async fn enqueue_role(
    db: &sqlx::PgPool,
    prefix: &str,
    role: &str,
    n: usize,
    at: chrono::DateTime<chrono::Utc>,
) {
    let players: Vec<_> = (0..n)
        .map(|i| {
            let mut p = player(&format!("{prefix}{i}"), 1000.0 + 11.0 * i as f64, at);
            p.roles = vec![role.into()];
            p
        })
        .collect();
    matchmaker::db::enqueue::enqueue_many(db, "q", &players, at)
        .await
        .expect("enqueue");
}

async fn stored_countdown(db: &sqlx::PgPool) -> Option<chrono::DateTime<chrono::Utc>> {
    sqlx::query_scalar("SELECT next_round_at FROM queue_state WHERE queue = 'q'")
        .fetch_one(db)
        .await
        .unwrap()
}

/// Look at the queue every 10 s (within the lease TTL of 15 s: one term) until `until`:
/// each look must show `tick`; then set the clock to `until`.
async fn look_until(
    w: &mut matchmaker::daemon::worker::QueueWorker,
    clock: &ManualClock,
    until: chrono::DateTime<chrono::Utc>,
    tick: chrono::DateTime<chrono::Utc>,
) {
    while clock_now(clock) + D::seconds(10) < until {
        clock.advance(secs(10));
        assert_eq!(
            shown(&w.step().await.unwrap()),
            Some((Some(tick), WaitingFor::Schedule)),
            "at {}",
            clock_now(clock)
        );
    }
    clock.set(until);
}

/// Players a round left over who reach max_wait before the next tick start no round: the
/// tick the round announced holds, the countdown the commit wrote is the one every look
/// after it shows, and at the tick they come first. Before, their crossing started a
/// round as soon as a match could be formed: right after the commit (a countdown that
/// named the tick for the moment between the commit and the next look, then the
/// crossing), or at the first enqueue after the crossing if the pool was below one match
/// then (a round up to an interval before the announced tick). `matchmaker-lab peak` found
/// both (README).
#[tokio::test]
async fn players_left_over_past_max_wait_wait_for_the_announced_tick() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0() + D::seconds(5));
    let mut w = worker(db, &clock, "a", roles_config("every = \"30s\""));
    // Six tanks: no match can include them until healers and dps come.
    enqueue_role(db, "a", "tank", 6, t0()).await;
    let s = w.step().await.unwrap();
    let mut tick = t0() + D::seconds(35);
    assert_eq!(shown(&s), Some((Some(tick), WaitingFor::Schedule)));
    // Two scheduled rounds leave them over; they reach max_wait at t0 + 90 s, between the
    // second round (t0 + 65 s) and its tick (t0 + 95 s).
    for round in 1..=2 {
        look_until(&mut w, &clock, tick, tick).await;
        let s = w.step().await.unwrap();
        assert_eq!(
            ran(&s),
            Some(RoundTrigger::Schedule),
            "round {round}: {s:?}"
        );
        tick += D::seconds(30);
    }
    assert_eq!(tick, t0() + D::seconds(95));
    assert_eq!(
        stored_countdown(db).await,
        Some(tick),
        "the commit's countdown"
    );
    // The look right after the commit announces the same tick (six players could form a
    // match by count: before, it named their crossing at t0 + 90 s).
    let waiting = Some((Some(tick), WaitingFor::Schedule));
    assert_eq!(shown(&w.step().await.unwrap()), waiting);
    // One leaves: below one match at the crossing. Someone arrives after it: no round.
    assert_eq!(
        matchmaker::db::enqueue::cancel(db, Some("q"), "a5")
            .await
            .unwrap(),
        1
    );
    look_until(&mut w, &clock, t0() + D::seconds(90), tick).await;
    assert_eq!(shown(&w.step().await.unwrap()), waiting);
    clock.set(t0() + D::seconds(91));
    enqueue_role(db, "b", "tank", 1, clock_now(&clock)).await;
    assert_eq!(
        shown(&w.step().await.unwrap()),
        waiting,
        "an arrival after the crossing"
    );
    assert_eq!(stored_countdown(db).await, Some(tick));
    assert_eq!(count(db, "SELECT count(*) FROM rounds").await, 2);

    // At the tick, healers and dps are there: the overdue tanks come first.
    clock.set(tick);
    enqueue_role(db, "h", "healer", 2, clock_now(&clock)).await;
    enqueue_role(db, "d", "dps", 2, clock_now(&clock)).await;
    let s = w.step().await.unwrap();
    assert_eq!(ran(&s), Some(RoundTrigger::Schedule), "{s:?}");
    let matched: Vec<String> = sqlx::query_scalar(
        "SELECT player_id FROM queue_entries WHERE status = 'matched' AND roles = '{tank}'
          ORDER BY player_id",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert_eq!(matched.len(), 2, "{matched:?}");
    assert!(
        matched.iter().all(|p| p.starts_with('a')),
        "the overdue tanks, not the newcomer: {matched:?}"
    );
    let (rounds, terms): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(DISTINCT term) FROM rounds WHERE trigger = 'schedule'",
    )
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(
        (rounds, terms),
        (3, 1),
        "three scheduled rounds, one leader's term"
    );
    assert_nobody_matched_twice(db).await;
}

/// A max_wait shorter than the interval: a player no round has had yet who reaches it
/// before the tick starts a round then, announced by the countdown as soon as a match
/// can be formed. (Steps within the lease TTL of 15 s: one term.)
#[tokio::test]
async fn a_player_reaching_max_wait_before_their_first_round_starts_one() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    let config = matchmaker::config::Config::from_toml_str(
        "[queues.q]\nmax_wait = \"10s\"\n[queues.q.round]\nevery = \"2m\"\nbudget = \"50ms\"\n",
    )
    .unwrap();
    let mut w = worker(
        db,
        &clock,
        "a",
        std::sync::Arc::new(config.queues["q"].clone()),
    );
    enqueue_n(db, "q", "p", 5, t0()).await;
    assert_eq!(
        shown(&w.step().await.unwrap()),
        Some((Some(t0() + D::minutes(2)), WaitingFor::Schedule)),
        "five players: no match, the tick"
    );
    clock.set(t0() + D::seconds(4));
    enqueue_n(db, "q", "x", 1, clock_now(&clock)).await;
    assert_eq!(
        shown(&w.step().await.unwrap()),
        Some((Some(t0() + D::seconds(10)), WaitingFor::Schedule)),
        "a match can be formed: the oldest player's max_wait"
    );
    clock.set(t0() + D::seconds(10));
    let s = w.step().await.unwrap();
    assert_eq!(ran(&s), Some(RoundTrigger::MaxWait), "{s:?}");
    let StepOutcome::Ran(report) = &s else {
        unreachable!()
    };
    assert_eq!(report.matched, 6);
}
