//! The round daemon (`matchmaker run`): for each configured queue, a worker that keeps the
//! queue's leader lease, watches the pool and runs rounds (snapshot -> solve -> commit)
//! when a trigger fires; plus the config reload and the enqueue listener.
//!
//! ```text
//! run(db, config, options, shutdown)
//!  ├─ config watcher (file change, SIGHUP)  ──► watch<Arc<Config>>
//!  ├─ LISTEN matchmaker_enqueue             ──► wakes the queue's worker
//!  ├─ LISTEN matchmaker_leadership          ──► wakes the leadership loop
//!  ├─ leadership loop (balanced leadership): heartbeat in `replicas`, renew our leases,
//!  │    hand over what exceeds our share of the queues, take free ones up to it
//!  └─ per queue:
//!       ├─ retention: prune the queue's history past the horizon while leading it
//!       └─ worker loop: step() on wake-up (next round time, poll interval, NOTIFY,
//!          config change) until shutdown; then release the lease
//! ```
//!
//! Entry point: [`run`]. Tests drive [`worker::QueueWorker::step`] directly with a
//! [`clock::ManualClock`].
//!
//! * Never two rounds of one queue at once: one worker per queue per process, rounds run
//!   inside its loop; across processes the lease decides, and the commit checks its term.
//! * Several replicas share the queues: each leads about its share (Q/R of Q queues among
//!   R live replicas; [`balance`], [`leadership`]) and hands queues over between rounds
//!   when a replica joins; a replica that dies is noticed when its heartbeat and leases
//!   expire.
//! * Shutdown: no new rounds start; the replica leaves the `replicas` table; a round in
//!   flight finishes (commits, or is abandoned with its entries still queued if its lease
//!   was lost); the leases are released so the others take over at once.

pub mod balance;
pub mod clock;
pub mod cores;
pub mod countdown;
mod db_settings;
pub mod endpoints;
pub mod health;
pub mod leadership;
pub mod lease;
pub mod metrics;
pub mod outcome;
pub mod ratings;
pub mod ready_record;
pub mod reload;
pub mod retention;
pub mod round;
pub mod trigger;
pub mod wait_estimate;
pub mod worker;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::db;
use clock::Clock;
use health::{Health, QueueRole};
use leadership::{LEADERSHIP_CHANNEL, Roster};
use lease::LeaseHandle;
use metrics::ErrorKind;
use round::RoundRunner;
use worker::{QueueWorker, StepOutcome};

/// The NOTIFY channel of enqueues (payload: queue name).
pub const ENQUEUE_CHANNEL: &str = "matchmaker_enqueue";
/// The NOTIFY channel of committed rounds (payload: JSON).
pub const ROUND_CHANNEL: &str = "matchmaker_round";

/// After an enqueue notification, wait this long before looking at the pool, so that a
/// burst of enqueues costs one look, not one per row.
const NOTIFY_DEBOUNCE: Duration = Duration::from_millis(250);

pub struct DaemonOptions {
    /// This replica's name in the leases table (default: `hostname-pid`).
    pub holder: String,
    /// Watched for hot reload (and re-read on SIGHUP). None: no reload.
    pub config_path: Option<PathBuf>,
    pub clock: Arc<dyn Clock>,
    /// What `/readyz` reports; the daemon keeps it up to date.
    pub health: Arc<Health>,
}

impl Default for DaemonOptions {
    fn default() -> Self {
        DaemonOptions {
            holder: default_holder(),
            config_path: None,
            clock: Arc::new(clock::SystemClock),
            health: Arc::new(Health::default()),
        }
    }
}

/// How often the daemon re-reads the database's clock.
const CLOCK_SAMPLE_EVERY: Duration = Duration::from_secs(10);

