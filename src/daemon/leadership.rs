//! Balanced leadership, the loop: one per replica (`daemon::run`). Every
//! `daemon.lease_renew` (sooner when a lease it may take expires, or when another replica
//! joins, leaves or hands a queue over: NOTIFY on [`LEADERSHIP_CHANNEL`]) it
//!
//! 1. heartbeats its row in `replicas` and reads the live replicas (`db::replicas`);
//! 2. renews the leases it holds;
//! 3. plans from the replicas and the leases ([`super::balance::plan`]): its share of the
//!    queues, what to keep, hand over and take;
//! 4. hands over its excess between rounds (a queue whose worker is in a step is handed
//!    over by the worker itself before its next step), and takes free queues up to its
//!    share, and orphans whatever its share.
//!
//! The workers of the queues never take a lease themselves under the daemon (their
//! [`LeaseHandle`]s are balanced): this loop is the only taker, so the shares hold.
//! Safety stays with the lease: a lease changes hands only free or expired, with a new
//! term, and every commit is fenced by its term.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::PgPool;
use tokio::sync::{Notify, watch};

use super::balance;
use super::clock::Clock;
use super::lease::LeaseHandle;
use super::metrics::{self, ErrorKind};
use crate::config::Config;
use crate::db::{self, DbError};

/// The NOTIFY channel of leadership changes (payload: the replica that joined, left or
/// handed a queue over). Only wakes the other replicas' loops earlier; they poll anyway.
pub const LEADERSHIP_CHANNEL: &str = "matchmaker_leadership";

/// Never look again sooner than this after a look (a burst of notifications, a lease
/// that expires right now).
const MIN_WAIT: Duration = Duration::from_millis(100);

/// The queues this replica runs, each with its lease handle, and the wake-up of the loop.
#[derive(Default)]
pub struct Roster {
    slots: Mutex<BTreeMap<String, LeaseHandle>>,
    wake: Notify,
}

impl Roster {
    /// A queue's worker starts: its lease is now the loop's to take and renew.
    pub fn register(&self, queue: &str, handle: LeaseHandle) {
        self.lock().insert(queue.to_string(), handle);
        self.wake();
    }

    /// A queue's worker stopped (queue removed from the config, or shutdown).
    pub fn unregister(&self, queue: &str) {
        self.lock().remove(queue);
    }

    /// Look again now (another replica joined, left or handed a queue over).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    fn slots(&self) -> BTreeMap<String, LeaseHandle> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, LeaseHandle>> {
        self.slots.lock().expect("roster lock")
    }
}

/// What one look did (for the log and the tests).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Look {
    /// The queues we serve (registered workers), as our heartbeat row lists them.
    pub serves: Vec<String>,
    pub plan: balance::Plan,
    /// Queues handed over in this look.
    pub handed_over: Vec<String>,
    /// Queues taken in this look.
    pub taken: Vec<String>,
    /// Look again after this long at the latest.
    pub next_look: Duration,
}

/// Run the loop until `stop`. The caller deletes our row afterwards ([`leave`]).
pub async fn lead_fair_share(
    db: PgPool,
    holder: String,
    roster: Arc<Roster>,
    clock: Arc<dyn Clock>,
    config: watch::Receiver<Arc<Config>>,
    mut stop: watch::Receiver<bool>,
) {
    // The queues we last told the others we serve (None: not registered yet).
    let mut announced: Option<Vec<String>> = None;
    loop {
        let (ttl, renew) = {
            let c = config.borrow();
            (c.daemon.lease_ttl, c.daemon.lease_renew)
        };
        // A look that outlasts the lease TTL renews nothing it holds: give it up (a
        // statement sent into a cut route would otherwise wait on TCP for minutes).
        let looked =
            db::answered_within(ttl, look(&db, &holder, &roster, clock.as_ref(), ttl, renew));
        let wait = match looked.await {
            Ok(look) => {
                // We joined, serve other queues, or handed queues over: the others
                // rebalance now rather than at their next look.
                if announced.as_ref() != Some(&look.serves) || !look.handed_over.is_empty() {
                    let _ = tokio::time::timeout(ttl, notify(&db, &holder)).await;
                    announced = Some(look.serves.clone());
                }
                look.next_look
            }
            Err(e) => {
                metrics::record_error(ErrorKind::Lease);
                tracing::warn!(error = %e, "balanced leadership: look failed; retrying in {renew:?}");
                renew
            }
        };
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(wait) => {}
            _ = roster.wake.notified() => tokio::time::sleep(MIN_WAIT).await,
        }
    }
}

