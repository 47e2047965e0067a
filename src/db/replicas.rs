//! The daemon replicas (`replicas` table): each registers itself with a
//! heartbeat, so that every replica can count the live ones and lead its share of the
//! queues (Oban's `oban_peers`). Leadership itself stays in `leases`: nothing here makes
//! a replica a leader, so the term fencing of the commit is untouched.
//!
//! Times come from the database's clock (`now: None`), as the leases' do; tests pass a
//! manual time instead.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::DbError;

/// A live replica and the queues it may lead.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Peer {
    pub replica: String,
    pub queues: Vec<String>,
}

/// One queue's lease as the balancer sees it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct LeaseState {
    pub queue: String,
    pub holder: String,
    pub term: i64,
    /// Seconds until the lease expires (negative: expired that long ago).
    pub expires_in: f64,
}

impl LeaseState {
    pub fn live(&self) -> bool {
        self.expires_in > 0.0
    }
}

/// Rows expired this long ago are deleted by the next heartbeat of any replica: a replica
/// that died is shown as gone by `matchmaker status` for a while, then forgotten.
pub const FORGET_AFTER: Duration = Duration::from_secs(24 * 3600);

/// Write our heartbeat (registering us if needed) and return the live replicas, us
/// included, ordered by name. `queues`: the queues our config lists.
pub async fn heartbeat(
    db: &PgPool,
    replica: &str,
    queues: &[String],
    ttl: Duration,
    now: Option<DateTime<Utc>>,
) -> Result<Vec<Peer>, DbError> {
    // Our row first, so that the read below always counts us.
    sqlx::query(include_str!("sql/replicas_heartbeat.sql"))
        .bind(replica)
        .bind(queues)
        .bind(now)
        .bind(ttl.as_secs_f64())
        .bind(env!("CARGO_PKG_VERSION"))
        .execute(db)
        .await?;
    sqlx::query(include_str!("sql/replicas_forget.sql"))
        .bind(now)
        .bind(FORGET_AFTER.as_secs_f64())
        .execute(db)
        .await?;
    live_replicas(db, now).await
}

/// The live replicas (heartbeat not expired), ordered by name.
pub async fn live_replicas(db: &PgPool, now: Option<DateTime<Utc>>) -> Result<Vec<Peer>, DbError> {
    Ok(sqlx::query_as(include_str!("sql/replicas_live.sql"))
        .bind(now)
        .fetch_all(db)
        .await?)
}

/// Leave: delete our row (shutdown), so the others count one replica fewer at once.
pub async fn leave(db: &PgPool, replica: &str) -> Result<(), DbError> {
    sqlx::query("DELETE FROM replicas WHERE replica = $1")
        .bind(replica)
        .execute(db)
        .await?;
    Ok(())
}

/// Every queue's lease, live or expired, with its remaining time by the database's clock
/// (or `now`).
pub async fn lease_states(
    db: &PgPool,
    now: Option<DateTime<Utc>>,
) -> Result<Vec<LeaseState>, DbError> {
    Ok(
        sqlx::query_as(include_str!("sql/replicas_lease_states.sql"))
            .bind(now)
            .fetch_all(db)
            .await?,
    )
}
