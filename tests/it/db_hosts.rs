//! Multi-host database URLs (`postgres://h1:p1,h2:p2/db?target_session_attrs=...`): the
//! pool goes to the first host whose session fits, and follows when another host takes
//! over. Two private servers stand in for a formation's nodes; which one takes writes is
//! switched with `default_transaction_read_only`, which is what `target_session_attrs`
//! reads (`transaction_read_only`). A real formation's failover is in `failover.rs`.

use std::time::{Duration, Instant};

use matchmaker::db;
use matchmaker::db::local_pg::LocalPostgres;
use matchmaker_testkit::command_line::{piped_within, text};
use sqlx::{Connection, PgConnection, PgPool};

struct Node(LocalPostgres);

impl Node {
    async fn start() -> Node {
        Node(
            LocalPostgres::start_temporary()
                .await
                .expect("private server"),
        )
    }

    async fn set_writable(&self, writable: bool) {
        let mut admin = PgConnection::connect(&self.0.url()).await.unwrap();
        let value = if writable { "off" } else { "on" };
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "ALTER SYSTEM SET default_transaction_read_only = {value}"
        )))
        .execute(&mut admin)
        .await
        .unwrap();
        sqlx::query("SELECT pg_reload_conf()")
            .execute(&mut admin)
            .await
            .unwrap();
        admin.close().await.ok();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    fn port(&self) -> u16 {
        self.0.port()
    }
}

fn url(nodes: &[&Node], attrs: &str) -> String {
    let hosts: Vec<String> = nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port()))
        .collect();
    format!(
        "postgres://postgres@{}/postgres?target_session_attrs={attrs}",
        hosts.join(",")
    )
}

async fn port_of(pool: &PgPool) -> Option<u16> {
    let port: i32 = sqlx::query_scalar("SELECT inet_server_port()")
        .fetch_one(pool)
        .await
        .ok()?;
    Some(port as u16)
}

/// Wait until `pool` answers from `port`.
async fn until_on(pool: &PgPool, port: u16, within: Duration, what: &str) {
    let started = Instant::now();
    loop {
        if port_of(pool).await == Some(port) {
            return;
        }
        assert!(
            started.elapsed() < within,
            "{what}: not on port {port} within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_multi_host_url_goes_to_the_host_that_fits_its_session_attrs() {
    let (a, b) = (Node::start().await, Node::start().await);
    a.set_writable(false).await;
    let writes = db::connect_with(&url(&[&a, &b], "read-write"), 2)
        .await
        .unwrap();
    assert_eq!(port_of(&writes).await, Some(b.port()));
    db::migrate(&writes)
        .await
        .expect("migrate on the writable host");
    let reads = db::connect_with(&url(&[&b, &a], "read-only"), 2)
        .await
        .unwrap();
    assert_eq!(port_of(&reads).await, Some(a.port()));
    let standby_first = db::connect_with(&url(&[&a, &b], "any"), 2).await.unwrap();
    assert_eq!(
        port_of(&standby_first).await,
        Some(a.port()),
        "any: the first host"
    );

    // No host fits: the error names each host and what it is.
    b.set_writable(false).await;
    let err = db::connect_with(&url(&[&a, &b], "read-write"), 2)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("127.0.0.1:{}", a.port())), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{}", b.port())), "{err}");
    assert!(err.contains("read-only"), "{err}");
    for pool in [writes, reads, standby_first] {
        pool.close().await;
    }
    a.0.stop().await.unwrap();
    b.0.stop().await.unwrap();
}

#[tokio::test]
async fn the_pools_follow_the_writable_host_through_a_switchover_and_a_lost_node() {
    let (a, b) = (Node::start().await, Node::start().await);
    b.set_writable(false).await;
    let base = db::connect_with(&url(&[&a, &b], "read-write"), 4)
        .await
        .unwrap();
    let limited = db::connect_limited(
        &base,
        &db::SessionLimits {
            lock_timeout: Duration::from_secs(2),
            statement_timeout: Duration::from_secs(5),
            idle_in_transaction_timeout: Duration::from_secs(5),
        },
    )
    .await
    .unwrap();
    assert_eq!(port_of(&base).await, Some(a.port()));
    assert_eq!(port_of(&limited).await, Some(a.port()));

    // Switchover: b takes writes, a stops taking them. Connections already open on a are
    // dropped, not reused.
    b.set_writable(true).await;
    a.set_writable(false).await;
    until_on(
        &base,
        b.port(),
        Duration::from_secs(10),
        "the pool after a switchover",
    )
    .await;
    until_on(
        &limited,
        b.port(),
        Duration::from_secs(10),
        "the derived pool",
    )
    .await;
    for _ in 0..8 {
        assert_eq!(
            port_of(&limited).await,
            Some(b.port()),
            "an old connection was reused"
        );
    }
    let limits: String = sqlx::query_scalar("SHOW lock_timeout")
        .fetch_one(&limited)
        .await
        .unwrap();
    assert_eq!(
        limits, "2s",
        "the derived pool keeps its session settings on the new host"
    );

    // The node that takes writes is lost; the other is promoted.
    a.set_writable(true).await;
    b.0.stop().await.unwrap();
    until_on(
        &base,
        a.port(),
        Duration::from_secs(15),
        "the pool after its node was lost",
    )
    .await;
    until_on(
        &limited,
        a.port(),
        Duration::from_secs(15),
        "the derived pool",
    )
    .await;
    base.close().await;
    limited.close().await;
    a.0.stop().await.unwrap();
}

#[tokio::test]
async fn migrate_takes_a_multi_host_url() {
    let (a, b) = (Node::start().await, Node::start().await);
    a.set_writable(false).await;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_matchmaker"));
    cmd.arg("migrate")
        .env("DATABASE_URL", url(&[&a, &b], "read-write"));
    let out = piped_within(&mut cmd, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let mut on_b = PgConnection::connect(&b.0.url()).await.unwrap();
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&mut on_b)
        .await
        .unwrap();
    assert!(applied > 0, "migrations applied on the writable host");
    on_b.close().await.ok();
    a.0.stop().await.unwrap();
    b.0.stop().await.unwrap();
}
