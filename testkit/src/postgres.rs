//! A real PostgreSQL for the database tests, and a fresh database of its own per test.
//!
//! `DATABASE_URL` set: tests use that server. Otherwise ONE private server is started from
//! the local binaries the first time a test needs it (shared by the whole test binary) and
//! stopped when the binary exits; its directory lives under the system temp dir (see
//! [`server_parent`]: never in the checkout, which the `postgres` user of a root run may
//! not be able to enter), and leftovers of a killed earlier run are removed at the next
//! start. Each test gets its own fresh
//! database with the migrations applied, so tests run in parallel without seeing each
//! other. Tests never skip: without binaries or a server they fail with the reason.

use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use matchmaker::db::local_pg::LocalPostgres;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};

/// A fresh, migrated database of its own for one test.
pub struct TestDb {
    pub pool: PgPool,
    pub options: PgConnectOptions,
    pub name: String,
}

impl TestDb {
    /// Another pool on the same database (a second daemon, a client).
    pub async fn new_pool(&self, max_connections: u32) -> PgPool {
        PgPoolOptions::new()
            .max_connections(max_connections)
            .connect_with(self.options.clone())
            .await
            .expect("connect to the test database")
    }

    /// `postgres://...` of this test's database.
    pub fn url(&self) -> String {
        let server = server_url();
        let (base, _) = server.rsplit_once('/').expect("URL has a database path");
        format!("{base}/{}", self.name)
    }

    /// Drops the database now (otherwise it goes when the test binary exits).
    pub async fn drop_now(self) {
        self.pool.close().await;
        let server = PgConnectOptions::from_str(server_url()).expect("valid server URL");
        let mut admin = server.connect().await.expect("connect to the test server");
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&mut admin)
            .await
            .expect("drop the test database");
        admin.close().await.ok();
    }

    /// [`TestDb::url`] logged in as a login made by [`login_in_role`].
    pub fn url_as(&self, login: &str) -> String {
        let url = self.url();
        let (scheme, rest) = url.split_once("://").expect("URL has a scheme");
        let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        format!("{scheme}://{login}:{}@{host}", login_password(login))
    }
}

/// A new database on the shared test server, migrated.
pub async fn fresh_db() -> TestDb {
    let tdb = unmigrated_db().await;
    matchmaker::db::migrate(&tdb.pool)
        .await
        .expect("migrations apply");
    tdb
}

/// A new, empty database on the shared test server (no migration applied).
pub async fn unmigrated_db() -> TestDb {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "mm_t_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let server = PgConnectOptions::from_str(server_url()).expect("valid server URL");
    let mut admin = server
        .connect()
        .await
        .unwrap_or_else(|e| panic!("connect to test PostgreSQL {}: {e}", server_url()));
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await
        .expect("create the test database");
    CREATED.lock().unwrap().push(name.clone());
    crate::time_limit::limit_statements(&mut admin, &name).await;
    admin.close().await.ok();
    let options = server.database(&name);
    let pool = PgPoolOptions::new()
        .max_connections(8)
        .connect_with(options.clone())
        .await
        .expect("connect to the test database");
    TestDb {
        pool,
        options,
        name,
    }
}

/// The server all tests of this binary share.
pub fn server_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var("DATABASE_URL") {
            // Someone else's server: drop our databases when the binary exits.
            // SAFETY: atexit is the C library's, and the callback never unwinds.
            unsafe { atexit(drop_databases_at_exit) };
            return url;
        }
        let parent = server_parent();
        remove_stale_servers(&parent);
        let slots = TEST_SERVER_MAX_CONNECTIONS.to_string();
        let server = LocalPostgres::start_temporary_in_blocking_with(
            &parent,
            &[("max_connections", &slots)],
        )
        .unwrap_or_else(|e| {
            panic!("no DATABASE_URL and cannot start a private PostgreSQL for tests: {e}")
        });
        let url = server.url();
        *SERVER.lock().unwrap() = Some(server);
        // Statics are never dropped: stop the server when the test binary exits.
        // SAFETY: atexit is the C library's, and the callback never unwinds.
        unsafe { atexit(stop_server_at_exit) };
        url
    })
}

static SERVER: Mutex<Option<LocalPostgres>> = Mutex::new(None);

/// `max_connections` of the server the tests share. Its client and server logins (one
/// or more per test, each with a connection limit, none dropped before the binary
/// exits) add up over a run, and a daemon started by a test refuses to start unless
/// their limits, its own connections and the reserved slots fit in it
/// (`matchmaker::db::login_limits`); a few hundred logins of a few connections each fit.
pub const TEST_SERVER_MAX_CONNECTIONS: u32 = 2000;

/// The connection limit of a client or server login made by [`login_in_role`].
pub const TEST_LOGIN_CONNECTIONS: u32 = 6;

/// Connections a login made with a pool may open beside its pool's (a LISTEN session, a
/// connection of its own from [`connect_as`], a transaction held open).
pub const LOGIN_SPARE_CONNECTIONS: u32 = 3;

