//! The queue state: what the countdown players see is made of (next round time, why it
//! waits, the early-start target), and the live pool figures the triggers look at.

use chrono::{DateTime, Utc};
use sqlx::{PgExecutor, PgPool};

use super::{DbError, Lease};

/// What the next round waits for; `queue_state.waiting_for`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitingFor {
    /// The next schedule tick (`next_round_at`); `players_missing` more players are
    /// needed for it to run (0: it runs).
    Schedule,
    /// The tick passed (`next_round_at`) but the pool is below `min_pool`: a round runs
    /// as soon as `players_missing` more arrive, or at the oldest player's max-wait
    /// fallback (`latest_round_at`).
    MinPool,
    /// The tick passed and not one match can be formed: a round runs as soon as
    /// `players_missing` more arrive; no latest round is known.
    Players,
    /// A round is running (since `round_started_at`); the next countdown comes with its
    /// commit.
    Round,
}

impl WaitingFor {
    pub fn as_str(self) -> &'static str {
        match self {
            WaitingFor::Schedule => "schedule",
            WaitingFor::MinPool => "min_pool",
            WaitingFor::Players => "players",
            WaitingFor::Round => "round",
        }
    }
}

/// One `queue_state` row as the leader writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueStateRow {
    pub queue: String,
    pub next_round_at: Option<DateTime<Utc>>,
    pub waiting_for: WaitingFor,
    /// Players still missing for the next round (see [`WaitingFor`]).
    pub players_missing: i32,
    /// The latest moment a round runs if nobody else arrives (None: unknown).
    pub latest_round_at: Option<DateTime<Utc>>,
    /// When the running round started (`WaitingFor::Round` only).
    pub round_started_at: Option<DateTime<Utc>>,
    /// Human-readable schedule ("every 2m", "cron 0 */2 * * * *").
    pub schedule: String,
    pub target_pool: Option<i32>,
    pub min_pool: i32,
    pub players_per_match: i32,
    pub max_wait_secs: f64,
    pub config_hash: String,
}

/// The live pool of a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    pub size: usize,
    pub oldest_enqueued_at: Option<DateTime<Utc>>,
    /// The oldest queued player enqueued after `pool_stats`' `enqueued_after` (the
    /// oldest of all when None).
    pub oldest_fresh_enqueued_at: Option<DateTime<Utc>>,
}

/// The row of `queue_state_pool_stats.sql`.
#[derive(sqlx::FromRow)]
struct PoolStatsRow {
    size: i64,
    oldest_enqueued_at: Option<DateTime<Utc>>,
    oldest_fresh_enqueued_at: Option<DateTime<Utc>>,
}

/// The pool's size, its oldest player, and its oldest player enqueued after
/// `enqueued_after`: the worker passes the last round's start, so that only a player no
/// round has had yet can start a max-wait round before the tick (see `daemon::trigger`).
pub async fn pool_stats(
    db: &PgPool,
    queue: &str,
    enqueued_after: Option<DateTime<Utc>>,
) -> Result<PoolStats, DbError> {
    // Served by the partial index queue_entries_queued_oldest_first.
    let row: PoolStatsRow = sqlx::query_as(include_str!("sql/queue_state_pool_stats.sql"))
        .bind(queue)
        .bind(enqueued_after)
        .fetch_one(db)
        .await?;
    Ok(PoolStats {
        size: row.size as usize,
        oldest_enqueued_at: row.oldest_enqueued_at,
        oldest_fresh_enqueued_at: row.oldest_fresh_enqueued_at,
    })
}

/// Entries of `queue` that arrived since `mark` (an entry id), and the new mark: the
/// highest entry id now (of any queue). Without a mark, nothing is counted and the mark is
/// set. The leader's count of enqueues for the metrics: a range scan of the primary key
/// over the rows added since its last look.
///
/// An entry whose INSERT commits after a higher-numbered one was already seen is not
/// counted (ids are taken at insert, rows become visible at commit): a window of one
/// `enqueue()` transaction, microseconds. Entries that arrive while no replica leads the
/// queue are not counted either.
pub async fn entries_since(
    db: &PgPool,
    queue: &str,
    mark: Option<i64>,
) -> Result<(u64, i64), DbError> {
    let Some(mark) = mark else {
        let max: Option<i64> = sqlx::query_scalar("SELECT max(entry_id) FROM queue_entries")
            .fetch_one(db)
            .await?;
        return Ok((0, max.unwrap_or(0)));
    };
    let (new, max): (i64, Option<i64>) =
        sqlx::query_as(include_str!("sql/queue_state_entries_since.sql"))
            .bind(queue)
            .bind(mark)
            .fetch_one(db)
            .await?;
    Ok((new as u64, max.unwrap_or(mark)))
}

