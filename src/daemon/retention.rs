//! Bounded history, the daemon's part: each queue's leader prunes its own queue's rows
//! (`db::retention`) every `retention.interval`, while it holds the lease.
//!
//! Why the queue's lease rather than one lease for retention: the depth to keep is a
//! queue's setting (`round.history_matches`), which its leader already has; the work
//! spreads over the replicas the way the queues do; and no new lease, with its own
//! takeover and fencing, is needed. Pruning needs no fence: it only deletes rows past the
//! horizon, so two pruners (a lease changing hands, `matchmaker prune` at the same time)
//! only skip each other's rows. A queue no config lists has no leader; its history goes
//! with `matchmaker prune`, which covers every queue in the database.
//!
//! Without a horizon no history goes, but a pass still deletes the enqueue buckets that
//! have refilled (`call_buckets`): they hold nothing, and would pile up as client
//! backends come and go.

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use tokio::sync::watch;

use super::lease::LeaseHandle;
use crate::config::Config;
use crate::db::{
    self,
    retention::{self, QueuePruner},
};

/// Between two batches: the server's other sessions get it to themselves for a moment.
pub const BATCH_PAUSE: Duration = Duration::from_millis(20);

/// The first pass comes this soon after start (at most), not a whole interval later: a
/// daemon restarted more often than `retention.interval` still prunes.
const FIRST_PASS_AFTER: Duration = Duration::from_secs(60);

/// Prune `queue` every `retention.interval` while this replica leads it, until `stop`.
pub async fn prune_while_leading(
    db: PgPool,
    queue: String,
    lease: LeaseHandle,
    config: watch::Receiver<Arc<Config>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut wait = config.borrow().retention.interval.min(FIRST_PASS_AFTER);
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        // Read at every pass: a reload applies from the next one.
        let (retention, keep, limit) = {
            let c = config.borrow();
            let Some(q) = c.queues.get(&queue) else {
                return;
            };
            (
                c.retention.clone(),
                q.history_matches(),
                c.daemon.prune_batch_limit(),
            )
        };
        wait = retention.interval;
        if lease.current().await.is_none() {
            continue;
        }
        let mut pruner = match retention.horizon {
            None => QueuePruner::call_buckets_only(&queue, retention.batch_size),
            Some(horizon) => {
                match db::answered_within(limit, retention::cutoff(&db, horizon, None)).await {
                    Ok(cutoff) => QueuePruner::new(&queue, cutoff, keep, retention.batch_size),
                    Err(e) => {
                        tracing::warn!(queue, error = %e, "retention: reading the clock failed; next pass in {wait:?}");
                        continue;
                    }
                }
            }
        };
        // For the log: without a horizon, nothing has a cutoff.
        let (horizon, cutoff) = match retention.horizon {
            Some(h) => (crate::config::format_horizon(h), pruner.cutoff.to_string()),
            None => ("none".to_string(), "none".to_string()),
        };
        let started = std::time::Instant::now();
        let result = retention::prune_queue(&db, &mut pruner, BATCH_PAUSE, limit, || {
            let (stop, lease) = (stop.clone(), lease.clone());
            async move {
                let stopped = *stop.borrow();
                !stopped && lease.current().await.is_some()
            }
        })
        .await;
        match result {
            Ok(pruned) if !pruned.is_empty() => tracing::info!(
                queue,
                horizon,
                %cutoff,
                keep_matches_per_player = keep,
                rounds = pruned.rounds,
                matches = pruned.matches,
                match_players = pruned.match_players,
                entries = pruned.entries,
                backfill_requests = pruned.backfill_requests,
                avoids = pruned.avoids,
                call_buckets = pruned.call_buckets,
                batches = pruned.batches,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "history pruned"
            ),
            Ok(_) => tracing::debug!(queue, %cutoff, "retention: nothing past the horizon"),
            // A batch that failed (a lock or statement timeout, or no answer within
            // `limit`) rolled back alone; the batches before it stay done, and the next
            // pass goes on from there.
            Err(e) => {
                tracing::warn!(queue, error = %e, "retention: a batch failed; next pass in {wait:?}")
            }
        }
    }
}
