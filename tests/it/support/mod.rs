//! Shared test support: a real PostgreSQL for the database tests.
//!
//! `DATABASE_URL` set: tests use that server. Otherwise ONE private server is started from
//! the local binaries the first time a test needs it (shared by the whole test binary) and
//! stopped when the binary exits; its directory lives under the system temp dir (see
//! [`server_parent`]: never in the checkout, which the `postgres` user of a root run may
//! not be able to enter), and leftovers of a killed earlier run are removed at the next
//! start. Each test gets its own fresh
//! database with the migrations applied, so tests run in parallel without seeing each
//! other. Tests never skip: without binaries or a server they fail with the reason.

#![allow(dead_code)]

use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use matchmaker::db::local_pg::LocalPostgres;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};

pub mod time_limit;

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
    time_limit::limit_statements(&mut admin, &name).await;
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
        let server = LocalPostgres::start_temporary_in_blocking(&parent).unwrap_or_else(|e| {
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
    let name = login_in_role(tdb, kind, groups).await;
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
/// password is [`login_password`]. Dropped at exit on a DATABASE_URL server.
pub async fn login_in_role(tdb: &TestDb, kind: &str, group: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "mm_{kind}_{}_{}",
        tdb.name.trim_start_matches("mm_t_"),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let password = login_password(&name);
    let sql = format!("CREATE ROLE {name} LOGIN PASSWORD '{password}' IN ROLE {group}");
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(&tdb.pool)
        .await
        .expect("create a login role");
    CREATED_ROLES.lock().unwrap().push(name.clone());
    name
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

// ---- Round and daemon helpers ----------------------------------------------------------

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use matchmaker::config::{Config, QueueConfig};
use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::round::RoundRunner;
use matchmaker::daemon::worker::QueueWorker;
use matchmaker_optimizer::Player;

/// A fixed start time for manual clocks.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap()
}

pub fn secs(s: u64) -> std::time::Duration {
    std::time::Duration::from_secs(s)
}

/// A solo player with a skill and a latency to one region.
pub fn player(id: &str, skill: f64, enqueued_at: DateTime<Utc>) -> Player {
    Player {
        id: id.to_string(),
        party: None,
        skill,
        skill_sigma: None,
        enqueued_at: Some(enqueued_at),
        latencies: [("eu".to_string(), 30.0)].into_iter().collect(),
        peer_pings: Default::default(),
        roles: Vec::new(),
        side: None,
        ..Default::default()
    }
}

/// `n` players named `{prefix}{i}`, enqueued at `at`.
pub async fn enqueue_n(db: &PgPool, queue: &str, prefix: &str, n: usize, at: DateTime<Utc>) {
    let players: Vec<Player> = (0..n)
        .map(|i| player(&format!("{prefix}{i}"), 1000.0 + 37.0 * i as f64, at))
        .collect();
    matchmaker::db::enqueue::enqueue_many(db, queue, &players, at)
        .await
        .expect("enqueue");
}

/// A config with one queue `q` whose round table is `round` (TOML lines). The solver
/// budget is short unless `round` sets one (the core uses all of its budget).
pub fn queue_config(round: &str) -> Arc<QueueConfig> {
    let budget = if round.contains("budget") {
        ""
    } else {
        "budget = \"50ms\"\n"
    };
    let config = Config::from_toml_str(&format!("[queues.q]\n[queues.q.round]\n{budget}{round}\n"))
        .expect("test config is valid");
    Arc::new(config.queues["q"].clone())
}

/// A worker for queue `q` on the manual clock (lease TTL 15 s).
pub fn worker(
    db: &PgPool,
    clock: &ManualClock,
    holder: &str,
    config: Arc<QueueConfig>,
) -> QueueWorker {
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    QueueWorker::new("q", holder, runner, config, secs(15))
}

/// player_id -> status of the latest entry.
pub async fn statuses(db: &PgPool, queue: &str) -> HashMap<String, String> {
    sqlx::query_as::<_, (String, String)>(
        "SELECT player_id, status FROM player_status WHERE queue = $1",
    )
    .bind(queue)
    .fetch_all(db)
    .await
    .unwrap()
    .into_iter()
    .collect()
}

pub async fn count(db: &PgPool, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(db).await.unwrap()
}

/// The invariant of every test: no entry in two matches, every matched entry in exactly
/// one match, no player matched in two matches of one round.
pub async fn assert_nobody_matched_twice(db: &PgPool) {
    let bad = count(
        db,
        "SELECT count(*) FROM queue_entries e
          WHERE (e.status = 'matched') <> EXISTS (
                SELECT 1 FROM match_players mp WHERE mp.entry_id = e.entry_id)",
    )
    .await;
    assert_eq!(bad, 0, "matched entries and match_players disagree");
    let twice = count(
        db,
        "SELECT count(*) FROM (SELECT m.round_id, e.owner, mp.player_id FROM match_players mp
           JOIN matches m USING (match_id) JOIN queue_entries e USING (entry_id)
          GROUP BY 1, 2, 3 HAVING count(*) > 1) x",
    )
    .await;
    assert_eq!(twice, 0, "a player in two matches of one round");
}

/// The client contract's invariants over the whole database (every queue), for the
/// contract, abuse, lifecycle and fault suites. Call it as a role that sees every row
/// (the test's superuser pool) after each group of rounds. It assumes what those tests
/// arrange: each player is matched at most once (tests that re-queue a player after a
/// match must not use it).
///
/// * [`assert_nobody_matched_twice`]: entries and match_players agree;
/// * no player in two matches, across all queues (one match per player);
/// * no match holds an entry that is not `matched` (cancelled, expired, withdrawn,
///   rejected, queued), and a matched entry's `match_id` is its match;
/// * no split party: a party (one `enqueue_party` call, `party_key`) with a matched member
///   has every member matched, in that one match; parties written without a key
///   (`party_id` only) are never spread over two matches of one round;
/// * every entry that left the queue without a match (cancelled, rejected, expired,
///   withdrawn) has a reason; a withdrawn entry names the match that won.
///
/// Not checked: that all members of a party share one final status. A party mate still
/// `queued` after a member left is closed by the next sweep of its queue (the snapshot
/// never takes an incomplete party meanwhile), and a cancel racing that sweep may end
/// the rest of the party `cancelled` next to a `withdrawn` member.
pub async fn assert_contract_invariants(db: &PgPool) {
    assert_nobody_matched_twice(db).await;

    let twice: Vec<(String, i64)> = sqlx::query_as(
        "SELECT mp.player_id, count(DISTINCT mp.match_id) FROM match_players mp
           JOIN queue_entries e USING (entry_id)
          GROUP BY e.owner, mp.player_id HAVING count(DISTINCT mp.match_id) > 1
          ORDER BY mp.player_id",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert!(
        twice.is_empty(),
        "players in more than one match: {twice:?}"
    );

    let wrong: Vec<(i64, String, String, Option<i64>)> = sqlx::query_as(
        "SELECT mp.match_id, mp.player_id, e.status, e.match_id
           FROM match_players mp JOIN queue_entries e USING (entry_id)
          WHERE e.status <> 'matched' OR e.match_id IS DISTINCT FROM mp.match_id
          ORDER BY 1, 2",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert!(
        wrong.is_empty(),
        "matches holding entries that are not matched into them \
         (match, player, entry status, entry match): {wrong:?}"
    );

    let split: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT party_key, string_agg(player_id || ':' || status, ' ' ORDER BY player_id),
                string_agg(coalesce(match_id::text, '-'), ' ' ORDER BY player_id)
           FROM queue_entries
          WHERE party_key IS NOT NULL
          GROUP BY party_key
         HAVING bool_or(status = 'matched')
            AND (NOT bool_and(status = 'matched') OR count(DISTINCT match_id) <> 1
                 OR count(*) <> max(party_size))
          ORDER BY 1",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert!(
        split.is_empty(),
        "split parties (party_key, members:status, match ids): {split:?}"
    );
    let spread: Vec<(Option<i64>, String)> = sqlx::query_as(
        "SELECT round_id, party_id FROM queue_entries
          WHERE status = 'matched' AND party_id IS NOT NULL AND party_key IS NULL
          GROUP BY round_id, party_id HAVING count(DISTINCT match_id) > 1
          ORDER BY 1, 2",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert!(
        spread.is_empty(),
        "parties spread over two matches of one round (round, party): {spread:?}"
    );

    let silent: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT entry_id, player_id, status FROM queue_entries
          WHERE (status NOT IN ('queued', 'matched') AND coalesce(reject_reason, '') = '')
             OR (status = 'withdrawn' AND match_id IS NULL)
          ORDER BY 1",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert!(
        silent.is_empty(),
        "entries that left the queue without a reason (or a withdrawn one without the \
         winning match): {silent:?}"
    );
}

