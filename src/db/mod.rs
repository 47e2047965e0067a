//! The PostgreSQL shell around the core: connection, migrations, the snapshot of a round,
//! its commit, leases and the queue state the countdown is made of.
//!
//! Every query takes the current time as a parameter (`now`) instead of reading the
//! database clock, so tests drive rounds, leases and countdowns with an injected clock.

pub mod access;
pub mod backfill;
pub mod commit;
pub mod enqueue;
pub mod explain;
pub mod lease;
pub mod local_pg;
pub mod login_limits;
pub mod notify;
pub mod queue_state;
pub mod queues;
pub mod ratings;
pub mod ready_check;
pub mod replicas;
pub mod report;
pub mod retention;
pub mod round_input;
pub mod round_record;
pub mod round_snapshot;
pub mod servers;
pub mod snapshot;
pub mod status;
pub mod sync_standby;
pub mod target;
pub mod tickets;

pub use commit::{CommitReport, RoundTrigger, commit_round};
pub use lease::{Lease, acquire_lease, release_lease, renew_lease};
pub use queue_state::{
    PoolStats, QueueStateRow, WaitingFor, entries_since, pool_stats, write_queue_state,
};
pub use round_input::{BackfillSessions, InputLimits, RoundInput, read_round_input};
pub use round_record::{BackfillFill, BackfillRecord, RoundConfig, RoundRecord, WinModel};
pub use round_snapshot::{BudgetRecord, ReplayRecord, StoredRound, load_round, rounds_between};
pub use snapshot::{PoolIds, QueuedEntry, Snapshot, SnapshotLimits, snapshot_pool, snapshot_round};

use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use thiserror::Error;

/// Errors at the database boundary.
///
/// No variant exposes its sqlx error as `source()`: the message already renders it (as
/// [`describe_sql_error`] does), so printing the cause chain would repeat it.
#[derive(Debug, Error)]
pub enum DbError {
    #[error("cannot connect to PostgreSQL at {url}: {}", describe_sql_error(.error))]
    Connect { url: String, error: sqlx::Error },
    #[error("database migration failed: {}", describe_migrate_error(.0))]
    Migrate(sqlx::migrate::MigrateError),
    /// The round's lease expired or changed hands: the round was not committed.
    #[error("lease of queue {queue} (term {term}) is no longer held: round not committed")]
    LeaseLost { queue: String, term: i64 },
    /// The database lacks migrations this binary needs (see [`check_schema`]).
    #[error("{}", schema_behind_text(*.latest_applied, *.latest, .missing))]
    SchemaBehind {
        /// The highest of this binary's migrations that is applied; `None`: none is.
        latest_applied: Option<i64>,
        /// The highest migration embedded in this binary.
        latest: i64,
        /// This binary's migrations the database lacks, ascending.
        missing: Vec<i64>,
    },
    #[error("{}", describe_sql_error(.0))]
    Sql(sqlx::Error),
    /// The database did not answer within the time a pass of the daemon may wait (see
    /// [`answered_within`]): the connection is taken for lost.
    #[error(
        "no answer from the database within {waited:?}: the connection is taken for lost \
         (a cut network route, a lost host); the next attempt opens a new one"
    )]
    Unanswered { waited: Duration },
    /// A stored record this build cannot use (a round without a snapshot, a snapshot of an
    /// unknown format); the message says which and why.
    #[error("{0}")]
    Invalid(String),
}

// By hand rather than `#[from]`, which would also make the error the `source()`.
impl From<sqlx::Error> for DbError {
    fn from(e: sqlx::Error) -> Self {
        DbError::Sql(e)
    }
}

impl From<sqlx::migrate::MigrateError> for DbError {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        DbError::Migrate(e)
    }
}

const SCHEMA_FIX: &str = "run `matchmaker migrate` (or `matchmaker run` without --no-migrate)";