/// The directory of the shared server: `base_dir` of the private server, `None` when
/// the tests use DATABASE_URL.
pub fn server_base_dir() -> Option<std::path::PathBuf> {
    server_url();
    let server = SERVER.lock().unwrap();
    server.as_ref().map(|s| s.base_dir().to_path_buf())
}

/// Where the test servers of this user live: `<system temp dir>/matchmaker-it-pg-<uid>`,
/// mode 0755 so that the `postgres` user of a root run can pass through to its own 0700
/// server directory inside. Not under the target dir: a checkout under /root or in a
/// 0700 `mktemp -d` folder is closed to that user (initdb: Permission denied). The
/// directory must be ours (a name in a shared /tmp could be planted by someone else).
pub fn server_parent() -> std::path::PathBuf {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let uid = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(0);
    let parent = std::env::temp_dir().join(format!("matchmaker-it-pg-{uid}"));
    match std::fs::create_dir(&parent) {
        Ok(()) => std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o755))
            .expect("chmod the test server directory"),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => panic!("create the test server directory {}: {e}", parent.display()),
    }
    let meta = std::fs::symlink_metadata(&parent).expect("stat the test server directory");
    assert!(
        meta.is_dir() && meta.uid() == uid,
        "{} is not a directory of uid {uid}: remove it, or set TMPDIR elsewhere",
        parent.display()
    );
    parent
}

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
}

extern "C" fn stop_server_at_exit() {
    let server = std::panic::catch_unwind(|| SERVER.lock().ok().and_then(|mut s| s.take()));
    if let Ok(Some(mut server)) = server {
        let _ = server.stop_blocking();
    }
}

/// Databases this binary created (dropped at exit on a DATABASE_URL server).
static CREATED: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Login roles this binary created (dropped at exit on a DATABASE_URL server).
static CREATED_ROLES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A new LOGIN role that is a member of `matchmaker_client` and nothing else (a studio's
/// game backend), and a pool of `max_connections` connected as it to this test's
/// database. Returns the role's name (the `owner` of the entries it enqueues) and the pool.
pub async fn client_login(tdb: &TestDb, max_connections: u32) -> (String, PgPool) {
    login_pool(tdb, "client", "matchmaker_client", max_connections).await
}

/// A new LOGIN role in `matchmaker_server` and nothing else (a game server: backfill for
/// its sessions), and a pool connected as it; as [`client_login`].
pub async fn server_login(tdb: &TestDb, max_connections: u32) -> (String, PgPool) {
    login_pool(tdb, "server", "matchmaker_server", max_connections).await
}

/// A new LOGIN role in both `matchmaker_client` and `matchmaker_server` (a game backend
/// that runs its own servers), and a pool connected as it.
pub async fn client_server_login(tdb: &TestDb, max_connections: u32) -> (String, PgPool) {
    let groups = "matchmaker_client, matchmaker_server";
    login_pool(tdb, "backend", groups, max_connections).await
}

async fn login_pool(tdb: &TestDb, kind: &str, groups: &str, max: u32) -> (String, PgPool) {
    let max_connections = max;
    let limit = max_connections + LOGIN_SPARE_CONNECTIONS;
    let name = login_in_role_limited(tdb, kind, groups, Some(limit)).await;
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .connect_with(
            tdb.options
                .clone()
                .username(&name)
                .password(&login_password(&name)),
        )
        .await
        .expect("connect as the client login");
    let user: String = sqlx::query_scalar("SELECT session_user::text")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(user, name, "the pool is connected as the client login");
    (name, pool)
}

/// A new LOGIN role that is a member of `matchmaker_ops` and nothing else (an operator,
/// a dashboard). Returns its name; [`TestDb::url_as`] connects as it.
pub async fn ops_login(tdb: &TestDb) -> String {
    login_in_role(tdb, "ops", "matchmaker_ops").await
}

/// Creates a LOGIN role `mm_{kind}_...` (unique to this test binary) in `group`; its
/// password is [`login_password`]. Dropped at exit on a DATABASE_URL server. A login in
/// `matchmaker_client` or `matchmaker_server` gets a connection limit of
/// [`TEST_LOGIN_CONNECTIONS`], as a deployment bounds it (docs/operations.md, "Bounding
/// client logins"): the daemon refuses to start beside an unbounded one.
pub async fn login_in_role(tdb: &TestDb, kind: &str, group: &str) -> String {
    let bounded = group.contains("matchmaker_client") || group.contains("matchmaker_server");
    let limit = bounded.then_some(TEST_LOGIN_CONNECTIONS);
    login_in_role_limited(tdb, kind, group, limit).await
}

/// [`login_in_role`] with the connection limit given (`None`: none).
pub async fn login_in_role_limited(
    tdb: &TestDb,
    kind: &str,
    group: &str,
    limit: Option<u32>,
) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "mm_{kind}_{}_{}",
        tdb.name.trim_start_matches("mm_t_"),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let password = login_password(&name);
    let limit = limit.map_or(-1, i64::from);
    let sql = format!(
        "CREATE ROLE {name} LOGIN PASSWORD '{password}' CONNECTION LIMIT {limit} IN ROLE {group}"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(&tdb.pool)
        .await
        .expect("create a login role");
    CREATED_ROLES.lock().unwrap().push(name.clone());
    name
}

/// Sets `login`'s connection limit to `limit`: for a test whose login opens more
/// sessions of its own than its pool and [`LOGIN_SPARE_CONNECTIONS`].
pub async fn allow_connections(tdb: &TestDb, login: &str, limit: u32) {
    let sql = format!("ALTER ROLE {login} CONNECTION LIMIT {limit}");
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(&tdb.pool)
        .await
        .expect("set the login's connection limit");
}

/// The password of a login made by [`login_in_role`].
pub fn login_password(name: &str) -> String {
    format!("pw-{name}")
}

/// One connection of its own as `login` (a session outside any pool: to hold a
/// transaction open, LISTEN, or count against the login's connection limit).
pub async fn connect_as(tdb: &TestDb, login: &str) -> Result<sqlx::PgConnection, sqlx::Error> {
    sqlx::PgConnection::connect_with(
        &tdb.options
            .clone()
            .username(login)
            .password(&login_password(login)),
    )
    .await
}

/// A session of `login` that LISTENs on `channel` and then stays inside a transaction:
/// PostgreSQL keeps every notification sent from then on until it reads, which it never
/// does. Close it to free the notification queue.
pub async fn stuck_listener(tdb: &TestDb, login: &str, channel: &str) -> sqlx::PgConnection {
    let mut stuck = connect_as(tdb, login).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("LISTEN \"{channel}\"")))
        .execute(&mut stuck)
        .await
        .unwrap();
    sqlx::query("BEGIN").execute(&mut stuck).await.unwrap();
    sqlx::query("SELECT 1").execute(&mut stuck).await.unwrap();
    stuck
}

