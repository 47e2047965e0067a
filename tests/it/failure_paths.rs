//! Failure paths: a match the database refuses as a whole while each of its players
//! passes alone; enqueue_party's refusal of a concurrent call for the same party; an
//! enqueue before any queue is served; replaying a round stored without its snapshot;
//! missing PostgreSQL binaries; a round the core refuses and a solver thread that fails.

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::metrics::ErrorKind;
use matchmaker::daemon::round::{RoundError, RoundRunner};
use matchmaker::daemon::worker::StepOutcome;
use matchmaker::db::RoundTrigger;
use matchmaker::db::local_pg::{LocalPgError, find_bin_dir_in};
use serde_json::json;
use sqlx::PgPool;

use crate::support::*;

/// Queue q (2 teams of 3) published by its leader's first look; returns the worker.
async fn published(db: &PgPool, clock: &ManualClock) -> matchmaker::daemon::worker::QueueWorker {
    let mut w = worker(db, clock, "a", queue_config("every = \"1m\""));
    let first = w.step().await.unwrap();
    assert!(matches!(first, StepOutcome::Waiting { .. }), "{first:?}");
    w
}

#[tokio::test]
async fn a_match_refused_whole_while_each_player_passes_alone_rejects_its_players() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    let mut w = published(db, &clock).await;
    enqueue_n(db, "q", "p", 6, t0()).await;
    // A rule over a match's players together: any one player alone passes it.
    sqlx::raw_sql(
        "CREATE FUNCTION one_player_a_match() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             IF (SELECT count(*) FROM match_players WHERE match_id = NEW.match_id) > 1 THEN
                 RAISE EXCEPTION 'a match holds one player only';
             END IF;
             RETURN NULL;
         END $$;
         CREATE TRIGGER one_player_a_match AFTER INSERT ON match_players
             FOR EACH ROW EXECUTE FUNCTION one_player_a_match();",
    )
    .execute(db)
    .await
    .unwrap();

    clock.advance(secs(60));
    let StepOutcome::Ran(report) = w.step().await.unwrap() else {
        panic!("the tick runs a round");
    };
    assert_eq!(
        (
            report.matches,
            report.matched,
            report.rejected,
            report.dropped_by_cancel
        ),
        (0, 0, 6, 0),
        "{report:?}"
    );
    let rows: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT player_id, status, reject_reason FROM queue_entries ORDER BY player_id",
    )
    .fetch_all(db)
    .await
    .unwrap();
    for (player, status, reason) in &rows {
        assert_eq!(
            (status.as_str(), reason.as_deref()),
            (
                "rejected",
                Some(
                    "the round could not record this entry's match: a match holds one player \
                     only (SQLSTATE P0001)"
                )
            ),
            "{player}"
        );
    }
    assert_eq!(rows.len(), 6);
    // Nobody is left to be proposed the same match again.
    clock.advance(secs(60));
    let next = w.step().await.unwrap();
    if let StepOutcome::Ran(report) = &next {
        assert_eq!(report.players, 0, "{report:?}");
    }
    assert_eq!(count(db, "SELECT count(*) FROM matches").await, 0);
    assert_contract_invariants(db).await;
}

#[tokio::test]
async fn enqueue_party_refuses_a_concurrent_call_for_the_same_party_within_seconds() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    let _w = published(db, &clock).await;
    let (_, client) = client_login(&tdb, 3).await;
    let (_, other_login) = client_login(&tdb, 1).await;
    let members = |prefix: &str| {
        sqlx::types::Json(json!([
            {"player_id": format!("{prefix}1"), "skill": 1500},
            {"player_id": format!("{prefix}2"), "skill": 1500}
        ]))
    };
    let party = "SELECT count(*) FROM enqueue_party('q', 'duo', $1)";

    // The first call is in flight: its transaction holds the party's lock.
    let mut first = client.begin().await.unwrap();
    sqlx::query(party)
        .bind(members("a"))
        .execute(&mut *first)
        .await
        .unwrap();
    let second = tokio::time::timeout(
        Duration::from_secs(5),
        sqlx::query(party).bind(members("b")).execute(&client),
    )
    .await
    .expect("refused within seconds, not held until the first call ends")
    .unwrap_err();
    // The login's quota count is the first thing the call waits for, two seconds at
    // most: the first call's open transaction holds it.
    assert_eq!(
        db_error(&second),
        (
            "40001".to_string(),
            "queue = 'q': another open transaction of this login is enqueueing into this \
             queue; retry once it commits (commit enqueues promptly)"
                .to_string()
        )
    );
    // Another login's party of the same name is its own.
    sqlx::query(party)
        .bind(members("c"))
        .execute(&other_login)
        .await
        .unwrap();
    first.commit().await.unwrap();
    let third = sqlx::query(party)
        .bind(members("b"))
        .execute(&client)
        .await
        .unwrap_err();
    assert_eq!(
        db_error(&third).1,
        "party_id = 'duo': is already queued in queue q (cancel it first)"
    );
    let queued: Vec<String> = sqlx::query_scalar(
        "SELECT player_id FROM queue_entries WHERE status = 'queued' ORDER BY player_id",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert_eq!(queued, ["a1", "a2", "c1", "c2"]);
}

#[tokio::test]
async fn an_enqueue_before_any_queue_is_served_says_the_daemon_may_not_run() {
    let tdb = fresh_db().await;
    let (_, client) = client_login(&tdb, 1).await;
    let err = sqlx::query("SELECT enqueue(queue => 'q', player_id => 'p', skill => 1000)")
        .execute(&client)
        .await
        .unwrap_err();
    assert_eq!(
        db_error(&err),
        (
            "22023".to_string(),
            "queue = 'q': unknown queue; no queue is served yet (is the daemon running?)"
                .to_string()
        )
    );
    assert_eq!(
        count(&tdb.pool, "SELECT count(*) FROM queue_entries").await,
        0
    );
}