fn schema_behind_text(latest_applied: Option<i64>, latest: i64, missing: &[i64]) -> String {
    match latest_applied {
        None => format!("database schema is not migrated: {SCHEMA_FIX}"),
        Some(applied) => {
            let missing: Vec<String> = missing.iter().map(i64::to_string).collect();
            format!(
                "database schema is behind this binary: at migration {applied} of {latest} \
                 (not applied: {}): {SCHEMA_FIX}",
                missing.join(", ")
            )
        }
    }
}

/// One line for a sqlx error. A server error gives its message and SQLSTATE (and detail
/// and hint when the server sent them), without sqlx's `at line N`: that is the line in
/// the server's C source that raised it, noise to an operator. Other errors give their
/// message and each cause not already part of it.
pub fn describe_sql_error(err: &sqlx::Error) -> String {
    let sqlx::Error::Database(e) = err else {
        return chain_text(err);
    };
    let mut text = e.message().to_string();
    if let Some(code) = e.code() {
        text.push_str(&format!(" (SQLSTATE {code})"));
    }
    if let Some(pg) = e.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
        for (label, value) in [("detail", pg.detail()), ("hint", pg.hint())] {
            if let Some(value) = value {
                // Detail and hint may span lines; a log line stays one line.
                let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
                text.push_str(&format!("; {label}: {value}"));
            }
        }
    }
    text
}

/// [`describe_sql_error`] for the sqlx errors a migration wraps.
pub fn describe_migrate_error(err: &sqlx::migrate::MigrateError) -> String {
    use sqlx::migrate::MigrateError;
    let mut text = match err {
        MigrateError::Execute(e) => {
            format!("while executing migrations: {}", describe_sql_error(e))
        }
        MigrateError::ExecuteMigration(e, version) => {
            format!(
                "while executing migration {version}: {}",
                describe_sql_error(e)
            )
        }
        other => chain_text(other),
    };
    if migrate_lock_waited(err) {
        text.push_str(
            "; another session held the migration lock or a table's lock for the whole wait \
             (see pg_locks and pg_stat_activity)",
        );
    }
    text
}

/// Whether a migration gave up waiting for a lock (SQLSTATE 55P03).
fn migrate_lock_waited(err: &sqlx::migrate::MigrateError) -> bool {
    use sqlx::migrate::MigrateError;
    let e = match err {
        MigrateError::Execute(e) | MigrateError::ExecuteMigration(e, _) => e,
        _ => return false,
    };
    matches!(e, sqlx::Error::Database(d) if d.code().as_deref() == Some("55P03"))
}

/// The error and its causes, `: `-separated, leaving out a cause whose text is already
/// in the line (sqlx's errors, like many, print their cause and also return it as
/// `source()`).
pub fn chain_text(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(e) = cause {
        let part = e.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cause = e.source();
    }
    text
}

/// The migrations in `migrations/`, embedded in the binary.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// The most connections a pool of [`connect`] opens.
pub const POOL_CONNECTIONS: u32 = 10;

/// Connect a pool to `url`.
pub async fn connect(url: &str) -> Result<PgPool, DbError> {
    connect_with(url, POOL_CONNECTIONS).await
}

/// How long one of our sessions may sit idle inside a transaction before the server ends
/// it (rolling the transaction back). Our transactions (snapshot, commit, retire) never
/// wait on anything but the database, so a session idle in one belongs to a process that
/// froze mid-transaction (SIGSTOP, a paused VM, a debugger) with its row locks held: the
/// lease row, which a standby's takeover waits for, and the round's pool rows, which
/// clients' cancel() waits for. Without this bound a leader frozen inside a commit stalls
/// its queue, and those clients, for as long as it stays frozen.
pub const IDLE_IN_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the server goes on with one of our sessions whose peer stopped acknowledging
/// at the TCP level (a cut network route, a lost host) before it drops it, with its
/// transaction and locks: the server's `tcp_user_timeout` (data sent and not
/// acknowledged) and about its keepalive probing (a session idle meanwhile: probes after
/// [`KEEPALIVE_IDLE`], every [`KEEPALIVE_INTERVAL`], [`KEEPALIVE_COUNT`] of them).
/// Without them the server retransmits to a vanished daemon for about 15 minutes and
/// keeps its idle sessions, and their connection slots, for hours (the kernel's
/// defaults). A healthy peer acknowledges within milliseconds, however busy.
pub const DEAD_PEER_TIMEOUT: Duration = Duration::from_secs(10);
/// A session idle this long gets keepalive probes (`tcp_keepalives_idle`)...
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(5);
/// ...this far apart (`tcp_keepalives_interval`)...
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(1);
/// ...and is dropped after this many go unanswered (`tcp_keepalives_count`).
pub const KEEPALIVE_COUNT: u32 = 5;

