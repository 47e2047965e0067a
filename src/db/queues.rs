//! The queues the database knows (`queues` table): what the enqueue functions accept.
//!
//! A queue's leader publishes it when it takes the lease and whenever its config changes;
//! a queue no running config lists is retired by whichever replica can take its lease,
//! and its queued entries are rejected with the reason (never left waiting in silence).

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::DbError;
use matchmaker_optimizer::model::format_label;
use matchmaker_optimizer::{Network, QueueModel};

/// What the `queues` row of a queue says: the shape the enqueue functions check, and the
/// hash of the config it came from.
#[derive(Debug, Clone)]
pub struct QueuePublication<'a> {
    pub model: &'a QueueModel,
    pub regions: &'a [String],
    /// `[min, max]` of the skills the queue accepts (None: any).
    pub skill_range: Option<[f64; 2]>,
    pub ticket_ttl: std::time::Duration,
    pub config_hash: String,
    /// The client logins' quotas: (max_queued_per_login, max_backfill_per_login,
    /// enqueue_rate, enqueue_burst, max_avoids_per_login).
    pub quotas: (u32, u32, f64, f64, u32),
    /// The ready check: how long players have to accept (None: matches are final), and
    /// the decline cooldown (None: none).
    pub ready_timeout: Option<std::time::Duration>,
    pub decline_cooldown: Option<std::time::Duration>,
    /// The ttl of a game server's announcement, when the queue requires servers.
    pub server_ttl: Option<std::time::Duration>,
    /// The built-in rating (None: an unrated queue).
    pub rating: Option<RatingPublication>,
}

/// A rated queue's pool, as `rating_pools` holds it.
#[derive(Debug, Clone)]
pub struct RatingPublication {
    /// The pool's name (None: the queue's own).
    pub pool: Option<String>,
    pub system: &'static str,
    pub initial: f64,
    pub initial_uncertainty: f64,
    pub idle_to_initial: std::time::Duration,
    /// The whole `[queues.NAME.rating]` table.
    pub config: serde_json::Value,
}