/// One sample of the database's clock into `clock`; a failed read keeps the last offset.
async fn align_clock(db: &PgPool, clock: &clock::DatabaseAligned) {
    let sent = clock.inner_now();
    match db::answered_within(CLOCK_SAMPLE_EVERY, db::database_now(db)).await {
        Ok(database) => {
            let received = clock.inner_now();
            if clock.observe(sent, database, received) {
                let offset_ms = clock.offset().num_milliseconds();
                if offset_ms.abs() >= 1000 {
                    tracing::warn!(
                        offset_ms,
                        "this machine's clock is off the database's; round times follow the database"
                    );
                }
            }
        }
        Err(e) => tracing::debug!(error = %e, "could not read the database's clock"),
    }
}

async fn keep_clock_aligned(
    db: PgPool,
    clock: Arc<clock::DatabaseAligned>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(CLOCK_SAMPLE_EVERY) => align_clock(&db, &clock).await,
            _ = stop.changed() => return,
        }
    }
}

/// `hostname-pid`: unique per process, readable in the leases table.
pub fn default_holder() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "matchmaker".into());
    format!("{host}-{}", std::process::id())
}

/// Run until `shutdown` completes; then finish in-flight rounds and release the leases.
pub async fn run(
    db: PgPool,
    config: Config,
    options: DaemonOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let (config_tx, config_rx) = watch::channel(Arc::new(config));
    let (stop_tx, stop_rx) = watch::channel(false);
    let (wake_tx, _) = broadcast::channel::<String>(1024);
    // One budget of solver cores for every queue's rounds (read at start, like the
    // session limits): overlapping rounds split the cores instead of each taking all.
    let cores = match config_rx.borrow().daemon.solver_threads {
        Some(n) => cores::SolverCores::new(n),
        None => cores::SolverCores::of_this_machine(),
    };
    tracing::info!(
        solver_cores = cores.total(),
        "solver cores shared by the queues"
    );
    let mut options = options;
    let mut background: Vec<JoinHandle<()>> = Vec::new();
    if options.clock.lease_now().is_none() {
        // The wall clock: read the database's instead, so that a replica whose clock is
        // off still writes round times and countdowns right for clients.
        let aligned = Arc::new(clock::DatabaseAligned::new(options.clock.clone()));
        align_clock(&db, &aligned).await;
        background.push(tokio::spawn(keep_clock_aligned(
            db.clone(),
            aligned.clone(),
            stop_rx.clone(),
        )));
        options.clock = aligned;
    }
    let runner = RoundRunner::new(db.clone(), options.clock.clone()).with_cores(cores);
    tracing::info!(holder = %options.holder, queues = ?config_rx.borrow().queues.keys().collect::<Vec<_>>(), "daemon started");

    if let Some(path) = options.config_path.clone() {
        background.push(tokio::spawn(reload::watch_config(
            path,
            config_tx.clone(),
            stop_rx.clone(),
            options.health.clone(),
        )));
    }
    let roster = Arc::new(Roster::default());
    let (ttl, renew) = {
        let c = config_rx.borrow();
        (c.daemon.lease_ttl, c.daemon.lease_renew)
    };
    background.push(tokio::spawn(listen_enqueues(
        db.clone(),
        wake_tx.clone(),
        roster.clone(),
        options.holder.clone(),
        (renew, ttl),
        stop_rx.clone(),
    )));
    let leadership = tokio::spawn(leadership::lead_fair_share(
        db.clone(),
        options.holder.clone(),
        roster.clone(),
        options.clock.clone(),
        config_rx.clone(),
        stop_rx.clone(),
    ));

    // The supervisor: a worker per configured queue; queues added by a reload get one,
    // removed queues' workers stop by themselves.
    let mut workers: HashMap<String, JoinHandle<()>> = HashMap::new();
    let mut config_changes = config_rx.clone();
    tokio::pin!(shutdown);
    loop {
        workers.retain(|_, handle| !handle.is_finished());
        let names: Vec<String> = config_changes
            .borrow_and_update()
            .queues
            .keys()
            .cloned()
            .collect();
        let (ttl, poll) = {
            let c = config_changes.borrow();
            (c.daemon.lease_ttl, c.daemon.poll_interval)
        };
        // Also every poll interval: a retire that failed (a worker's, or this one: an
        // enqueue held open past the lock timeout) is tried again until it succeeds.
        options.health.supervisor_pass(&names, poll);
        let retire = db::queues::retire_unlisted(&db, &options.holder, &names, ttl);
        if let Err(e) = db::answered_within(ttl, retire).await {
            metrics::record_error(ErrorKind::Retire);
            tracing::warn!(error = %e, "could not retire queues removed from the config; retrying in {poll:?}");
        }

        for name in names {
            if let std::collections::hash_map::Entry::Vacant(slot) = workers.entry(name.clone()) {
                slot.insert(tokio::spawn(queue_task(
                    name,
                    options.holder.clone(),
                    runner.clone(),
                    roster.clone(),
                    config_rx.clone(),
                    wake_tx.subscribe(),
                    stop_rx.clone(),
                    options.health.clone(),
                )));
            }
        }
        tokio::select! {
            _ = &mut shutdown => break,
            _ = config_changes.changed() => {}
            _ = tokio::time::sleep(poll) => {}
        }
    }

    tracing::info!("shutting down: no new rounds; finishing rounds in flight");
    options.health.stopping();
    let _ = stop_tx.send(true);
    // Take nothing more, and leave: the others count one replica fewer from now on.
    // Each write bounded: cut off from the database, the replica still stops (the rows
    // it would delete expire by themselves).
    let ttl = config_rx.borrow().daemon.lease_ttl;
    let _ = leadership.await;
    let _ = tokio::time::timeout(ttl, leadership::leave(&db, &options.holder)).await;
    for (_, handle) in workers {
        let _ = handle.await;
    }
    // Our leases are released: the others take them now rather than at their next look.
    let _ = tokio::time::timeout(ttl, leadership::notify(&db, &options.holder)).await;
    for handle in background {
        handle.abort();
    }
    tracing::info!("daemon stopped");
    Ok(())
}