/// The session settings of our connections (PostgreSQL's, sent at connect): the server
/// ends a transaction left idle and a session whose peer vanished; with `limits`, every
/// statement and lock wait is bounded too (the daemon's pool, [`connect_limited`]). The
/// socket settings are ignored on a Unix-domain socket.
fn session_settings(limits: Option<&SessionLimits>) -> Vec<(String, String)> {
    let ms = |d: Duration| d.as_millis().max(1).to_string();
    let idle_in_transaction = limits.map_or(IDLE_IN_TRANSACTION_TIMEOUT, |l| {
        l.idle_in_transaction_timeout
    });
    let mut settings = vec![
        (
            "idle_in_transaction_session_timeout",
            ms(idle_in_transaction),
        ),
        ("tcp_user_timeout", ms(DEAD_PEER_TIMEOUT)),
        ("tcp_keepalives_idle", KEEPALIVE_IDLE.as_secs().to_string()),
        (
            "tcp_keepalives_interval",
            KEEPALIVE_INTERVAL.as_secs().to_string(),
        ),
        ("tcp_keepalives_count", KEEPALIVE_COUNT.to_string()),
    ];
    if let Some(limits) = limits {
        settings.push(("lock_timeout", ms(limits.lock_timeout)));
        settings.push(("statement_timeout", ms(limits.statement_timeout)));
    }
    settings
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// Connect a pool of at most `max_connections` to `url`: one host, or a multi-host URL
/// whose pool follows the host that fits `target_session_attrs` ([`target`]).
pub async fn connect_with(url: &str, max_connections: u32) -> Result<PgPool, DbError> {
    let connect_error = |error| DbError::Connect {
        url: redact(url),
        error,
    };
    let target = std::sync::Arc::new(target::DbTarget::parse(url).map_err(connect_error)?);
    target
        .pool(max_connections, session_settings(None))
        .await
        .map_err(connect_error)
}

/// `work` (one pass of a loop of the daemon: a look, a step, a retire) if it ends within
/// `limit`, else [`DbError::Unanswered`] and `work` is dropped. The driver sets no socket
/// timeouts, so a statement sent into a cut network route waits on TCP's retransmissions,
/// which back off to two minutes apart, and one whose answer was lost waits forever;
/// past `limit` the pass is given up instead, and the next one opens a new connection.
/// Nothing half-done remains: the server rolls back the abandoned transaction
/// ([`IDLE_IN_TRANSACTION_TIMEOUT`]) or drops the session ([`DEAD_PEER_TIMEOUT`]).
pub async fn answered_within<T, E: From<DbError>>(
    limit: Duration,
    work: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    match tokio::time::timeout(limit, work).await {
        Ok(result) => result,
        Err(_) => Err(DbError::Unanswered { waited: limit }.into()),
    }
}

/// Bounds on every statement of a daemon connection (PostgreSQL session settings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLimits {
    /// `lock_timeout`: the longest wait for a row or table lock.
    pub lock_timeout: Duration,
    /// `statement_timeout`: the longest any one statement may run.
    pub statement_timeout: Duration,
    /// `idle_in_transaction_session_timeout`: a transaction left open (a stalled task)
    /// gives its locks back after this.
    pub idle_in_transaction_timeout: Duration,
}

/// The most connections a pool of [`connect_limited`] opens.
pub const LIMITED_POOL_CONNECTIONS: u32 = 10;

