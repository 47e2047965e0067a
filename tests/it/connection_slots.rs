//! The daemon keeps its connections, on a private cluster of few slots: a client login
//! without a connection limit stops `matchmaker run` at start, with a message naming the
//! login and the fix, and nothing written; bounded, a hostile login holds every
//! connection it may (PostgreSQL refuses it one more) while the daemon, restarted,
//! connects and matches an honest login's players; with `[daemon] check_login_limits =
//! false` the daemon starts beside the unbounded login and says so in a warning.
//!
//! The daemon runs as a `matchmaker_daemon` login, so it gets no superuser's reserved
//! slot: what it has, the client limits left it.

use std::path::Path;
use std::time::Duration;

use matchmaker_testkit::command_line::{piped_within, text};
use matchmaker_testkit::fleet::{Replica, ReplicaSpec, write_config};
use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection, PgConnection, PgPool};

use crate::support::*;

/// `max_connections` of the test's cluster.
const SLOTS: u32 = 50;
/// PostgreSQL's default `superuser_reserved_connections`.
const SUPERUSER_RESERVED: u32 = 3;
/// The honest game backend's connection limit.
const HONEST_LIMIT: u32 = 4;

/// The daemon's connections without endpoints: its pool, the rounds' pool, the LISTEN
/// session.
fn daemon_needs() -> u32 {
    matchmaker::db::POOL_CONNECTIONS
        + matchmaker::db::LIMITED_POOL_CONNECTIONS
        + matchmaker::daemon::LISTEN_CONNECTIONS
}

/// What the hostile login may hold so that everything fits: 50 - 3 - 21 - 4 = 22.
fn hostile_limit() -> u32 {
    SLOTS - SUPERUSER_RESERVED - daemon_needs() - HONEST_LIMIT
}

/// Rounds start at 6 queued players; the leader looks every 200 ms.
const CONFIG: &str = "[daemon]\npoll_interval = \"200ms\"\nlease_ttl = \"3s\"\n\
                      lease_renew = \"1s\"\n\
                      [queues.q.round]\nevery = \"1h\"\nbudget = \"50ms\"\ntarget_pool = 6\n";

/// A private cluster of [`SLOTS`] slots, migrated, with the daemon's login, an honest
/// client login bounded to [`HONEST_LIMIT`], and `hostile` (bounded to `hostile` if
/// given). Returns the server, its superuser URL and a superuser pool of one connection
/// (a superuser's sessions take slots too: the test keeps to one).
async fn cluster(
    hostile: Option<u32>,
) -> (matchmaker::db::local_pg::LocalPostgres, String, PgPool) {
    let slots = SLOTS.to_string();
    let (server, url, migrated) = own_server_with(&[("max_connections", &slots)]).await;
    let hostile = hostile.map_or(-1, i64::from);
    for sql in [
        "CREATE ROLE slots_daemon LOGIN IN ROLE matchmaker_daemon".to_string(),
        format!(
            "CREATE ROLE honest LOGIN CONNECTION LIMIT {HONEST_LIMIT} IN ROLE matchmaker_client"
        ),
        format!("CREATE ROLE hostile LOGIN CONNECTION LIMIT {hostile} IN ROLE matchmaker_client"),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&migrated)
            .await
            .unwrap();
    }
    migrated.close().await;
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap();
    (server, url, admin)
}

/// `url` logged in as `login` (the private cluster trusts local logins).
fn as_login(url: &str, login: &str) -> String {
    url.replacen("postgres://postgres@", &format!("postgres://{login}@"), 1)
}

/// What the daemon wrote: published queues, registered replicas, leases.
async fn daemon_rows(admin: &PgPool) -> i64 {
    count(
        admin,
        "SELECT (SELECT count(*) FROM queues) + (SELECT count(*) FROM replicas)
              + (SELECT count(*) FROM leases)",
    )
    .await
}

fn replica(url: &str, dir: &Path, toml: &str) -> Replica {
    let config = write_config(dir, toml).unwrap();
    Replica::start(ReplicaSpec {
        exe: env!("CARGO_BIN_EXE_matchmaker").into(),
        database_url: as_login(url, "slots_daemon"),
        config,
        name: "slots".into(),
        clock_skew: None,
        log_dir: dir.to_path_buf(),
    })
    .unwrap()
}

