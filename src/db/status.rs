//! The reads behind `matchmaker status`, one typed row per line of the view: per queue
//! the pool and the countdown, the recent rounds with their wait percentiles, and the
//! daemon replicas. They read the ops read models (`queue_state`, `round_summaries`,
//! `match_details`, `replica_leadership`) and are the same an operator can run in `psql`.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

/// Per queue: what the countdown is made of.
#[derive(Debug, Clone, PartialEq, serde::Serialize, sqlx::FromRow)]
pub struct QueueLine {
    pub queue: String,
    pub pool_size: i64,
    /// Seconds to the next round; `None` when no round is scheduled (no daemon, or it
    /// waits for players).
    pub seconds_to_next: Option<i64>,
    /// `schedule`, `min_pool`, `players`, or `no daemon` when no queue state exists.
    pub waiting_for: String,
    pub target_pool: Option<i32>,
    pub min_pool: Option<i32>,
    /// The replica holding the queue's lease, if the lease is live.
    pub leader: Option<String>,
    /// Matches waiting for their ready check.
    pub pending_matches: i64,
}

/// One finished round.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RoundLine {
    pub round_id: i64,
    pub queue: String,
    pub trigger: String,
    pub committed_at: DateTime<Utc>,
    pub pool_size: i32,
    pub match_count: i32,
    pub matched: i32,
    pub left_over: i32,
    pub rejected: i32,
    pub score: Option<f64>,
    /// Factor name -> mean score over the round's matches.
    pub factors: Vec<(String, f64)>,
    pub solve_ms: f64,
    /// Wait from enqueue to match of the round's matched players: p50, p90, max (s).
    pub wait_secs: Option<(f64, f64, f64)>,
    /// Matches formed but not placed for want of a ready game server.
    pub no_server_matches: i32,
}

/// One daemon replica (a row of the `replica_leadership` view).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReplicaLine {
    pub replica: String,
    /// Its heartbeat is unexpired. A replica that stopped deletes its row; one that died
    /// shows here as not live until its row is forgotten.
    pub live: bool,
    /// Seconds since its last heartbeat; `None`: a holder of live leases that never
    /// registered (a replica of an older binary).
    pub heartbeat_secs: Option<i64>,
    /// How many queues its config lists.
    pub serves: usize,
    /// The queues whose live lease it holds.
    pub leads: Vec<String>,
}

/// The database's clock: the view's time, against which its countdowns are counted.
pub async fn read_now(db: &PgPool) -> Result<DateTime<Utc>, sqlx::Error> {
    sqlx::query_scalar("SELECT now()").fetch_one(db).await
}

/// Per queue (or only `queue`), its pool and countdown.
pub async fn read_queue_lines(
    db: &PgPool,
    queue: Option<&str>,
) -> Result<Vec<QueueLine>, sqlx::Error> {
    sqlx::query_as(include_str!("sql/status_queue_lines.sql"))
        .bind(queue)
        .fetch_all(db)
        .await
}

/// A row of `status_round_lines.sql`.
#[derive(sqlx::FromRow)]
struct RoundLineRow {
    round_id: i64,
    queue: String,
    trigger: String,
    committed_at: DateTime<Utc>,
    pool_size: i32,
    match_count: i32,
    matched: i32,
    left_over: i32,
    rejected: i32,
    score: Option<f64>,
    factor_averages: serde_json::Value,
    solve_ms: f64,
    p50: Option<f64>,
    p90: Option<f64>,
    max: Option<f64>,
    no_server_matches: i32,
}

impl From<RoundLineRow> for RoundLine {
    fn from(r: RoundLineRow) -> Self {
        let factors = r
            .factor_averages
            .as_object()
            .map(|o| super::report::factor_means(o).collect())
            .unwrap_or_default();
        RoundLine {
            round_id: r.round_id,
            queue: r.queue,
            trigger: r.trigger,
            committed_at: r.committed_at,
            pool_size: r.pool_size,
            match_count: r.match_count,
            matched: r.matched,
            left_over: r.left_over,
            rejected: r.rejected,
            score: r.score,
            factors,
            solve_ms: r.solve_ms,
            wait_secs: r.p50.zip(r.p90).zip(r.max).map(|((a, b), c)| (a, b, c)),
            no_server_matches: r.no_server_matches,
        }
    }
}

/// The latest `limit` rounds (of `queue`, or of every queue), newest first.
pub async fn read_round_lines(
    db: &PgPool,
    queue: Option<&str>,
    limit: i64,
) -> Result<Vec<RoundLine>, sqlx::Error> {
    let rows: Vec<RoundLineRow> = sqlx::query_as(include_str!("sql/status_round_lines.sql"))
        .bind(queue)
        .bind(limit)
        .fetch_all(db)
        .await?;
    Ok(rows.into_iter().map(RoundLine::from).collect())
}

/// A row of `status_replica_lines.sql`.
#[derive(sqlx::FromRow)]
struct ReplicaLineRow {
    replica: String,
    live: bool,
    heartbeat_secs: Option<i64>,
    serves: i32,
    leads: Vec<String>,
}

/// Every daemon replica and the queues it leads.
pub async fn read_replica_lines(db: &PgPool) -> Result<Vec<ReplicaLine>, sqlx::Error> {
    let rows: Vec<ReplicaLineRow> = sqlx::query_as(include_str!("sql/status_replica_lines.sql"))
        .fetch_all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| ReplicaLine {
            replica: r.replica,
            live: r.live,
            heartbeat_secs: r.heartbeat_secs,
            serves: r.serves.max(0) as usize,
            leads: r.leads,
        })
        .collect())
}
