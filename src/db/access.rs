//! What the session's login may read: asked once at the start of a command, so that a
//! login in the wrong role gets one line naming the role it needs instead of a
//! `permission denied for table ...` from whichever query runs first.

use sqlx::PgPool;

use super::DbError;

/// The tables the operators' commands (`status`, `explain`, `report`, `replay`) read,
/// `_sqlx_migrations` (the schema check) first. `matchmaker_ops` and `matchmaker_daemon`
/// may read them all, `matchmaker_client` none.
pub const OPS_READS: &[&str] = &[
    "_sqlx_migrations",
    "queues",
    "queue_entries",
    "queue_state",
    "rounds",
    "round_snapshots",
    "matches",
    "match_players",
    "leases",
    "replicas",
];

/// The tables `prune` (and the daemon's retention) deletes from. `matchmaker_daemon` may
/// delete from them all; `matchmaker_ops` reads only.
pub const PRUNE_DELETES: &[&str] = &[
    "rounds",
    "matches",
    "match_players",
    "ready_answers",
    "queue_entries",
    "backfill_requests",
    "avoids",
    "call_buckets",
];

/// The session's login and what it may not read (or delete from).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Access {
    /// `session_user`: the login, also when a `SET ROLE` is in effect.
    pub login: String,
    /// Member of `matchmaker_client` (false when the role does not exist).
    pub client: bool,
    /// Of the tables asked about, those that exist and the login may not `SELECT` (or
    /// `DELETE`, as asked). A
    /// missing table is left to the schema check, which names the fix.
    pub unreadable: Vec<String>,
}

/// Asks the catalog which of `tables` the current user may not read.
pub async fn read_access(db: &PgPool, tables: &[&str]) -> Result<Access, DbError> {
    table_access(db, tables, "SELECT").await
}

/// Asks the catalog which of `tables` the current user may not delete from.
pub async fn delete_access(db: &PgPool, tables: &[&str]) -> Result<Access, DbError> {
    table_access(db, tables, "DELETE").await
}

async fn table_access(db: &PgPool, tables: &[&str], privilege: &str) -> Result<Access, DbError> {
    Ok(
        sqlx::query_as(include_str!("sql/access_table_privileges.sql"))
            .bind(tables)
            .bind(privilege)
            .fetch_one(db)
            .await?,
    )
}
