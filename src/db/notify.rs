//! Notifications to game backends: one per committed match, and one per
//! countdown move, on a channel per queue ([`queue_channel`]), so that a backend holding
//! one LISTEN connection tells each player at once instead of polling.
//!
//! The match notifications are sent here, by the round's commit, inside its transaction:
//! PostgreSQL delivers them at COMMIT, or never if the round rolls back. The countdown
//! notifications come from a trigger on `queue_state` (whoever writes the countdown sends
//! them, in the same transaction). The payloads are built in SQL, split in parts under
//! PostgreSQL's 8000-byte payload limit; their layout is documented in the migration and
//! in the README ("Notifications").

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
/// their queues' channels; returns how many were sent (a large match may take several).
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

/// The channel a queue's notifications go to (`matchmaker:<queue>`, shortened with a hash
/// when longer than a channel name may be). LISTEN on it in double quotes.
pub async fn queue_channel<'e>(db: impl PgExecutor<'e>, queue: &str) -> Result<String, DbError> {
    Ok(sqlx::query_scalar("SELECT queue_channel($1)")
        .bind(queue)
        .fetch_one(db)
        .await?)
}
