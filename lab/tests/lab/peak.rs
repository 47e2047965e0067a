//! The peak evening's code path, scaled down for CI: `matchmaker-lab peak`'s `run_peak` with 2
//! replicas (child processes of this crate's binary), 2 regions x 2 modes = 4 queues,
//! rounds every 5-8 s and a load of simulated players for 30 s. Every part of the table
//! must have been measured, and two targets are asserted: no round late by more than
//! 1 s at p99, and countdown error p99 under 1 s (each sample against the start of the
//! round that followed it: with `max_wait` longer than the interval every round starts
//! at the tick its countdown announced, so the error is that round's lateness). No
//! max-wait round runs at all here (the fallback only serves a due round below
//! `min_pool`, which is one match). The third target (nobody past `max_wait` plus one
//! round, apart from players no matchmaker could place: shown apart) is printed, not
//! asserted: with 15-20 s waits a round 0.3 s late decides it for a player who reached
//! max_wait just after the previous round started; `matchmaker-lab peak` measures it
//! (README). The 3v3 queues are rated: their results must have moved ratings.

use std::time::Duration;

use chrono::{TimeZone, Utc};
use matchmaker_lab::peak::{PeakOptions, run_peak};
use matchmaker_lab::sim::peak::EveningSpec;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scaled_down_peak_evening_meets_its_targets() {
    let _timing = TIMING.write().await;
    let tdb = fresh_db().await;
    let dir = tempfile::tempdir().unwrap();
    let options = PeakOptions {
        evening: EveningSpec {
            regions: 2,
            players: 1500,
            rate: 12.0,
            every_3v3: Duration::from_secs(5),
            every_5v5: Duration::from_secs(8),
            max_wait_3v3: Duration::from_secs(15),
            max_wait_5v5: Duration::from_secs(20),
            budget: Duration::from_millis(200),
            server_ttl: None,
        },
        duration: Duration::from_secs(30),
        speedup: 30.0,
        start: Utc.with_ymd_and_hms(2026, 1, 14, 19, 0, 0).unwrap(),
        replicas: 2,
        solver_threads: 1,
        seed: 7,
        exe: crate::product_binary(),
        work_dir: dir.path().to_path_buf(),
        fleet: Default::default(),
    };
    let outcome = run_peak(&tdb.url(), &options)
        .await
        .expect("the evening runs");
    let table = outcome.table();
    eprintln!("{table}");
    assert_eq!(outcome.queues, 4);
    assert_eq!(outcome.replica_exits, 0, "{table}");
    let f = &outcome.figures;
    // Every queue ran rounds on its schedule: 30 s of 5-8 s rounds, four queues.
    assert!(f.lateness.len() >= 8, "scheduled rounds measured: {table}");
    assert!(
        f.countdown_errors.len() >= 100,
        "countdown samples: {table}"
    );
    assert!(outcome.sims.matched > 0 && f.matched_waits > 0, "{table}");
    assert!(outcome.distinct_players > 100, "{table}");
    assert!(
        f.snapshot_ms.len() == f.rounds && f.rounds > 0,
        "phase times of every round: {table}"
    );
    assert!(
        outcome
            .load
            .iter()
            .any(|(k, v)| k.contains("commits") && v != "0 /s (0 /s)")
    );
    let failed = outcome.failed_targets();
    eprintln!("targets failed (reported): {failed:?}");
    assert!(
        !failed.iter().any(|t| t.contains("late")),
        "rounds late: {failed:?}\n{table}"
    );
    assert!(
        !failed.iter().any(|t| t.contains("countdown")),
        "the countdown: {failed:?}\n{table}"
    );
    assert_eq!(
        f.rounds_by_trigger.get("max_wait").copied().unwrap_or(0),
        0,
        "no round before its announced tick: {table}"
    );
    // The 3v3 queues are rated: their players enqueued without a skill, played at their
    // ratings, and the results the simulators reported moved those ratings.
    let r = &outcome.ratings;
    assert_eq!(r.pool.as_deref(), Some("ranked_3v3"), "{table}");
    let (rated, entries_3v3): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE rated), count(*) FROM queue_entries
          WHERE queue LIKE '%\\_3v3'",
    )
    .fetch_one(&tdb.pool)
    .await
    .unwrap();
    assert!(
        entries_3v3 > 0 && rated == entries_3v3,
        "{rated} of {entries_3v3} 3v3 entries play at their rating"
    );
    assert!(r.reported > 0, "results reported: {table}");
    let predicted: i64 = r.calibration.iter().map(|b| b.matches).sum();
    assert!(
        predicted > 0 && predicted <= r.reported,
        "reported matches with a prediction: {table}"
    );
}
