//! A game server's side: backfill requests for its sessions, as a `matchmaker_server`
//! login makes them.

use serde_json::Value;
use sqlx::PgPool;

use crate::postgres::{TestDb, server_login};

/// `request_backfill(queue, session, members, open_slots, expires_in)`: the request's id,
/// or the refusal. `members` are the session's players (`[{"player_id", "team",
/// "skill", ...}]`), `expires_in` an interval (`'60 seconds'`).
pub async fn request_backfill(
    db: &PgPool,
    queue: &str,
    session: &str,
    members: &Value,
    open_slots: &[i32],
    expires_in: &str,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT request_backfill($1, $2, $3, $4, $5::interval)")
        .bind(queue)
        .bind(session)
        .bind(members)
        .bind(open_slots)
        .bind(expires_in)
        .fetch_one(db)
        .await
}

/// `cancel_backfill(request)`: whether an open request was cancelled.
pub async fn cancel_backfill(db: &PgPool, request_id: i64) -> bool {
    sqlx::query_scalar("SELECT cancel_backfill($1)")
        .bind(request_id)
        .fetch_one(db)
        .await
        .unwrap_or_else(|e| panic!("cancel_backfill {request_id}: {e}"))
}

/// (status, reason, filled_by) of a request as `db`'s login reads `backfill_status`;
/// None when it sees no such request.
pub async fn backfill_status(
    db: &PgPool,
    request_id: i64,
) -> Option<(String, Option<String>, Vec<String>)> {
    sqlx::query_as("SELECT status, reason, filled_by FROM backfill_status($1::bigint)")
        .bind(request_id)
        .fetch_optional(db)
        .await
        .unwrap()
}

/// A game server: a new login in `matchmaker_server` and a pool connected as it.
pub struct Server {
    pub login: String,
    pub pool: PgPool,
}

impl Server {
    pub async fn login(tdb: &TestDb, max_connections: u32) -> Server {
        let (login, pool) = server_login(tdb, max_connections).await;
        Server { login, pool }
    }

    /// See [`request_backfill`].
    pub async fn request_backfill(
        &self,
        queue: &str,
        session: &str,
        members: &Value,
        open_slots: &[i32],
        expires_in: &str,
    ) -> Result<i64, sqlx::Error> {
        request_backfill(&self.pool, queue, session, members, open_slots, expires_in).await
    }

    pub async fn cancel_backfill(&self, request_id: i64) -> bool {
        cancel_backfill(&self.pool, request_id).await
    }

    pub async fn backfill_status(
        &self,
        request_id: i64,
    ) -> Option<(String, Option<String>, Vec<String>)> {
        backfill_status(&self.pool, request_id).await
    }
}