/// One queue: the worker loop (its lease is the leadership loop's to take and renew) and
/// the retention pruner.
#[allow(clippy::too_many_arguments)]
async fn queue_task(
    queue: String,
    holder: String,
    runner: RoundRunner,
    roster: Arc<Roster>,
    config: watch::Receiver<Arc<Config>>,
    mut wake: broadcast::Receiver<String>,
    mut stop: watch::Receiver<bool>,
    health: Arc<Health>,
) {
    let (queue_config, daemon) = {
        let c = config.borrow();
        match c.queues.get(&queue) {
            Some(q) => (Arc::new(q.clone()), c.daemon.clone()),
            None => return,
        }
    };
    let mut worker = QueueWorker::new(
        &queue,
        &holder,
        runner.clone(),
        queue_config,
        daemon.lease_ttl,
    )
    .with_lease_handle(LeaseHandle::balanced());

    // The leadership loop takes and renews the lease (a balanced handle: the worker only
    // renews it before each look, and hands it over when asked to).
    roster.register(&queue, worker.lease_handle());
    let lease = worker.lease_handle();
    // The first look waits for the loop's first plan for this queue, so that it already
    // leads if it is to (readiness then reports the role it keeps).
    tokio::select! {
        _ = stop.changed() => {}
        _ = lease.wait_decided(daemon.lease_ttl) => {}
    }

    let pruner = tokio::spawn(retention::prune_while_leading(
        runner.db.clone(),
        queue.clone(),
        worker.lease_handle(),
        config.clone(),
        stop.clone(),
    ));

    let mut config_rx = config.clone();
    let mut removed = false;
    loop {
        if *stop.borrow() {
            break;
        }
        let (poll, queue_config, step_limit) = {
            let c = config_rx.borrow_and_update();
            match c.queues.get(&queue) {
                // A step past `step_timeout` (a lease TTL) beyond its solve is waiting on a
                // connection that answers no more (a cut route); the next step starts on
                // a new one.
                Some(q) => (
                    c.daemon.poll_interval,
                    Arc::new(q.clone()),
                    c.daemon.step_limit(q.round.budget),
                ),
                None => {
                    tracing::info!(queue, "queue removed from the config; stopping its worker");
                    removed = true;
                    break;
                }
            }
        };
        worker.set_config(queue_config);
        let step = db::answered_within(step_limit, worker.step()).await;
        let role = match (&step, worker.lease_handle().current().await) {
            (Err(e), _) => QueueRole::Failing(e.to_string()),
            (Ok(StepOutcome::Standby), _) | (Ok(_), None) => QueueRole::Standby,
            (Ok(_), Some(lease)) => QueueRole::Leading { term: lease.term },
        };
        if role == QueueRole::Standby {
            metrics::record_pool_size(&queue, None);
        }
        health.queue_role(&queue, role);
        let now = runner.clock.now();
        // Right after a round, look again soon (the next trigger may already hold, and
        // the countdown of the pool it left is written then).
        let wake_at = match step {
            Ok(ref outcome @ StepOutcome::Waiting { next_round_at, .. }) => {
                health.next_round(&queue, next_round_at, now);
                outcome.wake_at(now)
            }
            Ok(ref outcome @ StepOutcome::Ran(ref report)) => {
                health.next_round(&queue, report.next_round_at, now);
                outcome.wake_at(now)
            }
            Ok(StepOutcome::Standby) => None,
            Err(e) => {
                metrics::record_error(ErrorKind::of_round(&e));
                tracing::error!(queue, error = %format!("{e:#}"), "round failed");
                if matches!(e, outcome::RoundError::Db(db::DbError::Unanswered { .. })) {
                    name_a_held_commit(&runner.db, &queue).await;
                }
                None
            }
        };
        let mut sleep = poll;
        if let Some(at) = wake_at {
            let until = (at - runner.clock.now()).to_std().unwrap_or(Duration::ZERO);
            sleep = sleep.min(until.max(Duration::from_millis(10)));
        }
        tokio::select! {
            _ = stop.changed() => break,
            _ = config_rx.changed() => {}
            _ = lease.changed() => {}
            _ = tokio::time::sleep(sleep) => {}
            _ = wait_for_wake(&mut wake, &queue) => {
                tokio::time::sleep(NOTIFY_DEBOUNCE).await;
                // Coalesced: the wake-ups that came meanwhile are served by this one look
                // (a client flooding the channel costs one look per debounce, no more).
                while !matches!(
                    wake.try_recv(),
                    Err(broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Closed)
                ) {}
            }
        }
    }
    roster.unregister(&queue);
    pruner.abort();
    let ttl = config.borrow().daemon.lease_ttl;
    if removed && let Err(e) = db::answered_within(ttl, worker.retire()).await {
        metrics::record_error(ErrorKind::Retire);
        tracing::warn!(queue, error = %e, "could not retire the removed queue; retried at the next reload or start");
    }
    if let Err(e) = db::answered_within(ttl, worker.release()).await {
        tracing::warn!(queue, error = %e, "could not release the lease; it expires by itself");
    }
    // No longer this replica's figures.
    metrics::record_lease(&queue, false);
    metrics::record_pool_size(&queue, None);
}

