//! The daemon as deployed (`daemon::run`, wall clock, LISTEN/NOTIFY, file watcher): two
//! replicas on one database, early start woken by NOTIFY, hot reload, shutdown. And the
//! reload rule itself: a bad file is refused and the old config keeps running.

use std::sync::Arc;
use std::time::Duration;

use matchmaker::config::Config;
use matchmaker::daemon::{self, DaemonOptions, reload::reload_config};
use tokio::sync::watch;

use crate::support::*;

const GOOD: &str = "[daemon]\npoll_interval = \"1s\"\nlease_ttl = \"3s\"\nlease_renew = \"1s\"\n\
                    [queues.q.round]\nevery = \"1h\"\nbudget = \"50ms\"\ntarget_pool = 6\n";

#[test]
fn reload_refuses_a_bad_file_and_keeps_the_old_config() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("matchmaker.toml");
    std::fs::write(&path, GOOD).unwrap();
    let (tx, rx) = watch::channel(Arc::new(Config::load(&path).unwrap()));

    std::fs::write(&path, GOOD.replace("target_pool = 6", "target_pool = 3")).unwrap();
    let err = reload_config(&path, &tx).unwrap_err();
    assert!(
        err.to_string().contains("queues.q.round.target_pool"),
        "{err}"
    );
    assert_eq!(
        rx.borrow().queues["q"].round.target_pool,
        Some(6),
        "old config kept"
    );

    std::fs::write(&path, GOOD.replace("target_pool = 6", "target_pool = 12")).unwrap();
    assert!(
        reload_config(&path, &tx).unwrap(),
        "a valid change is applied"
    );
    assert_eq!(rx.borrow().queues["q"].round.target_pool, Some(12));
    assert!(
        !reload_config(&path, &tx).unwrap(),
        "unchanged file: nothing to do"
    );
}

/// Poll the database until `sql` returns `want` (the daemon works on its own time).
async fn wait_until(db: &sqlx::PgPool, sql: &'static str, want: i64) {
    for _ in 0..600 {
        if count(db, sql).await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "timed out waiting for `{sql}` to be {want} (is {})",
        count(db, sql).await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_early_start_hot_reload_and_shutdown() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("matchmaker.toml");
    std::fs::write(&path, GOOD).unwrap();

    let mut stops = Vec::new();
    let mut tasks = Vec::new();
    for holder in ["replica-a", "replica-b"] {
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        stops.push(stop_tx);
        let options = DaemonOptions {
            holder: holder.into(),
            config_path: Some(path.clone()),
            ..DaemonOptions::default()
        };
        let pool = tdb.new_pool(4).await;
        let config = Config::load(&path).unwrap();
        tasks.push(tokio::spawn(daemon::run(pool, config, options, async {
            let _ = stop_rx.await;
        })));
    }
    wait_until(db, "SELECT count(*) FROM queue_state", 1).await;

    // Early start at 6 players, long before the hourly tick: woken by NOTIFY.
    enqueue_n(db, "q", "a", 6, chrono::Utc::now()).await;
    wait_until(
        db,
        "SELECT count(*) FROM queue_entries WHERE status = 'matched'",
        6,
    )
    .await;

    // Hot reload: the countdown follows the new target at once.
    std::fs::write(&path, GOOD.replace("target_pool = 6", "target_pool = 12")).unwrap();
    wait_until(
        db,
        "SELECT count(*) FROM queue_countdown WHERE target_pool = 12",
        1,
    )
    .await;
    // A bad edit is refused; the running config stays (target 12).
    std::fs::write(&path, "this is [not toml").unwrap();
    enqueue_n(db, "q", "b", 6, chrono::Utc::now()).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let queued = count(
        db,
        "SELECT count(*) FROM queue_entries WHERE status = 'queued'",
    )
    .await;
    assert_eq!(queued, 6, "6 < target 12: no early start");
    enqueue_n(db, "q", "c", 6, chrono::Utc::now()).await;
    wait_until(
        db,
        "SELECT count(*) FROM queue_entries WHERE status = 'matched'",
        18,
    )
    .await;

    for stop in stops {
        let _ = stop.send(());
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(
        count(db, "SELECT count(*) FROM rounds").await,
        2,
        "one round per trigger"
    );
    let held = count(db, "SELECT count(*) FROM leases WHERE expires_at > now()").await;
    assert_eq!(held, 0, "leases released at shutdown");
    assert_nobody_matched_twice(db).await;
}
