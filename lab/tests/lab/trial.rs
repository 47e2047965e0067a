//! README's local trial (`matchmaker run --config config/trial.toml`, then
//! `matchmaker-lab simulate`): `simulate` runs as a `matchmaker_client` login, its players
//! get matched, and a round shows within a minute.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use matchmaker::config::Config;
use matchmaker::daemon::{self, DaemonOptions};
use matchmaker::ops::Database;
use matchmaker_lab::simulate::{LoadOptions, SimulateOptions, simulate};

use crate::support::*;

/// README's "Trying the client API by hand": the daemon on `config/trial.toml`, and
/// `simulate` with its defaults (`matchmaker-lab simulate --help`) as a client login.
fn trial_simulate(url: String) -> SimulateOptions {
    SimulateOptions {
        database: Database {
            database_url: Some(url),
            local_pg_dir: PathBuf::from(".local-pg"),
        },
        write_pool: None,
        players: 300,
        duration: Duration::from_secs(10 * 60),
        load: LoadOptions {
            queue: "ranked_3v3".into(),
            rate: None,
            population: 3000,
            seed: 1,
            speedup: None,
            start_hour: None,
            match_duration: Duration::from_secs(10 * 60),
            party_share: 0.3,
            max_party_size: 3,
            cancel_share: 0.05,
            requeue_share: 0.75,
            roles: Vec::new(),
            side_share: 0.0,
            id_prefix: None,
            publish_timeout: Duration::from_secs(60),
            meet: Default::default(),
        },
        fleet: Default::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readme_local_trial_matches_a_client_logins_players_within_a_minute() {
    let _timed = TIMING.write().await;
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let start = Instant::now();
    let started_at = chrono::Utc::now();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/trial.toml");
    let config = Config::load(&path).expect("config/trial.toml loads");
    let (stop_daemon, stopped) = tokio::sync::oneshot::channel::<()>();
    let options = DaemonOptions {
        holder: "trial".into(),
        config_path: Some(path),
        ..DaemonOptions::default()
    };
    let daemon = tokio::spawn(daemon::run(tdb.new_pool(4).await, config, options, async {
        let _ = stopped.await;
    }));

    let (client, client_pool) = client_login(&tdb, 1).await;
    client_pool.close().await;
    // The players keep coming until a round has matched some of them (at most a
    // minute), and a little longer, so that the simulator reads their matches.
    let watcher = tdb.new_pool(1).await;
    let first_round = async move {
        let deadline = start + Duration::from_secs(60);
        while Instant::now() < deadline {
            let matched: i64 = sqlx::query_scalar("SELECT coalesce(sum(matched), 0) FROM rounds")
                .fetch_one(&watcher)
                .await
                .unwrap();
            if matched > 0 {
                tokio::time::sleep(Duration::from_secs(2)).await;
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let report = simulate(&trial_simulate(tdb.url_as(&client)), first_round)
        .await
        .expect("simulate runs as a client login")
        .players;
    let _ = stop_daemon.send(());
    daemon.await.unwrap().unwrap();

    let first: Option<(f64, i32)> = sqlx::query_as(
        "SELECT extract(epoch FROM committed_at - $1::timestamptz)::float8, matched
           FROM rounds WHERE matched > 0 ORDER BY round_id LIMIT 1",
    )
    .bind(started_at)
    .fetch_optional(db)
    .await
    .unwrap();
    let (after, matched) = first.expect("a round matched players");
    assert!(
        after < 60.0,
        "first round with matches {after:.1} s after start"
    );
    assert!(matched >= 6, "{matched} matched");
    assert!(report.enqueued >= 6, "{report}");
    assert!(report.matched > 0, "{report}");
    let owners: Vec<String> = sqlx::query_scalar("SELECT DISTINCT owner FROM queue_entries")
        .fetch_all(db)
        .await
        .unwrap();
    assert_eq!(
        owners,
        [client],
        "every player enqueued by the client login"
    );
    let queued = count(
        db,
        "SELECT count(*) FROM queue_entries WHERE status = 'queued'",
    )
    .await;
    assert_eq!(queued, 0, "the simulator withdrew its waiting players");
}