/// SQLSTATE and message of a database error (panics on any other error).
pub fn db_error(e: &sqlx::Error) -> (String, String) {
    match e {
        sqlx::Error::Database(d) => (
            d.code().map(|c| c.to_string()).unwrap_or_default(),
            d.message().to_string(),
        ),
        other => panic!("expected a database error, got {other}"),
    }
}

extern "C" fn drop_databases_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let names = std::mem::take(&mut *CREATED.lock().ok()?);
        let roles = std::mem::take(&mut *CREATED_ROLES.lock().ok()?);
        // A fresh thread: the exiting main thread's thread-locals may be gone already.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let options = PgConnectOptions::from_str(server_url()).ok()?;
                let mut admin = options.connect().await.ok()?;
                for name in names {
                    let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                    let _ = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .execute(&mut admin)
                        .await;
                }
                // Client logins are the cluster's; they own nothing once the databases
                // are gone.
                for role in roles {
                    let sql = format!("DROP ROLE IF EXISTS {role}");
                    let _ = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .execute(&mut admin)
                        .await;
                }
                admin.close().await.ok()
            })
        })
        .join()
        .ok()
        .flatten()
    });
}

/// Servers of earlier test runs that were killed before they could stop their server:
/// directories are named `matchmaker-pg-<pid>-...`; a dead pid means a leftover.
fn remove_stale_servers(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(pid) = name
            .strip_prefix("matchmaker-pg-")
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        let pid_file = entry.path().join("data").join("postmaster.pid");
        if let Some(postmaster) = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|s| s.lines().next().map(str::to_string))
        {
            let _ = std::process::Command::new("kill")
                .args(["-QUIT", &postmaster])
                .status();
        }
        let _ = std::fs::remove_dir_all(entry.path());
    }
}

/// A private PostgreSQL of the test's own, for tests that stop and restart it under a
/// daemon: migrated, and with synchronous commits (the shared test server runs without;
/// an immediate stop would forget commits the clients were told about). Returns the
/// server, its URL and a pool of 4 on it.
pub async fn own_server() -> (LocalPostgres, String, PgPool) {
    own_server_with(&[]).await
}

/// [`own_server`] with server settings of its own (`("max_connections", "50")`: a
/// cluster with few connection slots).
pub async fn own_server_with(settings: &[(&str, &str)]) -> (LocalPostgres, String, PgPool) {
    let server = LocalPostgres::start_temporary_with(settings)
        .await
        .expect("private server");
    let url = server.url();
    let admin = matchmaker::db::connect_with(&url, 1).await.unwrap();
    sqlx::query("ALTER DATABASE postgres SET synchronous_commit = on")
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
    let db = matchmaker::db::connect_with(&url, 4).await.unwrap();
    matchmaker::db::migrate(&db).await.unwrap();
    (server, url, db)
}
