//! The daemon as deployed (`daemon::run`, wall clock, LISTEN/NOTIFY, file watcher): two
//! replicas on one database, early start woken by NOTIFY, hot reload, shutdown. And the
//! reload rule itself: a bad file is refused and the old config keeps running.

use std::path::Path;
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use matchmaker::config::Config;
use matchmaker::daemon::{self, DaemonOptions, reload::reload_config};
use tokio::sync::watch;

use crate::support::*;

// Polling every hour and a schedule tick every hour: within a test only a NOTIFY (or a
// config change) can wake a worker, so a round that happens was woken by one.
const GOOD: &str = "[daemon]\npoll_interval = \"1h\"\nlease_ttl = \"3s\"\nlease_renew = \"1s\"\n\
                    [queues.q.round]\nevery = \"1h\"\nbudget = \"50ms\"\ntarget_pool = 6\n";

/// How long a NOTIFY may take to become a round or a look at the queue (debounce 250 ms,
/// solve 50 ms); generous for a loaded machine, and far below the 1 h poll.
const PROMPTLY: Duration = Duration::from_secs(5);

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

/// Poll the database until `sql` returns `want`, for at most `within` (the daemon works
/// on its own time).
async fn wait_until(db: &sqlx::PgPool, sql: &'static str, want: i64, within: Duration) {
    wait_for_count(db, sql, want, within).await;
}

/// The error lines of `daemon::reload`, from every test of this binary: a refused file
/// leaves no trace but its log line.
static RELOAD_LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct ReloadLog;

impl std::io::Write for ReloadLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        RELOAD_LOG.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture_reload_log() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "matchmaker::daemon::reload=error",
            ))
            .with_ansi(false)
            .with_writer(|| ReloadLog)
            .try_init()
            .expect("no other test installs a global tracing subscriber");
    });
}

/// Wait until the reload of `path` has logged its refusal.
async fn wait_for_refusal(path: &Path) {
    let field = format!("path={}", path.display());
    let start = Instant::now();
    while start.elapsed() < PROMPTLY {
        let refused = String::from_utf8_lossy(&RELOAD_LOG.lock().unwrap())
            .lines()
            .any(|l| l.contains("config refused") && l.split_whitespace().any(|w| w == field));
        if refused {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no refusal of {} logged", path.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_early_start_hot_reload_and_shutdown() {
    let _load = crate::support::TIMING.read().await;
    capture_reload_log();
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let dir = tempfile::tempdir().unwrap();
    // A file per replica, as on two hosts: each replica's refusal shows in the log.
    let paths = ["replica-a", "replica-b"].map(|h| dir.path().join(format!("{h}.toml")));
    let write_all = |text: &str| {
        for path in &paths {
            std::fs::write(path, text).unwrap();
        }
    };
    write_all(GOOD);

    let mut stops = Vec::new();
    let mut tasks = Vec::new();
    for (holder, path) in ["replica-a", "replica-b"].into_iter().zip(&paths) {
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        stops.push(stop_tx);
        let options = DaemonOptions {
            holder: holder.into(),
            config_path: Some(path.clone()),
            ..DaemonOptions::default()
        };
        let pool = tdb.new_pool(4).await;
        let config = Config::load(path).unwrap();
        tasks.push(tokio::spawn(daemon::run(pool, config, options, async {
            let _ = stop_rx.await;
        })));
    }
    let started = Duration::from_secs(30);
    wait_until(db, "SELECT count(*) FROM queue_state", 1, started).await;
    // A NOTIFY sent before a replica LISTENs is lost; wait until both do.
    wait_until(
        db,
        "SELECT count(*) FROM pg_stat_activity
          WHERE datname = current_database() AND state = 'idle'
            AND query = 'LISTEN \"matchmaker_enqueue\"'",
        2,
        started,
    )
    .await;

    // Early start at 6 players, long before the hourly tick or poll: only the enqueue
    // NOTIFY can wake the leader.
    enqueue_n(db, "q", "a", 6, chrono::Utc::now()).await;
    wait_until(
        db,
        "SELECT count(*) FROM queue_entries WHERE status = 'matched'",
        6,
        PROMPTLY,
    )
    .await;

    // Hot reload: the countdown follows the new target at once.
    write_all(&GOOD.replace("target_pool = 6", "target_pool = 12"));
    wait_until(
        db,
        "SELECT count(*) FROM queue_countdown WHERE target_pool = 12",
        1,
        PROMPTLY,
    )
    .await;
    let hash_12 = Config::load(&paths[0]).unwrap().queues["q"].hash();

    // A bad edit: both replicas read it and refuse it...
    write_all("this is [not toml");
    for path in &paths {
        wait_for_refusal(path).await;
    }
    // ...and the leader keeps target 12: on the next enqueue's NOTIFY it counts 6
    // players (the stored pool size) and waits, where target 6 would start a round.
    enqueue_n(db, "q", "b", 6, chrono::Utc::now()).await;
    wait_until(
        db,
        "SELECT count(*) FROM queue_state WHERE pool_size = 6",
        1,
        PROMPTLY,
    )
    .await;
    let (target, hash): (Option<i32>, String) =
        sqlx::query_as("SELECT target_pool, config_hash FROM queue_state")
            .fetch_one(db)
            .await
            .unwrap();
    assert_eq!(
        (target, hash.as_str()),
        (Some(12), hash_12.as_str()),
        "the config in effect after the bad edit"
    );
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
        PROMPTLY,
    )
    .await;
    // The watcher outlives a refused file: the next valid edit applies.
    write_all(&GOOD.replace("target_pool = 6", "target_pool = 18"));
    wait_until(
        db,
        "SELECT count(*) FROM queue_countdown WHERE target_pool = 18",
        1,
        PROMPTLY,
    )
    .await;

    for stop in stops {
        let _ = stop.send(());
    }
    for task in tasks {
        time_limit::within("a daemon to stop", task)
            .await
            .unwrap()
            .unwrap();
    }
    let rounds: Vec<(String, String)> =
        sqlx::query_as("SELECT trigger, config_hash FROM rounds ORDER BY round_id")
            .fetch_all(db)
            .await
            .unwrap();
    assert_eq!(rounds.len(), 2, "one round per trigger: {rounds:?}");
    assert!(rounds.iter().all(|(t, _)| t == "pool_size"), "{rounds:?}");
    assert_eq!(
        rounds[1].1, hash_12,
        "the second round ran the reloaded config"
    );
    let held = count(db, "SELECT count(*) FROM leases WHERE expires_at > now()").await;
    assert_eq!(held, 0, "leases released at shutdown");
    assert_nobody_matched_twice(db).await;
}
