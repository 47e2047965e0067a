//! Several daemons on one database: one round per trigger, nobody matched twice; a standby
//! takes over within the TTL when the leader dies; a leader killed mid-round loses
//! nothing and cannot commit after losing its lease.

use chrono::Duration as D;
use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::worker::StepOutcome;
use matchmaker::db::RoundTrigger;

use crate::support::*;

fn is_round(s: &StepOutcome) -> bool {
    matches!(s, StepOutcome::Ran(_))
}

#[tokio::test]
async fn two_daemons_one_round_per_trigger_nobody_matched_twice() {
    let tdb = fresh_db().await;
    let clock = ManualClock::new(t0());
    let config = queue_config("every = \"2m\"\ntarget_pool = 30\nmin_pool = 6");
    // Two replicas, each with its own connection pool.
    let (pool_a, pool_b) = (tdb.new_pool(4).await, tdb.new_pool(4).await);
    let mut a = worker(&pool_a, &clock, "replica-a", config.clone());
    let mut b = worker(&pool_b, &clock, "replica-b", config);

    // Both start; one leads and announces the first tick.
    let (sa, sb) = tokio::join!(a.step(), b.step());
    assert!(
        matches!(sa.unwrap(), StepOutcome::Standby) != matches!(sb.unwrap(), StepOutcome::Standby)
    );
    let mut rounds = 0;
    for tick in 0..6 {
        enqueue_n(
            &tdb.pool,
            "q",
            &format!("t{tick}-"),
            13,
            clock.now_for_test(),
        )
        .await;
        // Time passes; the lease keepers renew every 5 s.
        for _ in 0..25 {
            clock.advance(secs(5));
            let (ra, rb) = tokio::join!(a.keep_lease(), b.keep_lease());
            assert!(
                ra.unwrap().is_some() != rb.unwrap().is_some(),
                "exactly one leader"
            );
        }
        // Both look at the same moment, concurrently.
        let (sa, sb) = tokio::join!(a.step(), b.step());
        let (sa, sb) = (sa.unwrap(), sb.unwrap());
        assert!(
            !(is_round(&sa) && is_round(&sb)),
            "tick {tick}: both replicas ran a round"
        );
        assert!(
            matches!(sa, StepOutcome::Standby) || matches!(sb, StepOutcome::Standby),
            "tick {tick}: one replica must be standby"
        );
        rounds += usize::from(is_round(&sa) || is_round(&sb));
    }
    assert_eq!(rounds, 6, "one round per tick");
    let holders = count(&tdb.pool, "SELECT count(DISTINCT leader) FROM rounds").await;
    assert_eq!(holders, 1, "the lease keeps one leader while it renews");
    assert_nobody_matched_twice(&tdb.pool).await;
    let accounted = count(
        &tdb.pool,
        "SELECT count(*) FROM queue_entries WHERE status IN ('queued', 'matched')",
    )
    .await;
    assert_eq!(accounted, 6 * 13, "every player queued or matched");
}

#[tokio::test]
async fn a_standby_takes_over_within_the_ttl_after_the_leader_is_killed() {
    let tdb = fresh_db().await;
    let clock = ManualClock::new(t0());
    let config = queue_config("every = \"1m\"");
    let mut a = worker(&tdb.pool, &clock, "a", config.clone());
    let mut b = worker(&tdb.pool, &clock, "b", config);
    enqueue_n(&tdb.pool, "q", "p", 6, t0()).await;
    assert!(matches!(
        a.step().await.unwrap(),
        StepOutcome::Waiting { .. }
    ));
    drop(a); // killed: no release, no more renewals

    clock.advance(secs(10));
    assert_eq!(
        b.step().await.unwrap(),
        StepOutcome::Standby,
        "the lease is still valid"
    );
    clock.advance(secs(6)); // 16 s > TTL 15 s
    let s = b.step().await.unwrap();
    assert!(!matches!(s, StepOutcome::Standby), "b leads after the TTL");
    let (holder, term): (String, i64) = sqlx::query_as("SELECT holder, term FROM leases")
        .fetch_one(&tdb.pool)
        .await
        .unwrap();
    assert_eq!((holder.as_str(), term), ("b", 2));
    // ... and runs the queue: the round a announced is due at t0 + 1m.
    clock.set(t0() + D::minutes(1));
    let s = b.step().await.unwrap();
    let StepOutcome::Ran(report) = s else {
        panic!("expected a round, got {s:?}")
    };
    assert_eq!(
        (report.trigger, report.matched),
        (RoundTrigger::Schedule, 6)
    );
}