/// Waits until the daemon leads `q` (its lease live) and LISTENs.
async fn wait_until_leading(admin: &PgPool, daemon: &mut Replica) {
    let within = Duration::from_secs(60);
    let start = std::time::Instant::now();
    loop {
        let leading = count(
            admin,
            "SELECT count(*) FROM leases WHERE queue = 'q' AND expires_at > now()",
        )
        .await
            == 1;
        let listening = count(
            admin,
            "SELECT count(*) FROM pg_stat_activity WHERE usename = 'slots_daemon'
                AND query = 'LISTEN \"matchmaker_enqueue\"'",
        )
        .await
            == 1;
        if leading && listening {
            return;
        }
        assert!(
            daemon.check_alive(),
            "the daemon exited:\n{}",
            daemon.log_tail(20)
        );
        assert!(
            start.elapsed() < within,
            "the daemon did not lead q within {within:?}:\n{}",
            daemon.log_tail(20)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_unbounded_client_login_stops_the_daemon_at_start_naming_the_fix() {
    let (server, url, admin) = cluster(None).await;
    // Members the check must also find: through a NOLOGIN team role granted to a NOINHERIT
    // login, and through matchmaker_server. Logins it must leave out: a superuser and
    // an operator.
    for sql in [
        "CREATE ROLE team NOLOGIN IN ROLE matchmaker_client",
        "CREATE ROLE sneaky LOGIN NOINHERIT IN ROLE team",
        "CREATE ROLE fleet LOGIN CONNECTION LIMIT 2 IN ROLE matchmaker_server",
        "CREATE ROLE root_too LOGIN SUPERUSER IN ROLE matchmaker_client",
        "CREATE ROLE dashboards LOGIN IN ROLE matchmaker_ops",
    ] {
        sqlx::query(sql).execute(&admin).await.unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), CONFIG).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_matchmaker"));
    cmd.args(["run", "--no-migrate", "--config"])
        .arg(&config)
        .args(["--database-url", &as_login(&url, "slots_daemon")])
        .env_remove("DATABASE_URL")
        .env_remove("MATCHMAKER_CONFIG")
        .env_remove("MATCHMAKER_METRICS_ADDR")
        .env("NO_COLOR", "1");
    let out = piped_within(&mut cmd, Duration::from_secs(60));
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "the daemon started:\n{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("no error line:\n{stderr}"));
    println!("the refusal: {error}");
    // The logins without a limit, by name; none of the others.
    assert!(
        error.contains("hostile, sneaky are logins of matchmaker_client or matchmaker_server with no connection limit"),
        "{error}"
    );
    for left_out in ["root_too", "dashboards", "slots_daemon"] {
        assert!(!error.contains(left_out), "{left_out} named: {error}");
    }
    // The arithmetic: honest 4 + fleet 2, the daemon's 21, the reserved 3, of 50.
    let needs = daemon_needs();
    let taken = HONEST_LIMIT + 2 + needs + SUPERUSER_RESERVED;
    assert!(
        error.contains(&format!(
            "sum to {}, the daemon needs {needs} connections",
            HONEST_LIMIT + 2
        )),
        "{error}"
    );
    assert!(
        error.contains(&format!("= {taken} of max_connections {SLOTS}")),
        "{error}"
    );
    // The fix: the room left (50 - 3 - 21 = 26, less 6 bounded) shared by the two.
    let share = (SLOTS - SUPERUSER_RESERVED - needs - HONEST_LIMIT - 2) / 2;
    for login in ["hostile", "sneaky"] {
        assert!(
            error.contains(&format!("ALTER ROLE {login} CONNECTION LIMIT {share};")),
            "{error}"
        );
    }
    assert!(!error.contains("ALTER ROLE honest"), "{error}");
    assert!(error.contains("check_login_limits = false"), "{error}");
    // Nothing written.
    assert_eq!(
        daemon_rows(&admin).await,
        0,
        "the refused daemon wrote rows"
    );

    // The fix as printed lets it start.
    for login in ["hostile", "sneaky"] {
        let sql = format!("ALTER ROLE {login} CONNECTION LIMIT {share}");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&admin)
            .await
            .unwrap();
    }
    let mut daemon = replica(&url, dir.path(), CONFIG);
    wait_until_leading(&admin, &mut daemon).await;
    daemon.terminate(Duration::from_secs(10));
    admin.close().await;
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_bounded_hostile_login_holding_all_it_may_leaves_the_daemon_its_connections() {
    let _load = crate::support::TIMING.read().await;
    let limit = hostile_limit();
    let (server, url, admin) = cluster(Some(limit)).await;
    // The hostile login takes every connection it may, then asks for more.
    let mut held = Vec::new();
    for _ in 0..limit {
        held.push(
            PgConnection::connect(&as_login(&url, "hostile"))
                .await
                .unwrap(),
        );
    }
    let refused = PgConnection::connect(&as_login(&url, "hostile"))
        .await
        .unwrap_err();
    let (code, message) = db_error(&refused);
    assert_eq!(code, "53300", "{message}");
    assert!(
        message.contains("too many connections for role \"hostile\""),
        "{message}"
    );

    // The daemon, started now, gets its connections and leads.
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = replica(&url, dir.path(), CONFIG);
    wait_until_leading(&admin, &mut daemon).await;
    assert_eq!(
        daemon.log_lines_containing("client and server logins leave the daemon its connections"),
        1,
        "{}",
        daemon.log_tail(20)
    );

    // The honest login's players are matched while the hostile login holds its all.
    let honest = PgPoolOptions::new()
        .max_connections(2)
        .connect(&as_login(&url, "honest"))
        .await
        .unwrap();
    for i in 0..6 {
        enqueue(&honest, "q", &format!("h{i}"), 1500.0).await;
    }
    let matched = "SELECT count(*) FROM match_players mp JOIN queue_entries e USING (entry_id)
                    WHERE e.owner = 'honest'";
    let start = std::time::Instant::now();
    while count(&admin, matched).await < 6 {
        assert!(
            daemon.check_alive(),
            "the daemon exited:\n{}",
            daemon.log_tail(20)
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "honest's players not matched within 60 s:\n{}",
            daemon.log_tail(20)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let hostile_sessions = count(
        &admin,
        "SELECT count(*) FROM pg_stat_activity WHERE usename = 'hostile'",
    )
    .await;
    assert_eq!(
        hostile_sessions,
        i64::from(limit),
        "the hostile login's sessions"
    );
    assert!(
        PgConnection::connect(&as_login(&url, "hostile"))
            .await
            .is_err(),
        "the hostile login got one more"
    );

    honest.close().await;
    daemon.terminate(Duration::from_secs(10));
    for conn in held {
        conn.close().await.ok();
    }
    admin.close().await;
    server.stop().await.unwrap();
}

#[tokio::test]
async fn with_the_check_off_the_daemon_starts_beside_an_unbounded_login_and_warns() {
    let (server, url, admin) = cluster(None).await;
    let dir = tempfile::tempdir().unwrap();
    let toml = CONFIG.replacen("[daemon]\n", "[daemon]\ncheck_login_limits = false\n", 1);
    let mut daemon = replica(&url, dir.path(), &toml);
    wait_until_leading(&admin, &mut daemon).await;
    let log = std::fs::read_to_string(daemon.log_path()).unwrap();
    let warning = log
        .lines()
        .find(|l| l.contains("WARN") && l.contains("no connection limit"))
        .unwrap_or_else(|| panic!("no warning:\n{log}"));
    assert!(
        warning.contains("hostile is a login of matchmaker_client or matchmaker_server"),
        "{warning}"
    );
    assert!(
        warning.contains("ALTER ROLE hostile CONNECTION LIMIT"),
        "{warning}"
    );
    assert!(
        warning.contains("Starting anyway: [daemon] check_login_limits = false."),
        "{warning}"
    );
    assert_eq!(
        daemon.log_lines_containing("leave the daemon its connections"),
        0,
        "{log}"
    );
    daemon.terminate(Duration::from_secs(10));
    admin.close().await;
    server.stop().await.unwrap();
}