#[tokio::test]
async fn replaying_a_round_stored_without_its_snapshot_says_so() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    let mut w = published(db, &clock).await;
    enqueue_n(db, "q", "p", 6, t0()).await;
    clock.advance(secs(60));
    let StepOutcome::Ran(report) = w.step().await.unwrap() else {
        panic!("the tick runs a round");
    };
    let round = report.round_id;
    assert!(
        matchmaker::db::load_round(db, round)
            .await
            .unwrap()
            .is_some()
    );
    sqlx::query("DELETE FROM round_snapshots WHERE round_id = $1")
        .bind(round)
        .execute(db)
        .await
        .unwrap();
    let err = matchmaker::db::load_round(db, round).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("round {round} has no snapshot (committed without one, or by an older build)")
    );
    assert!(
        matchmaker::db::load_round(db, round + 1000)
            .await
            .unwrap()
            .is_none(),
        "no such round is not an error"
    );
}

#[test]
fn missing_postgres_binaries_name_what_to_install() {
    let missing = "PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or in \
                   /usr/lib/postgresql/*/bin; install the Debian package `postgresql` \
                   (apt-get install postgresql) or set DATABASE_URL to an existing server";
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let nowhere = dir.path().join("nowhere");
    let refused =
        |path: Option<&std::path::Path>, versioned: &std::path::Path| match find_bin_dir_in(
            path.map(|p| p.as_os_str()),
            versioned,
        ) {
            Err(e @ LocalPgError::BinariesMissing) => e.to_string(),
            other => panic!("expected BinariesMissing, got {other:?}"),
        };
    // No PATH, or an empty one, and no versioned directory.
    assert_eq!(refused(None, &nowhere), missing);
    assert_eq!(refused(Some(&empty), &nowhere), missing);
    // initdb without pg_ctl is not enough, on PATH or in a versioned directory.
    let half = dir.path().join("half");
    std::fs::create_dir(&half).unwrap();
    std::fs::write(half.join("initdb"), "").unwrap();
    let versioned = dir.path().join("postgresql");
    std::fs::create_dir_all(versioned.join("16/bin")).unwrap();
    std::fs::write(versioned.join("16/bin/initdb"), "").unwrap();
    assert_eq!(refused(Some(&half), &versioned), missing);
    // Both found: PATH first, else the highest version.
    for bin in ["13/bin", "9/bin"] {
        std::fs::create_dir_all(versioned.join(bin)).unwrap();
        for exe in ["initdb", "pg_ctl"] {
            std::fs::write(versioned.join(bin).join(exe), "").unwrap();
        }
    }
    assert_eq!(
        find_bin_dir_in(Some(half.as_os_str()), &versioned).unwrap(),
        versioned.join("13/bin")
    );
    std::fs::write(half.join("pg_ctl"), "").unwrap();
    assert_eq!(
        find_bin_dir_in(Some(half.as_os_str()), &versioned).unwrap(),
        half
    );
}

#[tokio::test]
async fn a_round_the_core_refuses_writes_nothing_and_the_fixed_config_runs_it() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    let mut w = published(db, &clock).await;
    enqueue_n(db, "q", "p", 6, t0()).await;
    let mut broken = (**w.config()).clone();
    broken.model.teams = 1;
    let broken = Arc::new(broken);
    let refusal = "queue q: the core refused the round: queue model: teams: must be at least 2";

    // The runner's solve step.
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let prepared = runner
        .prepare("q", broken.clone(), RoundTrigger::Manual)
        .await
        .unwrap();
    let Err(e) = runner.solve(prepared).await else {
        panic!("the core refuses a model of one team");
    };
    assert!(matches!(e, RoundError::Core { .. }), "{e:?}");
    assert_eq!(e.to_string(), refusal);
    assert_eq!(
        e.source().map(|s| s.to_string()).as_deref(),
        Some("queue model: teams: must be at least 2")
    );
    assert!(!e.is_lease_lost());
    assert_eq!(ErrorKind::of_round(&e).as_str(), "round_core");

    // Nothing written; the queue's worker (its config valid) runs the round next tick.
    assert_eq!(count(db, "SELECT count(*) FROM rounds").await, 0);
    let queued = count(
        db,
        "SELECT count(*) FROM queue_entries WHERE status = 'queued'",
    )
    .await;
    assert_eq!(queued, 6);
    clock.advance(secs(60));
    let StepOutcome::Ran(report) = w.step().await.unwrap() else {
        panic!("the fixed config runs the round");
    };
    assert_eq!(report.matched, 6, "{report:?}");
}

#[tokio::test]
async fn a_failed_solver_thread_is_a_join_error_of_its_own_kind() {
    let solve = || -> u8 { panic!("solver exploded") };
    let failed = tokio::task::spawn_blocking(solve).await.unwrap_err();
    let e = RoundError::from(failed);
    let text = e.to_string();
    assert!(
        text.starts_with("solver thread failed: task ")
            && text.ends_with(" panicked with message \"solver exploded\""),
        "{text}"
    );
    assert!(!e.is_lease_lost());
    assert_eq!(ErrorKind::of_round(&e), ErrorKind::SolverThread);
    assert_eq!(ErrorKind::of_round(&e).as_str(), "solver_thread");
}
