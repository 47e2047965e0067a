//! A queue's lease as the daemon holds it: one [`LeaseHandle`] per queue, shared by the
//! queue's worker, the retention pruner and the replica's leadership loop, so that the
//! loop can take and hand over leases while the worker runs rounds under them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{Mutex, Notify};

use super::metrics;
use crate::db::{self, DbError, Lease};

/// The lease of one queue, shared by the worker, the retention pruner and whoever renews
/// it (the replica's leadership loop under `daemon::run`).
#[derive(Clone)]
pub struct LeaseHandle(pub(super) Arc<LeaseSlot>);

pub(super) struct LeaseSlot {
    pub(super) lease: Mutex<Option<Lease>>,
    /// Held by the worker for a whole step, a round included: a hand-over waits for it,
    /// so a queue changes hands between rounds, never in the middle of a commit.
    pub(super) step: Mutex<()>,
    /// Whether the worker takes the lease itself whenever it is free (a lone worker, the
    /// tests), or only renews it and the replica's balanced leadership takes it
    /// (`daemon::leadership`).
    pub(super) balanced: bool,
    /// The balancer asks for the lease to be given up (we lead beyond our share).
    pub(super) hand_over: AtomicBool,
    /// The leadership loop has planned for this queue at least once.
    pub(super) decided: AtomicBool,
    /// Wakes the worker: the leadership loop took the lease, or decided for the first
    /// time (a worker may otherwise sleep a whole poll interval as a standby).
    pub(super) changed: Notify,
}

impl Default for LeaseHandle {
    fn default() -> Self {
        LeaseHandle::new(false)
    }
}

impl LeaseHandle {
    fn new(balanced: bool) -> Self {
        LeaseHandle(Arc::new(LeaseSlot {
            lease: Mutex::new(None),
            step: Mutex::new(()),
            balanced,
            hand_over: AtomicBool::new(false),
            decided: AtomicBool::new(false),
            changed: Notify::new(),
        }))
    }

    /// The leadership loop planned for this queue (the first time, the worker is woken).
    pub fn mark_decided(&self) {
        if !self.0.decided.swap(true, Ordering::Relaxed) {
            self.0.changed.notify_one();
        }
    }

    /// Wait until the leadership loop has planned for this queue once, at most `at_most`
    /// (a lone worker does not wait): the worker's first look then already knows whether
    /// it leads, and reports so.
    pub async fn wait_decided(&self, at_most: Duration) {
        let deadline = tokio::time::Instant::now() + at_most;
        while self.0.balanced && !self.0.decided.load(Ordering::Relaxed) {
            if tokio::time::timeout_at(deadline, self.0.changed.notified())
                .await
                .is_err()
            {
                return;
            }
        }
    }

    /// Resolves when the leadership loop took this lease (or first decided).
    pub async fn changed(&self) {
        self.0.changed.notified().await;
    }

    /// A handle whose lease only the replica's leadership loop takes (`daemon::run`).
    pub fn balanced() -> Self {
        LeaseHandle::new(true)
    }

    pub async fn current(&self) -> Option<Lease> {
        self.0.lease.lock().await.clone()
    }

    /// Ask for (or call off) a hand-over: the lease is given up at the next moment no
    /// step runs.
    pub fn request_hand_over(&self, wanted: bool) {
        self.0.hand_over.store(wanted, Ordering::Relaxed);
    }

    pub fn hand_over_requested(&self) -> bool {
        self.0.hand_over.load(Ordering::Relaxed)
    }

    /// Give the lease up now if no step is running (else `Ok(None)`: try again later, or
    /// the worker does it before its next step).
    pub async fn try_hand_over(
        &self,
        db: &sqlx::PgPool,
        now: Option<DateTime<Utc>>,
    ) -> Result<Option<Lease>, DbError> {
        let Ok(_between_rounds) = self.0.step.try_lock() else {
            return Ok(None);
        };
        self.hand_over_locked(db, now).await
    }

    /// Give the lease up; the caller holds the step lock.
    pub(super) async fn hand_over_locked(
        &self,
        db: &sqlx::PgPool,
        now: Option<DateTime<Utc>>,
    ) -> Result<Option<Lease>, DbError> {
        let mut current = self.0.lease.lock().await;
        let Some(lease) = current.clone() else {
            self.request_hand_over(false);
            return Ok(None);
        };
        db::release_lease(db, &lease, now).await?;
        *current = None;
        self.request_hand_over(false);
        metrics::record_lease(&lease.queue, false);
        metrics::record_hand_over(&lease.queue);
        tracing::info!(
            queue = %lease.queue,
            term = lease.term,
            "lease handed over: another replica is below its share"
        );
        Ok(Some(lease))
    }

    /// Renew the lease we hold. `Ok(false)`: we hold none, or it expired or changed
    /// hands (then it is dropped).
    pub async fn renew(
        &self,
        db: &sqlx::PgPool,
        ttl: Duration,
        now: Option<DateTime<Utc>>,
    ) -> Result<bool, DbError> {
        let mut current = self.0.lease.lock().await;
        let Some(lease) = current.clone() else {
            return Ok(false);
        };
        if db::renew_lease(db, &lease, ttl, now).await? {
            return Ok(true);
        }
        tracing::warn!(
            queue = %lease.queue,
            term = lease.term,
            "lease lost: another replica may lead this queue now"
        );
        *current = None;
        metrics::record_lease(&lease.queue, false);
        Ok(false)
    }

    /// Take the lease of `queue` if it is free or expired (and we hold none).
    pub async fn take(
        &self,
        db: &sqlx::PgPool,
        queue: &str,
        holder: &str,
        ttl: Duration,
        now: Option<DateTime<Utc>>,
    ) -> Result<Option<Lease>, DbError> {
        let mut current = self.0.lease.lock().await;
        if current.is_some() {
            return Ok(current.clone());
        }
        if let Some(lease) = db::acquire_lease(db, queue, holder, ttl, now).await? {
            tracing::info!(
                queue,
                holder,
                term = lease.term,
                "lease acquired: leading this queue"
            );
            self.request_hand_over(false);
            *current = Some(lease);
            self.0.changed.notify_one();
        }
        metrics::record_lease(queue, current.is_some());
        Ok(current.clone())
    }
}

/// Renew our lease, or (unless the handle is balanced: then only the replica's leadership
/// loop takes leases) take the queue's lease if it is free or expired. Returns the lease
/// we hold afterwards (None: another replica leads this queue, or nobody does yet).
pub async fn keep_lease(
    db: &sqlx::PgPool,
    handle: &LeaseHandle,
    queue: &str,
    holder: &str,
    ttl: Duration,
    now: Option<DateTime<Utc>>,
) -> Result<Option<Lease>, DbError> {
    if handle.renew(db, ttl, now).await? {
        metrics::record_lease(queue, true);
        return Ok(handle.current().await);
    }
    if handle.0.balanced {
        metrics::record_lease(queue, false);
        return Ok(None);
    }
    handle.take(db, queue, holder, ttl, now).await
}