/// Insert or update the published row of `queue` (active again if it was retired).
pub async fn publish_queue<'a>(
    db: &PgPool,
    queue: &str,
    config: impl Into<QueuePublication<'a>>,
    holder: &str,
) -> Result<(), DbError> {
    let config = config.into();
    let m = config.model;
    let network = match m.network {
        Network::PeerToPeer => "peer_to_peer",
        Network::Dedicated => "dedicated",
    };
    let (min_teams, min_team_size) = m.min_teams_and_team_size();
    let formats: Vec<String> = m.formats().iter().map(|f| format_label(f)).collect();
    let pool = config
        .rating
        .as_ref()
        .map(|r| r.pool.clone().unwrap_or_else(|| queue.to_string()));
    let mut tx = db.begin().await?;
    if let (Some(rating), Some(pool)) = (&config.rating, &pool) {
        publish_rating_pool(&mut tx, pool, rating, holder).await?;
    }
    sqlx::query(include_str!("sql/queues_publish.sql"))
        .bind(queue)
        .bind(m.teams as i32)
        .bind(m.team_size as i32)
        .bind(network)
        .bind(&m.roles)
        .bind(config.regions)
        // A party always plays on one team (AccelByte's rebalance guide): the largest team of any format, which
        // is the full format's.
        .bind(m.team_size as i32)
        .bind(config.ticket_ttl.as_secs_f64())
        .bind(m.max_wait.as_secs_f64())
        .bind(&config.config_hash)
        .bind(holder)
        .bind(min_teams as i32)
        .bind(min_team_size as i32)
        .bind(&formats)
        .bind(config.quotas.0.min(i32::MAX as u32) as i32)
        .bind(config.quotas.1.min(i32::MAX as u32) as i32)
        .bind(config.quotas.2)
        .bind(config.quotas.3)
        .bind(&m.filters.same)
        .bind(m.avoids.max_per_player.min(i32::MAX as usize) as i32)
        .bind(config.ready_timeout.map(|d| d.as_secs_f64()))
        .bind(config.decline_cooldown.map(|d| d.as_secs_f64()))
        .bind(config.quotas.4.min(i32::MAX as u32) as i32)
        .bind(&pool)
        .bind(config.server_ttl.map(|d| d.as_secs_f64()))
        .bind(config.skill_range.map(|r| r[0]))
        .bind(config.skill_range.map(|r| r[1]))
        .bind(&m.maps.pool)
        .bind(m.maps.vetoes as i32)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

/// Insert or update a rating pool's row (unchanged: no write). Queues of one pool agree on
/// it (the config refuses otherwise), so whichever publishes last writes the same row.
async fn publish_rating_pool(
    tx: &mut sqlx::PgConnection,
    pool: &str,
    rating: &RatingPublication,
    holder: &str,
) -> Result<(), DbError> {
    sqlx::query(include_str!("sql/queues_publish_rating_pool.sql"))
        .bind(pool)
        .bind(rating.system)
        .bind(rating.initial)
        .bind(rating.initial_uncertainty)
        .bind(rating.idle_to_initial.as_secs_f64())
        .bind(&rating.config)
        .bind(holder)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// How long retiring a queue waits for a row lock (a client's open `cancel` or
/// `keep_alive` transaction holds its entries' rows); the caller retries later.
pub const RETIRE_LOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Retire `queue`: enqueues into it are refused from now on, and its queued entries are
/// rejected with `reason`. The caller holds the queue's lease. Returns the entries
/// rejected.
///
/// An enqueue already running when this commits (it read the queue as active) can still
/// commit its entry after the sweep below: enqueue() takes no lock on the queue's row
/// (that lock cost a tenth of every enqueue). [`retire_unlisted`], which
/// the supervisor runs every poll interval, rejects such an entry with the same kind of
/// reason.
pub async fn retire_queue(db: &PgPool, queue: &str, reason: &str) -> Result<u64, DbError> {
    let mut tx = db.begin().await?;
    sqlx::query("SELECT set_config('lock_timeout', $1, true)")
        .bind(format!("{}ms", RETIRE_LOCK_TIMEOUT.as_millis()))
        .execute(&mut *tx)
        .await?;
    sqlx::query(include_str!("sql/queues_retire.sql"))
        .bind(queue)
        .bind(reason)
        .execute(&mut *tx)
        .await?;
    let rejected = sqlx::query(include_str!("sql/queues_reject_queued.sql"))
        .bind(queue)
        .bind(reason)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    tx.commit().await?;
    Ok(rejected)
}

/// Retire the queues that no running config lists: published queues dropped from the
/// config while no daemon ran, and queued entries of queues never served. Only a queue
/// whose lease is free is touched (we take it for the moment): a replica that still runs
/// the queue keeps its lease renewed, so its queue is left alone. The supervisor runs this
/// at start and every poll interval: it also rejects an enqueue that raced a retirement
/// (enqueue() takes no lock on the queue's row).
pub async fn retire_unlisted(
    db: &PgPool,
    holder: &str,
    configured: &[String],
    ttl: std::time::Duration,
) -> Result<(), DbError> {
    for queue in unlisted_queues(db, configured).await? {
        let Some(lease) = super::acquire_lease(db, &queue, holder, ttl, None).await? else {
            continue;
        };
        let reason = format!("queue {queue} is not served: no matchmaker config lists it");
        let rejected = retire_queue(db, &queue, &reason).await;
        super::release_lease(db, &lease, None).await?;
        let rejected = rejected?;
        tracing::info!(queue, rejected, "queue retired: no config lists it");
    }
    Ok(())
}

/// Queues with something to retire that `configured` does not list: active published
/// queues, and queues that only queued entries name (rows written before queues were
/// published).
pub async fn unlisted_queues(db: &PgPool, configured: &[String]) -> Result<Vec<String>, DbError> {
    Ok(sqlx::query_scalar(include_str!("sql/queues_unlisted.sql"))
        .bind(configured)
        .fetch_all(db)
        .await?)
}

/// One published queue, as clients see it in `queue_catalog`.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct PublishedQueue {
    pub queue: String,
    pub active: bool,
    pub config_hash: String,
    pub published_at: DateTime<Utc>,
    pub retired_reason: Option<String>,
}

pub async fn published_queues(db: &PgPool) -> Result<Vec<PublishedQueue>, DbError> {
    Ok(sqlx::query_as(include_str!("sql/queues_published.sql"))
        .fetch_all(db)
        .await?)
}

/// A queue name the database does not know, with the names it does (active or retired):
/// an operator's command names the queue it was asked for and where to look instead.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unknown queue {queue:?}; {}", known_queues_text(.known))]
pub struct UnknownQueue {
    pub queue: String,
    pub known: Vec<String>,
}

fn known_queues_text(known: &[String]) -> String {
    if known.is_empty() {
        "the database knows no queue yet (a queue is published when `matchmaker run` serves it)"
            .to_string()
    } else {
        format!("queues: {}", known.join(", "))
    }
}

/// `Err(UnknownQueue)` inside `Ok` when the database has never known `queue`: neither
/// published it nor kept a round of it. The operators' commands call it before reading
/// anything of that queue.
pub async fn check_known_queue(
    db: &PgPool,
    queue: &str,
) -> Result<Result<(), UnknownQueue>, DbError> {
    // The rounds' queues by a walk of rounds_by_queue_latest, one index probe per queue
    // (not a scan of the whole history).
    let known: Vec<String> = sqlx::query_scalar(include_str!("sql/queues_known.sql"))
        .fetch_all(db)
        .await?;
    if known.iter().any(|q| q == queue) {
        Ok(Ok(()))
    } else {
        Ok(Err(UnknownQueue {
            queue: queue.to_string(),
            known,
        }))
    }
}
