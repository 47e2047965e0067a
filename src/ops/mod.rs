//! The operators' commands as a library: what `run`, `status`, `explain`, `replay`,
//! `report`, `prune`, `optimize`, `health`, `check-config` do (and the console, the web
//! page `run` serves beside its endpoints), each a function of the
//! open database (if it needs one) and plain options. `cli` parses the arguments, runs
//! these in the [`shell`] (one runtime, the database opened and closed, the stop
//! signals) and renders the result; tests call them directly.

pub mod access;
pub mod check_config;
pub mod console;
pub mod database;
pub mod explain;
pub mod health;
pub mod migrate;
pub mod optimize;
pub mod prune;
pub mod replay;
pub mod report;
pub mod run;
pub mod shell;
pub mod status;
pub mod term;

use sqlx::PgPool;

use crate::db;
pub use database::{Database, OpenDatabase, open_database};

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

/// What an operator's command checks before its first query: a login that may read
/// the tables ([`access::require_ops_login`]), and this binary's migrations.
pub async fn require_ops_database(db: &PgPool, command: &str) -> anyhow::Result<()> {
    access::require_ops_login(db, command).await?;
    require_schema(db).await?;
    Ok(())
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
