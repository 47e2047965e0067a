//! Notifications to game backends: one per committed match, and one per
//! countdown move, on each login's own channel of the queue (SQL `queue_channel()`), so that a
//! backend holding one LISTEN connection tells each of its players at once instead of
//! polling. A login's channel name is a keyed hash no other login can work out, and it
//! carries only matches holding the login's players.
//!
//! The match notifications are sent here, by the round's commit, inside its transaction:
//! PostgreSQL delivers them at COMMIT, or never if the round rolls back. The countdown
//! notifications come from a trigger on `queue_state` (whoever writes the countdown sends
//! them, in the same transaction). The payloads are built in SQL, split in parts under
//! PostgreSQL's 8000-byte payload limit; their layout is documented in the migration and
//! in docs/client-guide.md. Every notification goes through `matchmaker_notify`, which
//! sends nothing while PostgreSQL's notification queue is past its limit: a full queue
//! would fail the commit.

use sqlx::{PgConnection, PgExecutor};

use super::DbError;

/// What a match notification announces (`"event"` in the payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchEvent {
    /// A match committed by a round.
    Match,
    /// Players added to a match that already exists; the payload names the whole roster.
    Backfill,
    /// A match committed pending its ready check; the payload adds `answer_by`.
    ReadyCheck,
    /// A pending match every player accepted: final.
    Ready,
}

impl MatchEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchEvent::Match => "match",
            MatchEvent::Backfill => "backfill",
            MatchEvent::ReadyCheck => "ready_check",
            MatchEvent::Ready => "ready",
        }
    }
}

/// Send the notifications of `match_ids` (as their rows are now in this transaction) on
/// the channels of their players' logins; returns how many were sent (a large match may
/// take several, a match of two logins one each; none past the queue's limit).
pub async fn notify_matches(
    conn: &mut PgConnection,
    match_ids: &[i64],
    event: MatchEvent,
) -> Result<usize, DbError> {
    if match_ids.is_empty() {
        return Ok(0);
    }
    let sent: i32 = sqlx::query_scalar("SELECT matchmaker_notify_matches($1, $2)")
        .bind(match_ids)
        .bind(event.as_str())
        .fetch_one(conn)
        .await?;
    Ok(sent as usize)
}

/// How full PostgreSQL's notification queue is (0-1), and the limit past which
/// `matchmaker_notify` sends nothing (`matchmaker.notify_queue_limit`, default 0.5).
pub async fn queue_usage<'e>(db: impl PgExecutor<'e>) -> Result<(f64, f64), DbError> {
    Ok(
        sqlx::query_as("SELECT pg_notification_queue_usage(), matchmaker_notify_queue_limit()")
            .fetch_one(db)
            .await?,
    )
}