/// A second pool on the same database as `base`, with `limits` set on every connection;
/// it moves with `base` when a failover moves `base` to another host.
pub async fn connect_limited(base: &PgPool, limits: &SessionLimits) -> Result<PgPool, DbError> {
    let limits = session_settings(Some(limits));
    let limited = move |options: &PgConnectOptions| options.clone().options(limits.clone());
    let switched = target::Switch::default();
    let pool = switched
        .discard_older(
            PgPoolOptions::new()
                .max_connections(LIMITED_POOL_CONNECTIONS)
                .acquire_timeout(Duration::from_secs(30)),
        )
        .connect_with(limited(&base.connect_options()))
        .await
        .map_err(|error| DbError::Connect {
            url: "(the daemon's pool)".into(),
            error,
        })?;
    tokio::spawn(target::follow(
        base.clone(),
        pool.clone(),
        switched,
        Box::new(limited),
    ));
    Ok(pool)
}

/// The database server's clock right now (`clock_timestamp()`, not the transaction's).
pub async fn database_now(db: &PgPool) -> Result<chrono::DateTime<chrono::Utc>, DbError> {
    Ok(sqlx::query_scalar("SELECT clock_timestamp()")
        .fetch_one(db)
        .await?)
}

/// How long a migration waits for a lock: sqlx's advisory migration lock (any session may
/// take an advisory lock, a client's included) or a table a long transaction holds. Past
/// it, `migrate` fails with a message naming the wait instead of hanging the start-up.
pub const MIGRATE_LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// Apply pending migrations (idempotent; concurrent callers are serialized by sqlx's
/// advisory lock). Migrations newer than this binary are left alone: during a rolling
/// upgrade an older replica starts against the newer, additive schema.
pub async fn migrate(db: &PgPool) -> Result<(), DbError> {
    migrate_waiting(db, MIGRATE_LOCK_TIMEOUT).await
}

/// [`migrate`], waiting at most `lock_timeout` for each lock.
pub async fn migrate_waiting(db: &PgPool, lock_timeout: Duration) -> Result<(), DbError> {
    let mut migrator = sqlx::migrate::Migrator::with_migrations(MIGRATOR.iter().cloned().collect());
    migrator.set_ignore_missing(true);
    let mut conn = db.acquire().await?;
    sqlx::query("SELECT set_config('lock_timeout', $1, false)")
        .bind(format!("{}ms", lock_timeout.as_millis().max(1)))
        .execute(&mut *conn)
        .await?;
    let result = migrator.run(&mut *conn).await;
    if result.is_err() {
        // sqlx returns at the failing migration without releasing its advisory lock, which
        // the pooled connection would keep: the next `migrate` in this process would wait
        // for it. Closing the session releases it.
        let _ = conn.close().await;
        result?;
        return Ok(());
    }
    // The connection goes back to the pool: without the migration's setting.
    sqlx::query("RESET lock_timeout")
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// What [`check_schema`] found in a database whose schema this binary can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaCheck {
    /// The highest migration embedded in this binary (applied).
    pub latest: i64,
    /// Applied migrations this binary does not know: a newer binary migrated the
    /// database. Fine during a rolling upgrade (migrations only add), worth a log line.
    pub newer: Vec<i64>,
}

/// Checks that every migration embedded in this binary is applied, without changing
/// anything (for `run --no-migrate` and the read-only commands). A missing or older
/// schema is [`DbError::SchemaBehind`], one line that names the fix, instead of a
/// `relation ... does not exist` from whichever query happens to run first.
pub async fn check_schema(db: &PgPool) -> Result<SchemaCheck, DbError> {
    let embedded: Vec<i64> = MIGRATOR
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .map(|m| m.version)
        .collect();
    let latest = embedded.iter().copied().max().unwrap_or(0);
    // sqlx's own table, looked up on the search_path as sqlx does.
    let has_table: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(db)
        .await?;
    let applied: Vec<i64> = if has_table {
        // A failed (dirty) migration counts as not applied; `migrate` reports it.
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(db)
            .await?
    } else {
        Vec::new()
    };
    let mut missing: Vec<i64> = embedded
        .iter()
        .copied()
        .filter(|v| !applied.contains(v))
        .collect();
    missing.sort_unstable();
    if !missing.is_empty() {
        return Err(DbError::SchemaBehind {
            latest_applied: embedded
                .iter()
                .copied()
                .filter(|v| applied.contains(v))
                .max(),
            latest,
            missing,
        });
    }
    let newer = applied
        .into_iter()
        .filter(|v| !embedded.contains(v))
        .collect();
    Ok(SchemaCheck { latest, newer })
}

