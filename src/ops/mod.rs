//! The operators' commands as a library: what `run`, `status`, `explain`, `replay`,
//! `report`, `prune`, `optimize`, `health` do, taking plain options. `cli` parses the
//! arguments and calls these; tests call them directly.

pub mod access;
pub mod explain;
pub mod health;
pub mod optimize;
pub mod prune;
pub mod replay;
pub mod report;
pub mod run;
pub mod status;
pub mod term;

use std::path::PathBuf;

use anyhow::Context;
use sqlx::PgPool;

use crate::db::{self, local_pg::LocalPostgres};

/// Where the database comes from: a URL, or a private PostgreSQL kept in a directory.
#[derive(Debug, Clone)]
pub struct Database {
    pub database_url: Option<String>,
    pub local_pg_dir: PathBuf,
}

/// Install the tracing subscriber (RUST_LOG filters; default `info`). Text lines are
/// coloured only when stderr is a terminal and NO_COLOR is unset: the journal, a pipe
/// or a file gets plain lines. JSON is never coloured (one object a line).
pub fn init_logging(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().with_ansi(false).try_init()
    } else {
        builder.with_ansi(term::stderr_colors()).try_init()
    };
}

/// Connect to the URL, or start (or reuse) the private PostgreSQL. The returned server,
/// if any, must be kept alive (and stopped) by the caller.
pub async fn open_database(database: &Database) -> anyhow::Result<(PgPool, Option<LocalPostgres>)> {
    match &database.database_url {
        Some(url) => Ok((db::connect(url).await?, None)),
        None => {
            let dir = &database.local_pg_dir;
            let server = LocalPostgres::start_persistent(dir)
                .await
                .context("no DATABASE_URL given, and the private PostgreSQL did not start")?;
            tracing::info!(url = %db::redact(&server.url()), dir = %dir.display(), "using the private PostgreSQL (no DATABASE_URL)");
            let pool = db::connect(&server.url()).await?;
            Ok((pool, Some(server)))
        }
    }
}

/// Refuse a database that lacks this binary's migrations (one line naming the fix, rather
/// than a query failing on a missing table every poll); a newer schema is fine.
pub async fn require_schema(pool: &PgPool) -> Result<(), db::DbError> {
    let check = db::check_schema(pool).await?;
    if !check.newer.is_empty() {
        tracing::info!(
            newer = ?check.newer,
            latest_known = check.latest,
            "database schema is newer than this binary (migrations only add: fine)"
        );
    }
    Ok(())
}

/// The one line `main` prints for a failed command: the error and each cause not already
/// in the line. sqlx errors are rendered by [`db::describe_sql_error`] (message and
/// SQLSTATE, no `at line N` of the server's source) and end the chain, since that
/// rendering covers their causes. anyhow's `{:#}` would repeat every cause that an
/// error both prints and returns as `source()`, as sqlx's errors do.
pub fn error_report(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let (part, covers_causes) = if let Some(e) = cause.downcast_ref::<sqlx::Error>() {
            (db::describe_sql_error(e), true)
        } else if let Some(e) = cause.downcast_ref::<sqlx::migrate::MigrateError>() {
            (db::describe_migrate_error(e), true)
        } else {
            (cause.to_string(), false)
        };
        if !(text.contains(&part) || text.contains(&cause.to_string())) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        if covers_causes {
            break;
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_report_prints_each_cause_once() {
        // sqlx prints its cause and also returns it as source(): `{:#}` said it twice.
        let err = sqlx::Error::Io(std::io::Error::other("connection refused"));
        let err = anyhow::Error::from(err).context("reading the status");
        assert_eq!(
            error_report(&err),
            "reading the status: error communicating with database: connection refused"
        );
        let err = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_report(&err), "outer: inner");
    }
}
