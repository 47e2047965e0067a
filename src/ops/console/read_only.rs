//! The console's own database sessions: every transaction they run is read-only, set by
//! PostgreSQL itself (`default_transaction_read_only`) rather than by each query, so no
//! read the console makes, present or future, can write. A statement that tries is
//! refused with SQLSTATE 25006 (`read_only_sql_transaction`).

use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

/// How the console's sessions name themselves in `pg_stat_activity`.
pub const APPLICATION_NAME: &str = "matchmaker console";

/// The longest one of the console's statements may run: a page that asks too much gets
/// an error, and the database keeps its time for the rounds.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);

/// At most this many sessions: a few operators' pages polling, never a share of the
/// rounds' connections.
pub const MAX_CONNECTIONS: u32 = 2;

/// A pool on `base`'s database (same server, login and TLS) whose sessions are
/// read-only, following `base` to another host after a failover. Connects on first use,
/// so a console nobody opens costs no session.
pub fn read_only_pool(base: &PgPool) -> PgPool {
    let read_only = |options: &PgConnectOptions| {
        options.clone().application_name(APPLICATION_NAME).options([
            ("default_transaction_read_only", "on".to_string()),
            (
                "statement_timeout",
                STATEMENT_TIMEOUT.as_millis().to_string(),
            ),
        ])
    };
    crate::db::target::derived_lazy(
        base,
        PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(STATEMENT_TIMEOUT),
        read_only,
    )
}
