//! The PostgreSQL shell around the core: connection, migrations, the snapshot of a round,
//! its commit, leases and the queue state the countdown is made of.
//!
//! Every query takes the current time as a parameter (`now`) instead of reading the
//! database clock, so tests drive rounds, leases and countdowns with an injected clock.

pub mod commit;
pub mod enqueue;
pub mod lease;
pub mod local_pg;
pub mod queue_state;
pub mod snapshot;

pub use commit::{CommitReport, RoundRecord, RoundTrigger, commit_round};
pub use lease::{Lease, acquire_lease, release_lease, renew_lease};
pub use queue_state::{PoolStats, QueueStateRow, WaitingFor, pool_stats, write_queue_state};
pub use snapshot::{QueuedEntry, Snapshot, snapshot_pool};

use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use thiserror::Error;

/// Errors at the database boundary.
#[derive(Debug, Error)]
pub enum DbError {
    #[error("cannot connect to PostgreSQL at {url}: {source}")]
    Connect {
        url: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The round's lease expired or changed hands: the round was not committed.
    #[error("lease of queue {queue} (term {term}) is no longer held: round not committed")]
    LeaseLost { queue: String, term: i64 },
    #[error(transparent)]
    Sql(#[from] sqlx::Error),
}

/// The migrations in `migrations/`, embedded in the binary.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// Connect a pool to `url`.
pub async fn connect(url: &str) -> Result<PgPool, DbError> {
    connect_with(url, 10).await
}

/// Connect a pool of at most `max_connections` to `url`.
pub async fn connect_with(url: &str, max_connections: u32) -> Result<PgPool, DbError> {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(30))
        .connect(url)
        .await
        .map_err(|source| DbError::Connect {
            url: redact(url),
            source,
        })
}

/// Apply pending migrations (idempotent; concurrent callers are serialized by sqlx's
/// advisory lock).
pub async fn migrate(db: &PgPool) -> Result<(), DbError> {
    MIGRATOR.run(db).await?;
    Ok(())
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
}
