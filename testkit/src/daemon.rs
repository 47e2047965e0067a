//! The daemon's side in tests: queues published from a config, workers on a manual clock,
//! leases and single rounds.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, SubsecRound, TimeZone, Utc};
use matchmaker::config::{Config, QueueConfig};
use matchmaker::daemon::DaemonOptions;
use matchmaker::daemon::clock::{Clock, ManualClock};
use matchmaker::daemon::round::{RoundReport, RoundRunner};
use matchmaker::daemon::worker::{QueueWorker, StepOutcome};
use matchmaker::db::{self, Lease, RoundTrigger};
use matchmaker_optimizer::{Player, RoundOutcome, SolveStats, StopReason};
use sqlx::PgPool;

use crate::postgres::TestDb;

/// A fixed start time for manual clocks.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap()
}

/// A manual clock at the wall-clock time, so the database's `now()` and the clock agree
/// roughly.
pub fn clock_now() -> ManualClock {
    ManualClock::new(Utc::now().trunc_subsecs(6))
}

pub fn secs(s: u64) -> std::time::Duration {
    std::time::Duration::from_secs(s)
}

/// A solo player with a skill and a latency to one region.
pub fn player(id: &str, skill: f64, enqueued_at: DateTime<Utc>) -> Player {
    Player {
        id: id.to_string(),
        party: None,
        skill,
        skill_sigma: None,
        enqueued_at: Some(enqueued_at),
        latencies: [("eu".to_string(), 30.0)].into_iter().collect(),
        peer_pings: Default::default(),
        roles: Vec::new(),
        side: None,
        ..Default::default()
    }
}

/// A solo player enqueued now, 30 ms from `eu` (for the front door's Rust wrappers,
/// `matchmaker::db::enqueue`).
pub fn solo_player(id: &str, skill: f64) -> Player {
    player(id, skill, Utc::now())
}

/// `n` players named `{prefix}{i}`, enqueued at `at`.
pub async fn enqueue_n(db: &PgPool, queue: &str, prefix: &str, n: usize, at: DateTime<Utc>) {
    let players: Vec<Player> = (0..n)
        .map(|i| player(&format!("{prefix}{i}"), 1000.0 + 37.0 * i as f64, at))
        .collect();
    db::enqueue::enqueue_many(db, queue, &players, at)
        .await
        .expect("enqueue");
}

/// A config with one queue `q` whose round table is `round` (TOML lines). The solver
/// budget is short unless `round` sets one (the core uses all of its budget).
pub fn queue_config(round: &str) -> Arc<QueueConfig> {
    let budget = if round.contains("budget") {
        ""
    } else {
        "budget = \"50ms\"\n"
    };
    let config = Config::from_toml_str(&format!("[queues.q]\n[queues.q.round]\n{budget}{round}\n"))
        .expect("test config is valid");
    Arc::new(config.queues["q"].clone())
}

/// A worker for queue `q` on the manual clock (lease TTL 15 s).
pub fn worker(
    db: &PgPool,
    clock: &ManualClock,
    holder: &str,
    config: Arc<QueueConfig>,
) -> QueueWorker {
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    QueueWorker::new("q", holder, runner, config, secs(15))
}

/// Publishes every queue of `config` as the daemon does, as `holder`.
pub async fn publish(db: &PgPool, config: &Config, holder: &str) {
    for (name, queue) in &config.queues {
        db::queues::publish_queue(db, name, queue, holder)
            .await
            .unwrap_or_else(|e| panic!("publish {name}: {e}"));
    }
}

/// The lease of queue `q` as holder `test` (TTL 15 s); it must be free.
pub async fn lead(db: &PgPool, clock: &ManualClock) -> Lease {
    db::acquire_lease(db, "q", "test", secs(15), clock.lease_now())
        .await
        .unwrap()
        .expect("free lease")
}

/// One manual round of queue `q` now, on the manual clock: lead, run, release.
pub async fn run_round(db: &PgPool, clock: &ManualClock, config: &Arc<QueueConfig>) -> RoundReport {
    let lease = lead(db, clock).await;
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let report = runner
        .run("q", config.clone(), RoundTrigger::Manual, &lease)
        .await
        .unwrap();
    db::release_lease(db, &lease, clock.lease_now())
        .await
        .unwrap();
    report
}

