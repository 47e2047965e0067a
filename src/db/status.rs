//! The reads behind `matchmaker status`, one typed row per line of the view: per queue
//! the pool and the countdown, the recent rounds with their wait percentiles, and the
//! daemon replicas. They read the ops read models (`queue_state`, `round_summaries`,
//! `match_details`, `replica_leadership`) and are the same an operator can run in `psql`.

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Row};

/// Per queue: what the countdown is made of.
#[derive(Debug, Clone, PartialEq)]
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
#[derive(Debug, Clone, PartialEq)]
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
}

/// One daemon replica (a row of the `replica_leadership` view).
#[derive(Debug, Clone, PartialEq)]
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
    let queue_rows = sqlx::query(
        // Queues the daemon runs (queue_state) plus queues that only have waiting
        // players (no daemon yet): a full join of the two.
        "WITH pools AS (
             SELECT queue, count(*) AS pool_size
               FROM queue_entries
              WHERE status = 'queued'
              GROUP BY queue)
         SELECT coalesce(s.queue, p.queue) AS queue,
                coalesce(p.pool_size, 0) AS pool_size,
                ceil(greatest(0, extract(epoch FROM s.next_round_at - now())))::bigint
                    AS seconds_to_next,
                coalesce(s.waiting_for, 'no daemon') AS waiting_for,
                s.target_pool,
                s.min_pool,
                l.holder || ' (term ' || l.term || ')' AS leader,
                (SELECT count(*) FROM matches m
                  WHERE m.queue = coalesce(s.queue, p.queue) AND m.status = 'pending')
                    AS pending_matches
           FROM queue_state s
           FULL JOIN pools p ON p.queue = s.queue
           -- Only a live lease names a leader; an expired one is up for grabs.
           LEFT JOIN leases l
                  ON l.queue = coalesce(s.queue, p.queue) AND l.expires_at > now()
          WHERE $1::text IS NULL OR coalesce(s.queue, p.queue) = $1
          ORDER BY 1",
    )
    .bind(queue)
    .fetch_all(db)
    .await?;
    queue_rows
        .iter()
        .map(|r| {
            Ok(QueueLine {
                queue: r.try_get("queue")?,
                pool_size: r.try_get("pool_size")?,
                seconds_to_next: r.try_get("seconds_to_next")?,
                waiting_for: r.try_get("waiting_for")?,
                target_pool: r.try_get("target_pool")?,
                min_pool: r.try_get("min_pool")?,
                leader: r.try_get("leader")?,
                pending_matches: r.try_get("pending_matches")?,
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()
}

/// The latest `limit` rounds (of `queue`, or of every queue), newest first.
pub async fn read_round_lines(
    db: &PgPool,
    queue: Option<&str>,
    limit: i64,
) -> Result<Vec<RoundLine>, sqlx::Error> {
    let round_rows = sqlx::query(
        "SELECT r.round_id, r.queue, r.trigger, r.committed_at, r.pool_size, r.match_count,
                r.matched, r.left_over, r.rejected, r.score, r.factor_averages, r.solve_ms,
                w.p50, w.p90, w.max
           FROM round_summaries r
           -- Wait from enqueue to match of the players this round placed.
           LEFT JOIN LATERAL (
                SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d.waited_seconds) AS p50,
                       percentile_cont(0.9) WITHIN GROUP (ORDER BY d.waited_seconds) AS p90,
                       max(d.waited_seconds) AS max
                  FROM match_details d
                 WHERE d.round_id = r.round_id) w ON true
          WHERE $1::text IS NULL OR r.queue = $1
          ORDER BY r.round_id DESC
          LIMIT $2",
    )
    .bind(queue)
    .bind(limit)
    .fetch_all(db)
    .await?;
    round_rows
        .iter()
        .map(|r| {
            let factors: serde_json::Value = r.try_get("factor_averages")?;
            let factors = factors
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter_map(|(k, v)| v.as_f64().map(|v| (k.clone(), v)))
                        .collect()
                })
                .unwrap_or_default();
            let p50: Option<f64> = r.try_get("p50")?;
            let p90: Option<f64> = r.try_get("p90")?;
            let max: Option<f64> = r.try_get("max")?;
            Ok(RoundLine {
                round_id: r.try_get("round_id")?,
                queue: r.try_get("queue")?,
                trigger: r.try_get("trigger")?,
                committed_at: r.try_get("committed_at")?,
                pool_size: r.try_get("pool_size")?,
                match_count: r.try_get("match_count")?,
                matched: r.try_get("matched")?,
                left_over: r.try_get("left_over")?,
                rejected: r.try_get("rejected")?,
                score: r.try_get("score")?,
                factors,
                solve_ms: r.try_get("solve_ms")?,
                wait_secs: p50.zip(p90).zip(max).map(|((a, b), c)| (a, b, c)),
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()
}

/// Every daemon replica and the queues it leads.
pub async fn read_replica_lines(db: &PgPool) -> Result<Vec<ReplicaLine>, sqlx::Error> {
    sqlx::query(
        "SELECT replica, live,
                floor(extract(epoch FROM now() - heartbeat_at))::bigint AS heartbeat_secs,
                cardinality(serves) AS serves, leads
           FROM replica_leadership
          ORDER BY replica",
    )
    .fetch_all(db)
    .await?
    .iter()
    .map(|r| {
        Ok(ReplicaLine {
            replica: r.try_get("replica")?,
            live: r.try_get("live")?,
            heartbeat_secs: r.try_get("heartbeat_secs")?,
            serves: r.try_get::<i32, _>("serves")?.max(0) as usize,
            leads: r.try_get("leads")?,
        })
    })
    .collect::<Result<Vec<_>, sqlx::Error>>()
}