#[tokio::test]
async fn a_daemon_killed_mid_round_loses_nobody_and_cannot_commit_later() {
    let tdb = fresh_db().await;
    let clock = ManualClock::new(t0());
    let config = queue_config("every = \"1m\"");
    enqueue_n(&tdb.pool, "q", "p", 20, t0()).await;

    // a leads, announces the round at t0 + 1m, starts it and gets as far as the solve,
    // then hangs (killed, or paused for long).
    let mut a = worker(&tdb.pool, &clock, "a", config.clone());
    assert!(matches!(
        a.step().await.unwrap(),
        StepOutcome::Waiting { .. }
    ));
    clock.advance(secs(60));
    let lease_a = a.keep_lease().await.unwrap().expect("a leads");
    let runner = matchmaker::daemon::round::RoundRunner::new(
        tdb.pool.clone(),
        std::sync::Arc::new(clock.clone()),
    );
    let prepared = runner
        .prepare("q", config.clone(), RoundTrigger::Schedule)
        .await
        .unwrap();
    let solved_by_a = runner.solve(prepared).await.unwrap();
    // Nothing was written: everyone is still queued.
    let queued = count(
        &tdb.pool,
        "SELECT count(*) FROM queue_entries WHERE status = 'queued'",
    )
    .await;
    assert_eq!(queued, 20);

    // b (the restarted daemon, or a standby) takes over after the TTL and runs the
    // round that was due.
    clock.advance(secs(16));
    let mut b = worker(&tdb.pool, &clock, "b", config);
    let s = b.step().await.unwrap();
    let StepOutcome::Ran(report) = s else {
        panic!("expected a round, got {s:?}")
    };
    assert_eq!(
        (report.players, report.matched, report.left_over),
        (20, 18, 2)
    );

    // a wakes up and tries to commit its stale round: refused, nothing written.
    let err = runner.commit(solved_by_a, &lease_a).await.unwrap_err();
    assert!(err.is_lease_lost(), "{err}");
    assert_eq!(count(&tdb.pool, "SELECT count(*) FROM rounds").await, 1);
    assert_nobody_matched_twice(&tdb.pool).await;
    let lost = count(
        &tdb.pool,
        "SELECT count(*) FROM queue_entries WHERE status NOT IN ('queued', 'matched')",
    )
    .await;
    assert_eq!(lost, 0, "nobody lost");
}

#[tokio::test]
async fn shutdown_releases_the_lease_for_an_immediate_takeover() {
    let tdb = fresh_db().await;
    let clock = ManualClock::new(t0());
    let config = queue_config("");
    let mut a = worker(&tdb.pool, &clock, "a", config.clone());
    let mut b = worker(&tdb.pool, &clock, "b", config);
    a.step().await.unwrap();
    assert_eq!(b.step().await.unwrap(), StepOutcome::Standby);
    a.release().await.unwrap();
    assert!(!matches!(b.step().await.unwrap(), StepOutcome::Standby));
}

trait NowForTest {
    fn now_for_test(&self) -> chrono::DateTime<chrono::Utc>;
}

impl NowForTest for ManualClock {
    fn now_for_test(&self) -> chrono::DateTime<chrono::Utc> {
        matchmaker::daemon::clock::Clock::now(self)
    }
}
