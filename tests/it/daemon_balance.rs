//! Balanced leadership: replicas of `daemon::run` on one database share the
//! queues. 3 replicas x 9 queues settle at 3 each within two lease TTLs and stay there;
//! killing one (no graceful release) leaves 4-5 each within one TTL plus one renew
//! interval, without moving the survivors' own queues; a joiner gets its share; a replica
//! that stops hands its queues over at once. Throughout, players enqueue and rounds run,
//! and afterwards: no lease was ever taken while live, every queue's committed rounds have
//! non-decreasing terms, one leader per term, and no two rounds of a queue by different
//! leaders overlap in time.
//!
//! Each replica runs on a runtime of its own, so that killing it (dropping the runtime)
//! stops all of its tasks at once, mid-whatever, as a crash would.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use matchmaker::config::Config;
use matchmaker::daemon::{self, DaemonOptions};
use matchmaker::ops::status::read_status;
use matchmaker_testkit::audit;
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use tokio::sync::{oneshot, watch};

use crate::support::*;

const TTL: Duration = Duration::from_secs(3);
const RENEW: Duration = Duration::from_secs(1);
/// What a look's own statements (heartbeat, renewals, plan, takes) add to a takeover's
/// time, on the database's clock.
const LOOK: Duration = Duration::from_millis(100);
const QUEUES: usize = 9;

fn config() -> Config {
    let mut toml = format!(
        "default_queue = \"q0\"\n[daemon]\npoll_interval = \"1s\"\nlease_ttl = \"{}s\"\nlease_renew = \"{}s\"\n",
        TTL.as_secs(),
        RENEW.as_secs()
    );
    for q in 0..QUEUES {
        toml.push_str(&format!(
            "[queues.q{q}.round]\nevery = \"1s\"\nbudget = \"20ms\"\nthreads = 1\n"
        ));
    }
    Config::from_toml_str(&toml).expect("test config is valid")
}

/// A replica: `daemon::run` on a runtime of its own.
struct Replica {
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

impl Replica {
    fn start(tdb: &TestDb, name: &str) -> Replica {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the replica");
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let connect = tdb.options.clone();
        let holder = name.to_string();
        let done = runtime.spawn(async move {
            let pool = PgPoolOptions::new()
                .max_connections(4)
                .connect_with(connect)
                .await?;
            let options = DaemonOptions {
                holder,
                ..DaemonOptions::default()
            };
            daemon::run(pool, config(), options, async {
                let _ = stop_rx.await;
            })
            .await
        });
        Replica {
            runtime: Some(runtime),
            stop: Some(stop_tx),
            done: Some(done),
        }
    }

    /// Crash: every task of the replica stops where it is; nothing is released, its row
    /// and leases expire by themselves.
    fn kill(mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }

    /// SIGTERM: rounds in flight finish, the row is deleted, the leases released.
    async fn stop(mut self) {
        let _ = self.stop.take().expect("running").send(());
        self.done
            .take()
            .expect("running")
            .await
            .expect("the daemon task ends")
            .expect("the daemon stops cleanly");
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Live leases per holder: holder -> queues.
async fn leading(db: &PgPool) -> BTreeMap<String, BTreeSet<String>> {
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT holder, queue FROM leases WHERE expires_at > now()")
            .fetch_all(db)
            .await
            .unwrap();
    let mut by_holder: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (holder, queue) in rows {
        by_holder.entry(holder).or_default().insert(queue);
    }
    by_holder
}

fn counts(leading: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, usize> {
    leading.iter().map(|(h, q)| (h.clone(), q.len())).collect()
}

/// Poll until `done` holds for the live leases; returns the time it took and the leases.
/// Panics after `within`.
async fn wait_for(
    db: &PgPool,
    what: &str,
    within: Duration,
    done: impl Fn(&BTreeMap<String, BTreeSet<String>>) -> bool,
) -> (Duration, BTreeMap<String, BTreeSet<String>>) {
    let start = Instant::now();
    loop {
        let now = leading(db).await;
        if done(&now) {
            return (start.elapsed(), now);
        }
        assert!(
            start.elapsed() < within,
            "{what}: not within {within:?}; leading: {:?}",
            counts(&now)
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Every listed replica leads between `low` and `high` queues, all `QUEUES` are led, and
/// nobody else leads any.
fn shared(
    leading: &BTreeMap<String, BTreeSet<String>>,
    replicas: &[&str],
    low: usize,
    high: usize,
) -> bool {
    let total: usize = leading.values().map(BTreeSet::len).sum();
    total == QUEUES
        && leading.len() == replicas.len()
        && replicas.iter().all(|r| {
            leading
                .get(*r)
                .is_some_and(|q| (low..=high).contains(&q.len()))
        })
}

/// Players into random queues, a match's worth at a time, until stopped.
fn start_load(db: PgPool) -> (watch::Sender<bool>, tokio::task::JoinHandle<usize>) {
    let (stop_tx, mut stop_rx) = watch::channel(false);
    let task = tokio::spawn(async move {
        let mut batch = 0;
        loop {
            let queue = format!("q{}", batch % QUEUES);
            enqueue_n(&db, &queue, &format!("b{batch}-"), 6, chrono::Utc::now()).await;
            batch += 1;
            tokio::select! {
                _ = stop_rx.changed() => return batch,
                _ = tokio::time::sleep(Duration::from_millis(60)) => {}
            }
        }
    });
    (stop_tx, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_the_queues_and_hand_them_over_without_double_leadership() {
    let _timing = TIMING.write().await;
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    audit::install_lease_log(db).await.unwrap();
    let (stop_load, load) = start_load(tdb.new_pool(2).await);

    // 1. Three replicas start together: 3 queues each within two TTLs.
    let started = Instant::now();
    let mut a = Some(Replica::start(&tdb, "a"));
    let mut b = Some(Replica::start(&tdb, "b"));
    let c = Replica::start(&tdb, "c");
    let (_, settled) = wait_for(db, "3 x 3", 2 * TTL, |l| shared(l, &["a", "b", "c"], 3, 3)).await;
    eprintln!("settled 3/3/3 {:?} after the start", started.elapsed());

    // ... and stay there: no lease changes hands for a whole TTL.
    let terms = || async {
        sqlx::query_as::<_, (String, String, i64)>(
            "SELECT queue, holder, term FROM leases ORDER BY queue",
        )
        .fetch_all(db)
        .await
        .unwrap()
    };
    let before = terms().await;
    tokio::time::sleep(TTL).await;
    assert_eq!(terms().await, before, "a settled fleet hands nothing over");

    // `matchmaker status` shows who leads what.
    let view = read_status(db, None, 1).await.unwrap();
    let shown: BTreeMap<String, (bool, Vec<String>)> = view
        .replicas
        .iter()
        .map(|r| (r.replica.clone(), (r.live, r.leads.clone())))
        .collect();
    for (name, queues) in &settled {
        assert_eq!(
            shown[name],
            (true, queues.iter().cloned().collect::<Vec<_>>()),
            "{:?}",
            view.replicas
        );
    }

    // 2. `c` crashes: a and b take its queues within one TTL plus one renew interval,
    // 4 or 5 each, keeping their own. Timed on the database's clock, from the lease log:
    // the kill is read right after it (no statement of c starts later), each takeover is
    // the new lease's `acquired_at`.
    c.kill();
    let killed_at: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT clock_timestamp()")
        .fetch_one(db)
        .await
        .unwrap();
    let (took, after) = wait_for(db, "4-5 each", 2 * (TTL + RENEW), |l| {
        shared(l, &["a", "b"], 4, 5)
    })
    .await;
    eprintln!("a and b led c's queues {took:?} (as polled) after the kill");
    let takeovers: Vec<(String, String, f64, f64)> = sqlx::query_as(
        "SELECT queue, new_holder,
                extract(epoch FROM old_expires_at - $1)::float8,
                extract(epoch FROM new_acquired_at - $1)::float8
           FROM audit_lease_log
          WHERE old_holder = 'c' AND logged_at > $1
          ORDER BY queue",
    )
    .bind(killed_at)
    .fetch_all(db)
    .await
    .unwrap();
    let taken: BTreeSet<String> = takeovers.iter().map(|t| t.0.clone()).collect();
    assert_eq!(
        taken, settled["c"],
        "each of c's queues changed hands once: {takeovers:?}"
    );
    for (queue, holder, expired, acquired) in &takeovers {
        // c renewed at most TTL before its leases expire; a survivor takes an expired
        // lease at its next look, at most one renew interval (plus the look's own
        // statements, `LOOK`) after the expiry.
        assert!(
            *expired <= TTL.as_secs_f64(),
            "{queue}: c's lease expired {expired:.3}s after the kill (TTL {TTL:?})"
        );
        assert!(
            *acquired >= *expired,
            "{queue}: {holder} took it {acquired:.3}s after the kill, before its expiry at {expired:.3}s"
        );
        assert!(
            *acquired <= (TTL + RENEW + LOOK).as_secs_f64(),
            "{queue}: {holder} took it {acquired:.3}s after the kill > TTL {TTL:?} + renew \
             {RENEW:?} (+ {LOOK:?} for the look)"
        );
        assert!(
            acquired - expired <= (RENEW + LOOK).as_secs_f64(),
            "{queue}: {holder} took it {:.3}s after it expired > renew {RENEW:?} (+ {LOOK:?})",
            acquired - expired
        );
    }
    for survivor in ["a", "b"] {
        assert!(
            settled[survivor].is_subset(&after[survivor]),
            "{survivor} kept its queues: {:?} -> {:?}",
            settled[survivor],
            after[survivor]
        );
    }
    let view = read_status(db, None, 1).await.unwrap();
    let c_row = view.replicas.iter().find(|r| r.replica == "c").unwrap();
    assert!(!c_row.live && c_row.leads.is_empty(), "{c_row:?}");

    // 3. A new replica joins: its share comes to it within two TTLs.
    let d = Replica::start(&tdb, "d");
    let (joined, _) = wait_for(db, "3 x 3 with d", 2 * TTL, |l| {
        shared(l, &["a", "b", "d"], 3, 3)
    })
    .await;
    eprintln!("d led its share {joined:?} after joining");

    // 4. `b` stops (SIGTERM): it leaves and releases; a and d take its queues at once
    // (its NOTIFY wakes them), long before any TTL.
    let stopping = Instant::now();
    b.take().unwrap().stop().await;
    let (took, _) = wait_for(db, "4-5 each after b left", TTL, |l| {
        shared(l, &["a", "d"], 4, 5)
    })
    .await;
    eprintln!(
        "a and d led b's queues {took:?} after b stopped ({:?} after the stop began)",
        stopping.elapsed()
    );
    // Under TTL: nobody waited for b's leases to expire (a crash takes TTL + renew).
    // Usually about 100 ms; up to one renew interval more when one replica woke first
    // and took all of b's queues as orphans, handing the surplus over at its next look.
    assert!(took < TTL, "took {took:?}: a graceful leave is not a crash");

    let _ = stop_load.send(true);
    let batches = time_limit::within("the load to stop", load).await.unwrap();
    d.stop().await;
    a.take().unwrap().stop().await;
    eprintln!("{batches} batches of 6 players enqueued");

    // Never two leaders.
    let changes = audit::lease_changes(db).await.unwrap();
    let live: Vec<_> = changes.iter().filter(|c| c.took_live_lease()).collect();
    assert!(live.is_empty(), "leases taken while live: {live:?}");
    assert!(
        changes.len() > QUEUES,
        "leases changed hands during the test: {}",
        changes.len()
    );
    let rounds: Vec<(String, i64, String, i64)> =
        sqlx::query_as("SELECT queue, round_id, leader, term FROM rounds ORDER BY queue, round_id")
            .fetch_all(db)
            .await
            .unwrap();
    let mut last: BTreeMap<&str, (i64, &str)> = BTreeMap::new();
    let mut leaders: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (queue, round_id, leader, term) in &rounds {
        if let Some((last_term, last_leader)) = last.get(queue.as_str()) {
            assert!(
                term >= last_term,
                "queue {queue}: round {round_id} of term {term} after term {last_term}"
            );
            assert!(
                term > last_term || leader == last_leader,
                "queue {queue}: term {term} under two leaders ({last_leader}, {leader})"
            );
        }
        last.insert(queue, (*term, leader));
        leaders.entry(queue).or_default().insert(leader);
    }
    let overlapping = count(
        db,
        "SELECT count(*) FROM rounds r1 JOIN rounds r2
              ON r1.queue = r2.queue AND r1.round_id < r2.round_id
             AND r1.leader <> r2.leader
             AND tstzrange(r1.started_at, r1.committed_at, '[]')
                 && tstzrange(r2.started_at, r2.committed_at, '[]')",
    )
    .await;
    assert_eq!(overlapping, 0, "rounds of one queue by two leaders overlap");
    let handed: usize = leaders.values().filter(|l| l.len() > 1).count();
    assert!(
        rounds.len() > QUEUES && handed > 0,
        "rounds ran across hand-overs: {} rounds, {handed} queues under several leaders",
        rounds.len()
    );
    assert_nobody_matched_twice(db).await;
    let live_rows = count(db, "SELECT count(*) FROM replicas WHERE expires_at > now()").await;
    assert_eq!(live_rows, 0, "stopped replicas left; c's row expired");
}