/// A committed round for commands to read: 13 players `p0..p12` enqueued at [`t0`] into
/// queue `q`, its round a second later (12 matched, 1 left over).
pub async fn round_of_thirteen(db: &PgPool) -> RoundReport {
    let clock = ManualClock::new(t0());
    enqueue_n(db, "q", "p", 13, t0()).await;
    clock.advance(secs(1));
    run_round(db, &clock, &queue_config("restarts = 3")).await
}

/// The report of a step that must have run a round.
pub fn expect_round(outcome: StepOutcome, queue: &str) -> RoundReport {
    match outcome {
        StepOutcome::Ran(report) => report,
        other => panic!("{queue}: expected a round, got {other:?}"),
    }
}

/// A worker of `queue` after its first look at it (which publishes the queue): the
/// queue waits for its first tick.
pub async fn first_look(
    runner: &RoundRunner,
    queue: &str,
    config: Arc<QueueConfig>,
    holder: &str,
) -> QueueWorker {
    let mut worker = QueueWorker::new(queue, holder, runner.clone(), config, secs(15));
    let first = worker.step().await.unwrap();
    assert!(
        matches!(first, StepOutcome::Waiting { .. }),
        "{queue}: {first:?}"
    );
    worker
}

/// The leader of one queue of a config: its worker past its first look, on a manual
/// clock at the wall-clock time.
pub struct Leader {
    pub clock: ManualClock,
    pub runner: RoundRunner,
    pub worker: QueueWorker,
    pub config: Arc<QueueConfig>,
}

/// The leader of `queue` of the config `toml`, as `holder`, on `pool`.
pub async fn leader(pool: &PgPool, toml: &str, queue: &str, holder: &str) -> Leader {
    let config = Config::from_toml_str(toml).expect("valid config");
    let config = Arc::new(config.queues[queue].clone());
    let clock = clock_now();
    let runner = RoundRunner::new(pool.clone(), Arc::new(clock.clone()));
    let worker = first_look(&runner, queue, config.clone(), holder).await;
    Leader {
        clock,
        runner,
        worker,
        config,
    }
}

/// A fresh database and the workers of every queue of a config on one manual clock
/// (wall-clock time at the start), each past its first look.
pub struct Daemon {
    pub tdb: TestDb,
    pub clock: ManualClock,
    pub runner: RoundRunner,
    pub config: Config,
    pub workers: BTreeMap<String, QueueWorker>,
}

impl Daemon {
    /// The workers of every queue in `toml`, as `holder`, on a fresh database.
    pub async fn start(toml: &str, holder: &str) -> Daemon {
        let tdb = crate::postgres::fresh_db().await;
        let config = Config::from_toml_str(toml).expect("valid config");
        let clock = clock_now();
        let runner = RoundRunner::new(tdb.pool.clone(), Arc::new(clock.clone()));
        let mut workers = BTreeMap::new();
        for (name, q) in &config.queues {
            let w = first_look(&runner, name, Arc::new(q.clone()), holder).await;
            workers.insert(name.clone(), w);
        }
        Daemon {
            tdb,
            clock,
            runner,
            config,
            workers,
        }
    }

    /// The test's superuser pool.
    pub fn db(&self) -> &PgPool {
        &self.tdb.pool
    }

    /// The config of one queue.
    pub fn queue(&self, name: &str) -> Arc<QueueConfig> {
        Arc::new(self.config.queues[name].clone())
    }

    /// One look at `queue` (after the clock moved, if it did).
    pub async fn step(&mut self, queue: &str) -> StepOutcome {
        self.workers
            .get_mut(queue)
            .expect("a worker of that queue")
            .step()
            .await
            .unwrap()
    }

    /// The clock moved by `by`, and a round of `queue` that must run.
    pub async fn round_after(&mut self, queue: &str, by: std::time::Duration) -> RoundReport {
        self.clock.advance(by);
        let outcome = self.step(queue).await;
        expect_round(outcome, queue)
    }

    /// The next tick (one second), and a round of `queue` that must run.
    pub async fn round(&mut self, queue: &str) -> RoundReport {
        self.round_after(queue, secs(1)).await
    }
}

