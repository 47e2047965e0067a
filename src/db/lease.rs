//! Leader lease per queue: a row with a holder, a term and an expiry (River's
//! `river_leader`, Oban's peers). The holder renews it on a timer; anyone may take an
//! expired lease, which bumps the term. A round commits only while its lease (holder and
//! term) is still current — see `commit::commit_round` — so a paused or partitioned old
//! leader cannot write, even if it wakes up in the middle of a commit.
//!
//! Times come from the database's clock (`now: None`): a replica whose clock runs ahead
//! can neither take a live lease early nor set an expiry that delays a takeover. Tests
//! pass a manual time instead (`Some`), which the queries use in place of `now()`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::DbError;

/// Proof of leadership of one queue for one term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub queue: String,
    pub holder: String,
    pub term: i64,
}

/// Take the lease of `queue` if it is free or expired. `None`: someone else holds it
/// (or we hold it already: use [`renew_lease`]).
pub async fn acquire_lease(
    db: &PgPool,
    queue: &str,
    holder: &str,
    ttl: Duration,
    now: Option<DateTime<Utc>>,
) -> Result<Option<Lease>, DbError> {
    let term: Option<i64> = sqlx::query_scalar(include_str!("sql/lease_acquire.sql"))
        .bind(queue)
        .bind(holder)
        .bind(now)
        .bind(ttl.as_secs_f64())
        .fetch_optional(db)
        .await?;
    Ok(term.map(|term| Lease {
        queue: queue.to_string(),
        holder: holder.to_string(),
        term,
    }))
}

/// Extend our lease to `now + ttl`. `false`: it expired or changed hands (we are no
/// longer the leader; acquiring again gives a new term).
pub async fn renew_lease(
    db: &PgPool,
    lease: &Lease,
    ttl: Duration,
    now: Option<DateTime<Utc>>,
) -> Result<bool, DbError> {
    let renewed = sqlx::query(include_str!("sql/lease_renew.sql"))
        .bind(&lease.queue)
        .bind(&lease.holder)
        .bind(lease.term)
        .bind(now)
        .bind(ttl.as_secs_f64())
        .execute(db)
        .await?
        .rows_affected();
    Ok(renewed == 1)
}

/// Give the lease up (shutdown): it expires now, so a standby takes over at its next look
/// instead of waiting for the TTL.
pub async fn release_lease(
    db: &PgPool,
    lease: &Lease,
    now: Option<DateTime<Utc>>,
) -> Result<(), DbError> {
    sqlx::query(include_str!("sql/lease_release.sql"))
        .bind(&lease.queue)
        .bind(&lease.holder)
        .bind(lease.term)
        .bind(now)
        .execute(db)
        .await?;
    Ok(())
}

/// How long until the current lease of `queue` expires, by the database's clock (or
/// `now`); zero once expired. None: nobody ever held it.
pub async fn lease_remaining(
    db: &PgPool,
    queue: &str,
    now: Option<DateTime<Utc>>,
) -> Result<Option<Duration>, DbError> {
    let secs: Option<f64> = sqlx::query_scalar(include_str!("sql/lease_remaining.sql"))
        .bind(queue)
        .bind(now)
        .fetch_optional(db)
        .await?;
    Ok(secs.map(|s| Duration::from_secs_f64(s.max(0.0))))
}
