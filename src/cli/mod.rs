//! Subcommands, one file each. Wiring and telemetry live here; the work lives in `core`,
//! `db` and `daemon`.

pub mod bench;
pub mod bench_db;
pub mod demo;
pub mod explain;
pub mod health;
pub mod migrate;
pub mod optimize;
pub mod peak;
pub mod prune;
pub mod replay;
pub mod report;
pub mod run;
pub mod simulate;
pub mod soak;
pub mod status;
pub mod term;

use crate::db;

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
