//! What a streaming standby can serve: the views clients poll and the operators'
//! commands, read-only, at the replication lag; the calls that write (`enqueue`,
//! `keep_alive`, `cancel`, the ready check, results, servers) are refused there with
//! SQLSTATE 25006 and must go to the primary. A hot standby cloned from a private primary
//! stands in for a formation's.

use std::time::{Duration, Instant};

use matchmaker_testkit::command_line::{piped_within, text};
use matchmaker_testkit::daemon::{publish, round_of_thirteen};
use matchmaker_testkit::postgres::own_server;
use sqlx::{Connection, PgConnection};

/// The views a client polls, as the client guide reads them.
const CLIENT_READS: &[&str] = &[
    "SELECT count(*) FROM queue_catalog",
    "SELECT count(*) FROM queue_countdown",
    "SELECT count(*) FROM player_status",
    "SELECT count(*) FROM match_details",
    "SELECT count(*) FROM avoid_list",
    "SELECT count(*) FROM player_ratings",
];

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::test]
async fn a_standby_serves_what_clients_poll_and_refuses_their_writes() {
    let (primary, _, db) = own_server().await;
    let config = matchmaker::config::Config::from_toml_str("[queues.q]\n").unwrap();
    publish(&db, &config, "standby-test").await;
    let report = round_of_thirteen(&db).await;
    assert_eq!(report.matched, 12);
    for sql in [
        "CREATE ROLE standby_client LOGIN CONNECTION LIMIT 4 IN ROLE matchmaker_client",
        "CREATE ROLE standby_ops LOGIN IN ROLE matchmaker_ops",
    ] {
        sqlx::query(sql).execute(&db).await.unwrap();
    }
    let standby = primary.start_standby().await.expect("a standby");
    let as_login = |port: u16, login: &str| format!("postgres://{login}@127.0.0.1:{port}/postgres");
    let mut writes = PgConnection::connect(&as_login(primary.port(), "standby_client"))
        .await
        .unwrap();
    let mut reads = PgConnection::connect(&as_login(standby.port(), "standby_client"))
        .await
        .unwrap();
    let in_recovery: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()")
        .fetch_one(&mut reads)
        .await
        .unwrap();
    assert!(in_recovery, "the standby is in recovery");

    // Staleness: each enqueue on the primary, until the standby's player_status shows it.
    let mut lags = Vec::new();
    for i in 0..40 {
        let player = format!("s{i}");
        sqlx::query("SELECT enqueue(queue => 'q', player_id => $1, skill => 1500, latencies => '{}'::jsonb)")
            .bind(&player)
            .execute(&mut writes)
            .await
            .unwrap();
        let written = Instant::now();
        loop {
            let seen: i64 =
                sqlx::query_scalar("SELECT count(*) FROM player_status WHERE player_id = $1")
                    .bind(&player)
                    .fetch_one(&mut reads)
                    .await
                    .unwrap();
            if seen == 1 {
                lags.push(written.elapsed());
                break;
            }
            assert!(
                written.elapsed() < Duration::from_secs(10),
                "{player} not on the standby after 10 s"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    lags.sort();
    println!(
        "standby staleness of player_status over {} enqueues: p50 {:?}, p95 {:?}, max {:?}",
        lags.len(),
        percentile(&lags, 0.5),
        percentile(&lags, 0.95),
        lags[lags.len() - 1]
    );

    for sql in CLIENT_READS {
        sqlx::query(*sql)
            .execute(&mut reads)
            .await
            .unwrap_or_else(|e| panic!("{sql} on the standby: {e}"));
    }
    // Every call that writes is refused on the standby, in class 25 (not 22: the request
    // is fine, the server is the wrong one).
    for sql in [
        "SELECT enqueue(queue => 'q', player_id => 'late', skill => 1500, latencies => '{}'::jsonb)",
        "SELECT keep_alive(ARRAY['s0'], 'q')",
        "SELECT cancel('s0', 'q')",
        "SELECT avoid('s0', 's1')",
    ] {
        let err = sqlx::query(sql).execute(&mut reads).await.unwrap_err();
        let code = err
            .as_database_error()
            .and_then(|e| e.code())
            .map(|c| c.to_string());
        assert_eq!(
            code.as_deref(),
            Some("25006"),
            "{sql} on the standby: {err}"
        );
    }

    // The operators' read commands run on the standby as an ops login.
    for args in [&["status", "--once"][..], &["explain", "p0"][..]] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_matchmaker"));
        cmd.args(args)
            .env("DATABASE_URL", as_login(standby.port(), "standby_ops"))
            .env("NO_COLOR", "1");
        let out = piped_within(&mut cmd, Duration::from_secs(60));
        assert!(
            out.status.success(),
            "{args:?} on the standby: {}",
            text(&out.stderr)
        );
    }
    reads.close().await.ok();
    writes.close().await.ok();
    db.close().await;
    standby.stop().await.unwrap();
    primary.stop().await.unwrap();
}