/// Match ids of one player: as match_players says (expected), as recent_matches holds.
pub type MatchIds = Option<Vec<i64>>;

/// `recent_matches` says what `match_players` says: per queue and
/// player, the ids of their last `depth` matches (newest by `matched_at`), oldest first,
/// and no row for a player without a match.
pub async fn assert_recent_matches_agree(db: &PgPool, depth: usize) {
    let disagree: Vec<(String, String, MatchIds, MatchIds)> = sqlx::query_as(
        "WITH expected AS (
             SELECT queue, player_id, array_agg(match_id ORDER BY match_id) AS ids
               FROM (SELECT queue, player_id, match_id,
                            row_number() OVER (PARTITION BY queue, player_id
                                               ORDER BY matched_at DESC, match_id DESC) AS n
                       FROM match_players) x
              WHERE n <= $1
              GROUP BY queue, player_id)
         SELECT queue, player_id, e.ids, r.match_ids
           FROM expected e FULL JOIN recent_matches r USING (queue, player_id)
          WHERE e.ids IS DISTINCT FROM r.match_ids
          ORDER BY 1, 2",
    )
    .bind(depth as i64)
    .fetch_all(db)
    .await
    .unwrap();
    assert!(
        disagree.is_empty(),
        "recent_matches disagrees with match_players (queue, player, expected, held): {disagree:?}"
    );
}

/// Keeps timed tests apart from load. Tests that assert wall-clock bounds (lease
/// takeovers, solve budgets, a peak evening's lateness, windows timed on the database
/// clock) take it exclusively (`TIMING.write()`), so no other timed test and no
/// load-generating test runs beside them; tests that generate load (daemon replicas,
/// the demo, building the example client, hundreds of solves) take it shared
/// (`TIMING.read()`), so they still run beside each other and beside the untimed tests.
/// On a 2-core CI machine a hand-over timed while other replicas keep both cores busy
/// measures the machine, not the daemon.
pub static TIMING: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());
