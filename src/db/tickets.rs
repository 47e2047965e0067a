//! The ticket lifecycle the daemon enforces on each look at a queue:
//!
//! * expiry: a queued entry whose `expires_at` passed (no `keep_alive()` within the
//!   queue's ticket TTL) becomes `expired`, with the reason, and is never matched;
//! * whole parties: a queued entry whose party lost a member (cancelled, expired,
//!   rejected, matched or withdrawn elsewhere) leaves the queue too, with the member's
//!   fate as its reason. A party is matched whole or not at all.
//!
//! Both skip rows locked right now (a client's call in flight, another queue's commit):
//! the next look gets them. Times are the database's: the ticket TTL is between the
//! client and the database, not this replica's clock.

use sqlx::PgPool;

use super::DbError;

/// What one sweep changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tidied {
    pub expired: u64,
    pub party_closed: u64,
}

/// Expire and close broken parties in `queue`.
pub async fn tidy_queue(db: &PgPool, queue: &str) -> Result<Tidied, DbError> {
    let expired = sqlx::query(include_str!("sql/tickets_expire.sql"))
        .bind(queue)
        .execute(db)
        .await?
        .rows_affected();

    let party_closed = sqlx::query(include_str!("sql/tickets_close_parties.sql"))
        .bind(queue)
        .execute(db)
        .await?
        .rows_affected();
    Ok(Tidied {
        expired,
        party_closed,
    })
}