/// The URL without its password (in the user info or a `password=` parameter), for
/// error messages and logs.
pub fn redact(url: &str) -> String {
    // The last `@` ends the user info: an unencoded password may hold `@`, `?` or `/`.
    let mut out = match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    };
    let host_start = out.rfind('@').or_else(|| out.find("://")).unwrap_or(0);
    if let Some(q) = out[host_start..].find('?').map(|q| host_start + q) {
        let params: Vec<String> = out[q + 1..]
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => param.to_string(),
            })
            .collect();
        out = format!("{}?{}", &out[..q], params.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_passwords_in_user_info_and_parameters() {
        assert_eq!(
            redact("postgres://u:pw@h:5432/db?sslmode=require"),
            "postgres://u:***@h:5432/db?sslmode=require"
        );
        assert_eq!(
            redact("postgres://u@h/db?password=pw&application_name=x"),
            "postgres://u@h/db?password=***&application_name=x"
        );
        assert_eq!(redact("postgres://u:p?w@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
    }

    #[test]
    fn every_session_asks_the_server_to_drop_a_vanished_peer() {
        let has = |settings: &[(String, String)], name: &str, value: &str| {
            settings.iter().any(|(k, v)| k == name && v == value)
        };
        for settings in [
            session_settings(None),
            session_settings(Some(&SessionLimits {
                lock_timeout: Duration::from_secs(2),
                statement_timeout: Duration::from_secs(60),
                idle_in_transaction_timeout: Duration::from_secs(5),
            })),
        ] {
            assert!(has(&settings, "tcp_user_timeout", "10000"), "{settings:?}");
            assert!(has(&settings, "tcp_keepalives_idle", "5"), "{settings:?}");
            assert!(
                has(&settings, "tcp_keepalives_interval", "1"),
                "{settings:?}"
            );
            assert!(has(&settings, "tcp_keepalives_count", "5"), "{settings:?}");
            assert!(
                has(&settings, "idle_in_transaction_session_timeout", "5000"),
                "{settings:?}"
            );
        }
        let limited = session_settings(Some(&SessionLimits {
            lock_timeout: Duration::from_millis(1500),
            statement_timeout: Duration::from_secs(30),
            idle_in_transaction_timeout: Duration::from_secs(5),
        }));
        assert!(has(&limited, "lock_timeout", "1500"));
        assert!(has(&limited, "statement_timeout", "30000"));
        assert!(
            !session_settings(None)
                .iter()
                .any(|(k, _)| k == "statement_timeout")
        );
    }

    #[tokio::test]
    async fn a_pass_the_database_never_answers_is_given_up_at_its_limit() {
        let limit = Duration::from_millis(20);
        let never = std::future::pending::<Result<(), DbError>>();
        match answered_within(limit, never).await {
            Err(DbError::Unanswered { waited }) => assert_eq!(waited, limit),
            other => panic!("{other:?}"),
        }
        let answered = async { Ok::<_, DbError>(7) };
        assert_eq!(answered_within(limit, answered).await.unwrap(), 7);
    }

    #[test]
    fn schema_behind_names_the_state_and_the_fix() {
        let text = schema_behind_text(Some(5), 7, &[6, 7]);
        assert!(
            text.contains("at migration 5 of 7 (not applied: 6, 7)"),
            "{text}"
        );
        assert!(text.contains("matchmaker migrate"), "{text}");
        assert!(schema_behind_text(None, 7, &[1]).contains("not migrated"));
    }
}