async fn wait_for_wake(wake: &mut broadcast::Receiver<String>, queue: &str) {
    loop {
        match wake.recv().await {
            Ok(q) if q == queue => return,
            Ok(_) => {}
            // Missed some: one of them may have been ours.
            Err(broadcast::error::RecvError::Lagged(_)) => return,
            Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

/// The sessions [`run`] opens beside its pool: the LISTEN session of
/// [`listen_enqueues`].
pub const LISTEN_CONNECTIONS: u32 = 1;

/// LISTEN for enqueues and wake the queue's worker, and for other replicas' leadership
/// changes and wake the leadership loop. On connection loss it reconnects; meanwhile the
/// workers and the leadership loop poll. `probe`: after this long without a notification
/// the session must answer a no-op LISTEN within the second duration, or it is taken for
/// lost: a session whose route was cut waits for notifications forever otherwise (the
/// server drops its end, [`db::DEAD_PEER_TIMEOUT`], and nothing tells this end).
async fn listen_enqueues(
    db: PgPool,
    wake: broadcast::Sender<String>,
    roster: Arc<Roster>,
    holder: String,
    probe: (Duration, Duration),
    mut stop: watch::Receiver<bool>,
) {
    let (probe_every, probe_limit) = probe;
    loop {
        let mut listener = match PgListener::connect_with(&db).await {
            Ok(l) => l,
            Err(e) => {
                metrics::record_error(ErrorKind::Listen);
                tracing::warn!(error = %e, "LISTEN connection failed; polling until it is back");
                tokio::select! {
                    _ = stop.changed() => return,
                    _ = tokio::time::sleep(Duration::from_secs(5)) => continue,
                }
            }
        };
        // One channel at a time, the enqueues last: tests (and operators) see the
        // listener's session idle in `LISTEN "matchmaker_enqueue"` once both are set up.
        let listened = db::answered_within(probe_limit, async {
            listener.listen(LEADERSHIP_CHANNEL).await?;
            Ok::<_, db::DbError>(listener.listen(ENQUEUE_CHANNEL).await?)
        });
        if let Err(e) = listened.await {
            metrics::record_error(ErrorKind::Listen);
            tracing::warn!(error = %e, "LISTEN failed; polling");
            tokio::select! {
                _ = stop.changed() => return,
                _ = tokio::time::sleep(Duration::from_secs(5)) => continue,
            }
        }
        loop {
            tokio::select! {
                _ = stop.changed() => return,
                n = listener.recv() => match n {
                    Ok(n) if n.channel() == LEADERSHIP_CHANNEL => {
                        if n.payload() != holder {
                            roster.wake();
                        }
                    }
                    Ok(n) => { let _ = wake.send(n.payload().to_string()); }
                    Err(e) => {
                        metrics::record_error(ErrorKind::Listen);
                        tracing::warn!(error = %e, "LISTEN connection lost; reconnecting");
                        break;
                    }
                },
                _ = tokio::time::sleep(probe_every) => {
                    // The same statement the session last ran: it stays idle in it.
                    let again = format!(r#"LISTEN "{ENQUEUE_CHANNEL}""#);
                    let probe = async {
                        sqlx::raw_sql(sqlx::AssertSqlSafe(again))
                            .execute(&mut listener)
                            .await
                            .map_err(db::DbError::from)
                    };
                    if let Err(e) = db::answered_within(probe_limit, probe).await {
                        metrics::record_error(ErrorKind::Listen);
                        tracing::warn!(error = %e, "LISTEN connection lost; reconnecting");
                        break;
                    }
                }
            }
        }
    }
}

/// After a step the database did not answer: if this login's commits wait for a
/// synchronous standby, say so, so that the log names the standby rather than the route.
async fn name_a_held_commit(db: &PgPool, queue: &str) {
    if let Ok(held @ 1..) = db::sync_standby::commits_waiting_for_standby(db).await {
        metrics::record_error(ErrorKind::StandbyWait);
        tracing::warn!(
            queue,
            sessions = held,
            "commits are waiting for the synchronous standby to flush them: the primary \
             holds them until the standby streams again or leaves the synchronous quorum \
             (pg_autoctl set node replication-quorum false; see docs/operations.md, \
             \"The standby stops flushing\")"
        );
    }
}