/// Insert or update the row (and recount the pool); `last_round` is set by a round
/// commit only.
pub async fn write_queue_state<'e>(
    db: impl PgExecutor<'e>,
    row: &QueueStateRow,
    last_round: Option<(i64, DateTime<Utc>)>,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    upsert_queue_state(db, row, last_round, now, None, None).await?;
    Ok(())
}

/// Write the row only while `lease` is held (`lease_now`: the lease clock, None for the
/// database's); false when it is not. For writes outside the round's commit, which
/// fences its own.
pub async fn write_queue_state_fenced<'e>(
    db: impl PgExecutor<'e>,
    row: &QueueStateRow,
    now: DateTime<Utc>,
    lease: &Lease,
    lease_now: Option<DateTime<Utc>>,
) -> Result<bool, DbError> {
    upsert_queue_state(db, row, None, now, Some(lease), lease_now).await
}

async fn upsert_queue_state<'e>(
    db: impl PgExecutor<'e>,
    row: &QueueStateRow,
    last_round: Option<(i64, DateTime<Utc>)>,
    now: DateTime<Utc>,
    lease: Option<&Lease>,
    lease_now: Option<DateTime<Utc>>,
) -> Result<bool, DbError> {
    let done = sqlx::query(include_str!("sql/queue_state_upsert.sql"))
        .bind(&row.queue)
        .bind(row.next_round_at)
        .bind(row.waiting_for.as_str())
        .bind(&row.schedule)
        .bind(row.target_pool)
        .bind(row.min_pool)
        .bind(row.players_per_match)
        .bind(row.max_wait_secs)
        .bind(last_round.map(|(id, _)| id))
        .bind(last_round.map(|(_, at)| at))
        .bind(&row.config_hash)
        .bind(now)
        .bind(row.players_missing)
        .bind(row.latest_round_at)
        .bind(row.round_started_at)
        .bind(lease.map(|l| l.holder.as_str()))
        .bind(lease.map(|l| l.term))
        .bind(lease_now)
        .execute(db)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// The countdown as the previous leader (or we, before a lease lapse) left it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredState {
    pub next_round_at: Option<DateTime<Utc>>,
    pub waiting_for: String,
    pub config_hash: String,
    pub last_round_at: Option<DateTime<Utc>>,
}

/// Where a new leader's countdown continues.
pub async fn read_queue_state(db: &PgPool, queue: &str) -> Result<Option<StoredState>, DbError> {
    Ok(sqlx::query_as(include_str!("sql/queue_state_read.sql"))
        .bind(queue)
        .fetch_optional(db)
        .await?)
}

/// The wait estimate's model and the recent median wait (see `daemon::wait_estimate`),
/// written by the leader after a round. Outside the round's commit and unfenced: an
/// estimate from a deposed leader is as good as the next one, which replaces it.
pub async fn write_wait_model(
    db: &PgPool,
    queue: &str,
    model: &serde_json::Value,
    median_wait_s: Option<f64>,
) -> Result<(), DbError> {
    sqlx::query("UPDATE queue_state SET wait_model = $2, median_wait_s = $3 WHERE queue = $1")
        .bind(queue)
        .bind(model)
        .bind(median_wait_s)
        .execute(db)
        .await?;
    Ok(())
}

/// How the wait estimates of the players a round matched came true
/// (`rounds.wait_estimates`), written by its leader after the commit like the model.
pub async fn write_wait_follow_up(
    db: &PgPool,
    round_id: i64,
    follow_up: &serde_json::Value,
) -> Result<(), DbError> {
    sqlx::query("UPDATE rounds SET wait_estimates = $2 WHERE round_id = $1")
        .bind(round_id)
        .bind(follow_up)
        .execute(db)
        .await?;
    Ok(())
}