/// One look: heartbeat, renew, plan, hand over, take.
pub async fn look(
    db: &PgPool,
    holder: &str,
    roster: &Roster,
    clock: &dyn Clock,
    ttl: Duration,
    renew: Duration,
) -> Result<Look, DbError> {
    let slots = roster.slots();
    let queues: Vec<String> = slots.keys().cloned().collect();
    let now = clock.lease_now();
    // Heartbeat before the renewals: our row never outlives our leases, so when our
    // leases expire the others no longer count us and take them at once.
    let peers = db::replicas::heartbeat(db, holder, &queues, ttl, now).await?;
    for (queue, handle) in &slots {
        if let Err(e) = handle.renew(db, ttl, now).await {
            metrics::record_error(ErrorKind::Lease);
            tracing::warn!(queue, error = %e, "lease renewal failed");
        }
    }
    let leases = db::replicas::lease_states(db, now).await?;
    let plan = balance::plan(holder, &queues, &peers, &leases, ttl);
    metrics::record_share(plan.replicas, plan.share);
    watch_notification_queue(db).await;

    let mut look = Look {
        next_look: renew,
        ..Look::default()
    };
    for queue in &plan.keep {
        slots[queue].request_hand_over(false);
    }
    for queue in &plan.hand_over {
        let handle = &slots[queue];
        handle.request_hand_over(true);
        match handle.try_hand_over(db, now).await {
            Ok(Some(_)) => look.handed_over.push(queue.clone()),
            // A round runs: its worker hands the queue over before its next step.
            Ok(None) => {}
            Err(e) => {
                metrics::record_error(ErrorKind::Lease);
                tracing::warn!(queue, error = %e, "hand-over failed; the lease stays ours");
            }
        }
    }
    let mut leading = plan.keep.len() + plan.hand_over.len() - look.handed_over.len();
    for queue in plan.orphans.iter().chain(&plan.take) {
        let orphan = plan.orphans.contains(queue);
        if (!orphan && leading >= plan.share) || look.taken.contains(queue) {
            continue;
        }
        match slots[queue].take(db, queue, holder, ttl, now).await {
            Ok(Some(_)) => {
                if orphan {
                    tracing::info!(queue, "took an orphaned queue beyond our share");
                }
                look.taken.push(queue.clone());
                leading += 1;
            }
            // Another replica was quicker.
            Ok(None) => {}
            Err(e) => {
                metrics::record_error(ErrorKind::Lease);
                tracing::warn!(queue, error = %e, "taking the lease failed");
            }
        }
    }
    for handle in slots.values() {
        handle.mark_decided();
    }
    // Look again right when a lease we may want expires (a dead replica's): we take over
    // within its TTL, not a renew interval later.
    for l in &leases {
        if slots.contains_key(&l.queue) && l.live() && l.holder != holder {
            let until = Duration::from_secs_f64(l.expires_in);
            look.next_look = look.next_look.min(until.max(MIN_WAIT));
        }
    }
    if !look.handed_over.is_empty() || !look.taken.is_empty() {
        tracing::info!(
            replicas = plan.replicas,
            share = plan.share,
            leading,
            handed_over = ?look.handed_over,
            taken = ?look.taken,
            "balanced leadership"
        );
    }
    look.plan = plan;
    look.serves = queues;
    Ok(look)
}

/// Report how full PostgreSQL's notification queue is; past its limit the matchmaker sends
/// no notification, so listeners poll and a stuck listener is for the operator to end.
async fn watch_notification_queue(db: &PgPool) {
    match db::notify::queue_usage(db).await {
        Ok((usage, limit)) => {
            metrics::record_notification_queue(usage);
            if usage >= limit {
                tracing::warn!(
                    usage,
                    limit,
                    "the notification queue is past matchmaker.notify_queue_limit: no \
                     notifications are sent (clients poll) until a session that LISTENs \
                     and holds a transaction open is ended (pg_stat_activity)"
                );
            }
        }
        Err(e) => tracing::debug!(error = %e, "could not read the notification queue's usage"),
    }
}

/// Wake the other replicas' loops (best effort: they poll anyway).
pub async fn notify(db: &PgPool, holder: &str) {
    if let Err(e) = sqlx::query("SELECT matchmaker_notify($1, $2)")
        .bind(LEADERSHIP_CHANNEL)
        .bind(holder)
        .execute(db)
        .await
    {
        tracing::debug!(error = %e, "leadership NOTIFY failed; the others find out at their next look");
    }
}

/// Leave the fleet (shutdown): delete our row, so the others count one replica fewer.
/// The leases are released by the workers as they stop; [`notify`] afterwards.
pub async fn leave(db: &PgPool, holder: &str) {
    if let Err(e) = db::replicas::leave(db, holder).await {
        tracing::warn!(error = %e, "could not delete our replica row; it expires by itself");
    }
}