/// player_id -> status of the latest entry.
pub async fn statuses(db: &PgPool, queue: &str) -> HashMap<String, String> {
    sqlx::query_as::<_, (String, String)>(
        "SELECT player_id, status FROM player_status WHERE queue = $1",
    )
    .bind(queue)
    .fetch_all(db)
    .await
    .unwrap()
    .into_iter()
    .collect()
}

/// A daemon running inside the test (`matchmaker::daemon::run`) until [`Spawned::stop`].
pub struct Spawned {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), String>>,
}

/// Runs the daemon on `pool` with `config`, as `holder`, until stopped.
pub fn spawn_daemon(pool: PgPool, config: Config, holder: &str) -> Spawned {
    let options = DaemonOptions {
        holder: holder.into(),
        ..DaemonOptions::default()
    };
    spawn_daemon_with(pool, config, options)
}

/// As [`spawn_daemon`], with options of the test's (a config path to reload, ...).
pub fn spawn_daemon_with(pool: PgPool, config: Config, options: DaemonOptions) -> Spawned {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async {
        let _ = stopped.await;
    };
    let task = tokio::spawn(async move {
        matchmaker::daemon::run(pool, config, options, shutdown)
            .await
            .map_err(|e| format!("{e:#}"))
    });
    Spawned { stop, task }
}

impl Spawned {
    /// Shuts the daemon down and waits for it; panics if it failed.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task
            .await
            .expect("the daemon's task")
            .unwrap_or_else(|e| panic!("the daemon failed: {e}"));
    }
}

/// Polls until `sql` (a count) is `want`, for at most `within` (the daemon works on its
/// own time).
pub async fn wait_for_count(db: &PgPool, sql: &str, want: i64, within: Duration) {
    let start = Instant::now();
    while start.elapsed() < within {
        if crate::invariants::count(db, sql).await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "waited {within:?} for `{sql}` to be {want} (is {})",
        crate::invariants::count(db, sql).await
    );
}

/// Waits (30 s at most) until a daemon on `db` serves: `active` queues published, and a
/// session LISTENing for enqueues (a NOTIFY sent before the LISTEN is lost).
pub async fn wait_until_serving(db: &PgPool, active: i64) {
    let within = Duration::from_secs(30);
    wait_for_count(
        db,
        "SELECT count(*) FROM queues WHERE active",
        active,
        within,
    )
    .await;
    wait_for_count(
        db,
        "SELECT least(count(*), 1) FROM pg_stat_activity
          WHERE datname = current_database() AND state = 'idle'
            AND query = 'LISTEN \"matchmaker_enqueue\"'",
        1,
        within,
    )
    .await;
}

/// Commits a round written by hand (the test's outcome, not the solver's): a manual round
/// of `snapshot`'s queue at `now` under `lease`, with `config`'s countdown after it.
pub async fn commit_hand_written(
    db: &PgPool,
    snapshot: &db::Snapshot,
    lease: &Lease,
    now: DateTime<Utc>,
    config: &QueueConfig,
    outcome: &RoundOutcome,
    replay: Option<&db::ReplayRecord>,
) -> db::CommitReport {
    let state = matchmaker::daemon::countdown::after_round(&snapshot.queue, config, now);
    let recorded = matchmaker::daemon::round::round_config(config);
    db::commit_round(
        db,
        &db::RoundRecord::new(
            snapshot,
            RoundTrigger::Manual,
            lease,
            &recorded,
            outcome,
            &state,
            now,
        )
        .with_lease_now(Some(now))
        .with_seed(7)
        .with_replay(replay),
    )
    .await
    .unwrap()
}

/// The solve statistics of an outcome written by hand: no search ran.
pub fn hand_written_stats() -> SolveStats {
    SolveStats {
        strategy: "test".into(),
        elapsed: Duration::ZERO,
        elapsed_ms: 0.0,
        restarts: 0,
        moves_evaluated: 0,
        moves_per_second: 0.0,
        moves_rejected_by_bound: 0,
        time_to_best: Duration::ZERO,
        time_to_best_ms: 0.0,
        stop_reason: StopReason::Exhausted,
        threads: 1,
        seed: 0,
        delta_checks: 0,
    }
}
