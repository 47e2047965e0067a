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
    let expired = sqlx::query(
        "UPDATE queue_entries e
            SET status = 'expired', updated_at = now(),
                reject_reason = format('expired: no keep_alive within the queue''s ticket_ttl '
                                       '(ticket ran out at %s)', e.expires_at)
          WHERE e.entry_id IN (
                SELECT entry_id FROM queue_entries
                 WHERE queue = $1 AND status = 'queued' AND expires_at <= now()
                   FOR UPDATE SKIP LOCKED)",
    )
    .bind(queue)
    .execute(db)
    .await?
    .rows_affected();

    // A member that left: the first one by entry id names the reason. Matched or withdrawn
    // members mean the party plays elsewhere: the rest is withdrawn; otherwise the rest
    // shares the member's fate.
    let party_closed = sqlx::query(
        "WITH broken AS (
             SELECT e.entry_id, gone.player_id, gone.status, gone.queue, gone.match_id
               FROM queue_entries e
              CROSS JOIN LATERAL (
                    SELECT m.player_id, m.status, m.queue, m.match_id
                      FROM (SELECT g.entry_id, g.player_id, g.status, g.queue, g.match_id
                              FROM queue_entries g
                             WHERE g.party_key = e.party_key AND g.status <> 'queued'
                            -- The fence (OFFSET 0) finds the party's few rows through
                            -- queue_entries_party, then sorts them. Without it the planner
                            -- walked the primary key in entry_id order for the first
                            -- match, a scan of the whole table per queued party member
                            -- (70 ms each at 55,000 rows): a tidy of 29 s that held a
                            -- round back as long (`matchmaker peak`).
                            OFFSET 0) m
                     ORDER BY m.entry_id LIMIT 1) gone
              WHERE e.queue = $1 AND e.status = 'queued' AND e.party_key IS NOT NULL
                FOR UPDATE OF e SKIP LOCKED)
         UPDATE queue_entries e
            SET status = CASE WHEN b.status IN ('matched', 'withdrawn') THEN 'withdrawn'
                              ELSE b.status END,
                match_id = CASE WHEN b.status IN ('matched', 'withdrawn') THEN b.match_id END,
                updated_at = now(),
                reject_reason = CASE
                    WHEN b.status IN ('matched', 'withdrawn')
                        THEN format('party member %s was matched in queue %s (match %s)',
                                    b.player_id, b.queue, b.match_id)
                    ELSE format('party member %s is %s', b.player_id, b.status) END
           FROM broken b
          WHERE e.entry_id = b.entry_id",
    )
    .bind(queue)
    .execute(db)
    .await?
    .rows_affected();
    Ok(Tidied {
        expired,
        party_closed,
    })
}
