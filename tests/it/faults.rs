//! Faults against the daemon as deployed: `matchmaker run` processes (this crate's binary)
//! killed with SIGKILL at random points of their rounds, PostgreSQL restarted mid-round,
//! three replicas whose leaders are killed while one runs its clock 20 s ahead, a storm of
//! cancels racing a solve, and a leader frozen (SIGSTOP) inside a commit. After each, the database is audited
//! (the test kit's audit, the same counts `matchmaker-lab soak` prints): nothing lost,
//! nobody in two matches, no match holding a cancelled/expired/withdrawn entry, no split
//! party, every closed row with a reason, no lease taken while live.
//!
//! The replicas are child processes held by [`Replica`] guards, killed when a test fails.
//! Random delays come from fixed seeds; the fault points still vary with the machine's
//! timing, which is the point.

use std::path::{Path, PathBuf};
use std::time::Duration;

use matchmaker::db::local_pg::StopMode;
use matchmaker_testkit::audit::{self, Audit};
use matchmaker_testkit::fleet::{
    Replica, ReplicaSpec, lease_of, round_count, takeover_bound, wait_for_leaders,
    wait_for_new_term, wait_for_quiet, wait_for_rounds, write_config,
};
use matchmaker_testkit::load::{ClientLog, LoadSpec, StormSpec, cancel_storm, run_load};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sqlx::PgPool;
use tokio::sync::watch;

use crate::support::*;

const LEASE_TTL: Duration = Duration::from_secs(3);
const LEASE_RENEW: Duration = Duration::from_secs(1);

/// Daemon settings of every fault test: a 3 s lease renewed every second.
fn config_toml(queues: &str) -> String {
    format!(
        "default_queue = \"q\"\n[daemon]\npoll_interval = \"1s\"\nlease_ttl = \"3s\"\n\
         lease_renew = \"1s\"\n{queues}"
    )
}

/// The 3v3 queue `q`: a round every second or at `target` players, solver budget `budget`.
fn queue_q(budget: &str, target: usize) -> String {
    format!(
        "[queues.q.round]\nevery = \"1s\"\nbudget = \"{budget}\"\ntarget_pool = {target}\n\
         threads = 1\n"
    )
}

fn replica_spec(url: &str, config: &Path, dir: &Path, name: &str) -> ReplicaSpec {
    ReplicaSpec {
        exe: env!("CARGO_BIN_EXE_matchmaker").into(),
        database_url: url.to_string(),
        config: config.to_path_buf(),
        name: name.to_string(),
        clock_skew: None,
        log_dir: dir.to_path_buf(),
    }
}

/// Where a test's replicas run: its directory (their logs too), the config of queue `q`
/// (a 100 ms budget, a round at 12 players) and the database's URL.
struct Stage {
    dir: tempfile::TempDir,
    config: PathBuf,
    url: String,
}

impl Stage {
    /// The lease log installed, the config written and replica `a` started on it.
    async fn with_a(tdb: &TestDb) -> (Stage, Fleet) {
        audit::install_lease_log(&tdb.pool).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let config = write_config(dir.path(), &config_toml(&queue_q("100ms", 12))).unwrap();
        let stage = Stage {
            dir,
            config,
            url: tdb.url(),
        };
        let fleet = Fleet(vec![stage.start("a")]);
        (stage, fleet)
    }

    fn spec(&self, name: &str) -> ReplicaSpec {
        replica_spec(&self.url, &self.config, self.dir.path(), name)
    }

    fn start(&self, name: &str) -> Replica {
        Replica::start(self.spec(name)).unwrap()
    }
}

/// The replicas of a test. Dropping it kills them (each [`Replica`] does); if the test is
/// failing, their log tails are printed first.
struct Fleet(Vec<Replica>);

impl Drop for Fleet {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os("FAULTS_SHOW_LOGS").is_some() {
            for r in &self.0 {
                eprintln!("---- log tail of {} ----\n{}", r.name(), r.log_tail(25));
            }
        }
    }
}

impl Fleet {
    fn by_holder(&mut self, holder: &str) -> Option<&mut Replica> {
        self.0.iter_mut().find(|r| r.holder() == holder)
    }

    fn assert_all_alive(&mut self) {
        for r in self.0.iter_mut() {
            assert!(r.check_alive(), "replica {} exited by itself", r.holder());
        }
    }
}

/// The contract's invariants after a fault run (the counts `matchmaker-lab soak` prints).
async fn fault_invariants(db: &PgPool, clients: &ClientLog) -> Audit {
    let audit = audit::audit(db, clients.expected())
        .await
        .expect("audit queries run");
    eprintln!("{audit}");
    audit
}

fn assert_clean(audit: &Audit) {
    let bad = audit.nonzero_violations();
    assert!(bad.is_empty(), "violations: {bad:?}\n{audit}");
    assert!(
        audit.checked > 0 && audit.checked <= audit.entries,
        "{audit}"
    );
}

/// The client load of a test: solos and parties into `q` (and `second` for some solos),
/// and cancels, one action every 10 ms.
fn start_load(
    db: PgPool,
    prefix: &str,
    second: Option<&str>,
    seed: u64,
) -> (watch::Sender<bool>, tokio::task::JoinHandle<ClientLog>) {
    let (stop_tx, stop_rx) = watch::channel(false);
    let spec = LoadSpec {
        queue: "q".into(),
        second_queue: second.map(|q| (q.to_string(), 0.5)),
        max_party: 3,
        pace: Duration::from_millis(10),
        prefix: prefix.into(),
        seed,
    };
    (stop_tx, tokio::spawn(run_load(db, spec, stop_rx)))
}

/// Stop the load of `start_load` and wait for it, then for the queues to go quiet: what
/// the clients did.
async fn stop_load(
    db: &PgPool,
    stop: watch::Sender<bool>,
    load: tokio::task::JoinHandle<ClientLog>,
) -> ClientLog {
    let _ = stop.send(true);
    let clients = time_limit::within("the load to stop", load).await.unwrap();
    wait_for_quiet(db, Duration::from_secs(3), Duration::from_secs(20)).await;
    clients
}

/// The queues are published (the leader's first step): clients may enqueue.
async fn wait_for_published(db: &PgPool, queues: i64) {
    for _ in 0..200 {
        let n: i64 = count(db, "SELECT count(*) FROM queues WHERE active").await;
        if n == queues {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the leader did not publish {queues} queue(s) within 10 s");
}

/// Distinct lease terms under which rounds were committed.
async fn terms_with_rounds(db: &PgPool) -> i64 {
    count(db, "SELECT count(DISTINCT term) FROM rounds").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_points_of_rounds_loses_nothing() {
    let _timing = TIMING.write().await;
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let (_stage, mut fleet) = Stage::with_a(&tdb).await;
    wait_for_published(db, 1).await;
    let (stop, load) = start_load(tdb.new_pool(4).await, "a", None, 11);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);

    // Rounds run back to back under this load (12 players arrive in ~100 ms, a round
    // takes the 250 ms notify debounce + 100 ms of solving), so a random moment of the
    // leader's life is most likely inside a round: snapshot, solve or commit.
    let kills = 10;
    let mut inside_commits = 0;
    for i in 0..kills {
        let holder = fleet.0[0].holder();
        let started = std::time::Instant::now();
        loop {
            if let Ok(Some((h, _, true))) = lease_of(db, "q").await
                && h == holder
            {
                break;
            }
            assert!(
                started.elapsed() < LEASE_TTL * 3,
                "kill {i}: {holder} did not take the lease back"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        // Even kills: inside a commit (the leader is frozen there first, so the kill is
        // known to land in it). Odd ones: anywhere.
        if i % 2 == 0 {
            if freeze_inside_commit(db, &mut fleet.0[0]).await {
                inside_commits += 1;
            }
        } else {
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..1500))).await;
        }
        fleet.0[0].kill();
        fleet.0[0].restart().unwrap();
    }

    // Run to completion: the last incarnation leads, the load stops, the queue drains.
    let rounds_before = round_count(db).await.unwrap();
    assert!(
        wait_for_rounds(db, rounds_before, Duration::from_secs(15)).await,
        "no round after the last restart"
    );
    let clients = stop_load(db, stop, load).await;
    fleet.assert_all_alive();

    let audit = fault_invariants(db, &clients).await;
    assert_clean(&audit);
    assert_eq!(audit.live_leases_taken, Some(0));
    assert_eq!(clients.errors, 0, "{:?}", clients.last_error);
    assert!(
        clients.cancels > 50,
        "the load cancels: {}",
        clients.cancels
    );
    assert!(
        audit.matched * 2 > audit.entries - audit.cancelled,
        "most players are matched despite the kills: {audit}"
    );
    assert_eq!(
        inside_commits,
        kills / 2,
        "the even kills landed inside a commit"
    );
    // The incarnations that lived long enough ran rounds (a kill may come before the
    // first one, and the even ones die inside a commit that never lands).
    let terms = terms_with_rounds(db).await;
    assert!(
        terms >= kills as i64 / 4,
        "rounds under only {terms} lease terms"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restarts_mid_round_and_the_daemon_recovers() {
    let _timing = TIMING.write().await;
    // A server of our own: it is restarted under the daemon.
    let (server, url, db) = own_server().await;
    let db = &db;
    audit::install_lease_log(db).await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    // Two queues, half the solo players in both: a commit cut off by the restart must
    // not leave a player matched in one queue and still queued (or matched) in the other.
    let queues = format!(
        "{}[queues.duel]\nteams = 2\nteam_size = 1\n[queues.duel.round]\nevery = \"1s\"\n\
         budget = \"100ms\"\ntarget_pool = 6\nthreads = 1\n",
        queue_q("300ms", 36)
    );
    let config = write_config(dir.path(), &config_toml(&queues)).unwrap();
    let mut fleet = Fleet(vec![
        Replica::start(replica_spec(&url, &config, dir.path(), "b")).unwrap(),
    ]);
    wait_for_published(db, 2).await;
    let (stop, load) = start_load(
        matchmaker::db::connect_with(&url, 4).await.unwrap(),
        "b",
        Some("duel"),
        12,
    );
    let modes = [
        StopMode::Fast,
        StopMode::Immediate,
        StopMode::Fast,
        StopMode::Immediate,
        StopMode::Immediate,
    ];
    let mut restarts = 0;
    for mode in modes {
        assert!(
            wait_for_rounds(
                db,
                round_count(db).await.unwrap_or(0),
                Duration::from_secs(15)
            )
            .await,
            "rounds before the {mode:?} restart"
        );
        let started_before = postmaster_start(db).await;
        // The restart lands inside a round: the leader is frozen in its commit across it.
        assert!(
            freeze_inside_commit(db, &mut fleet.0[0]).await,
            "the leader was not seen inside a commit before the {mode:?} restart"
        );
        let restarted = server.restart(mode).await;
        fleet.0[0].resume();
        restarted.expect("restart PostgreSQL");
        // Rounds resume: a round committed after the restart.
        let mut after = None;
        for _ in 0..100 {
            after = round_count(db).await;
            if after.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let after = after.expect("PostgreSQL is back");
        // The server really went down under the load (a pool that reconnects quietly
        // must not make a no-op restart look like a pass).
        let started_after = postmaster_start(db).await;
        assert!(
            started_after > started_before,
            "the {mode:?} restart restarted the server: {started_before} -> {started_after}"
        );
        restarts += 1;
        assert!(
            wait_for_rounds(db, after, Duration::from_secs(20)).await,
            "no round within 20 s of the {mode:?} restart"
        );
        fleet.assert_all_alive();
    }

    let clients = stop_load(db, stop, load).await;
    fleet.assert_all_alive();
    let audit = fault_invariants(db, &clients).await;
    assert_clean(&audit);
    assert_eq!(restarts, modes.len());
    // Each restart cut a commit: the thawed leader's round failed, and it was retried.
    let failed = fleet.0[0].log_lines_containing("round failed");
    assert!(
        failed >= modes.len(),
        "{failed} failed rounds for {} restarts inside a commit",
        modes.len()
    );
    // A client's pool tests a connection before lending it, so a client sees an error
    // only when a call was in flight at the stop: timing decides, reported only.
    eprintln!(
        "rounds failed: {failed}, rounds committed: {}, client calls cut: {}",
        fleet.0[0].log_lines_containing("round committed"),
        clients.errors
    );
    let withdrawn = count(
        db,
        "SELECT count(*) FROM queue_entries WHERE status = 'withdrawn'",
    )
    .await;
    assert!(withdrawn > 0, "players matched in one queue left the other");
    drop(fleet);
    db.close().await;
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_kills_among_three_replicas_one_skewed_never_taking_a_live_lease() {
    let _timing = TIMING.write().await;
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let (stage, mut fleet) = Stage::with_a(&tdb).await;
    assert!(wait_for_leaders(db, &["q"], Duration::from_secs(15)).await);
    // The skewed replica starts while `a` holds a live lease: with its clock 20 s ahead,
    // that lease looks long expired to it.
    let mut skewed = stage.spec("skewed");
    skewed.clock_skew = Some("20s".into());
    fleet.0.push(Replica::start(skewed).unwrap());
    fleet.0.push(stage.start("b"));
    wait_for_published(db, 1).await;
    let (stop, load) = start_load(tdb.new_pool(4).await, "c", None, 13);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        lease_of(db, "q")
            .await
            .unwrap()
            .map(|(h, _, live)| (h, live)),
        Some(("a.1".to_string(), true)),
        "the healthy leader keeps its lease while the skewed replica looks"
    );

    let bound = takeover_bound(LEASE_TTL, LEASE_RENEW);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
    let mut took = Vec::new();
    for i in 0..5 {
        let (holder, term, live) = lease_of(db, "q").await.unwrap().expect("a lease");
        assert!(live, "kill {i}: nobody leads");
        let victim = fleet.by_holder(&holder).expect("the leader is one of ours");
        let graceful = i % 3 == 2;
        let killed_at = std::time::Instant::now();
        if graceful {
            assert!(
                victim.terminate(Duration::from_secs(10)),
                "SIGTERM stops it"
            );
        } else {
            victim.kill();
        }
        victim.restart().unwrap();
        let (_, new_holder, _) = wait_for_new_term(db, "q", term, bound * 2)
            .await
            .unwrap_or_else(|| panic!("kill {i}: nobody took over from {holder}"));
        let elapsed = killed_at.elapsed();
        took.push((holder.clone(), graceful, new_holder, elapsed));
        assert!(
            elapsed <= bound,
            "kill {i}: takeover after {elapsed:?}, more than {bound:?}"
        );
        tokio::time::sleep(Duration::from_millis(rng.random_range(300..1500))).await;
    }
    eprintln!("takeovers: {took:?}");

    // With both healthy replicas gone, the skewed one takes the expired lease and runs
    // rounds: it is refused live leases only.
    // (It may have won one of the takeovers above already.)
    let (holder, term, _) = lease_of(db, "q").await.unwrap().expect("a lease");
    let killed_at = std::time::Instant::now();
    for r in fleet.0.iter_mut().filter(|r| r.name() != "skewed") {
        r.kill();
    }
    let skewed_term = if holder.starts_with("skewed.") {
        term
    } else {
        let (_, holder, term) = wait_for_new_term(db, "q", term, bound * 2)
            .await
            .expect("the skewed replica takes over");
        assert!(holder.starts_with("skewed."), "{holder} leads");
        assert!(killed_at.elapsed() <= bound, "{:?}", killed_at.elapsed());
        term
    };
    let mut led = 0;
    for _ in 0..100 {
        led = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM rounds WHERE term = $1")
            .bind(skewed_term)
            .fetch_one(db)
            .await
            .unwrap();
        if led > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(led > 0, "the skewed leader commits rounds");
    // Its round times (and so the countdown it writes) are on the database's clock, not
    // on its own, 20 s ahead.
    let ahead: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM max(committed_at) - now())::float8 FROM rounds WHERE term = $1",
    )
    .bind(skewed_term)
    .fetch_one(db)
    .await
    .unwrap();
    assert!(
        ahead < 2.0,
        "the skewed leader's round is dated {ahead:.1} s ahead of the database"
    );

    let clients = stop_load(db, stop, load).await;
    assert!(fleet.0[1].check_alive(), "the skewed replica runs on");

    let changes = audit::lease_changes(db).await.unwrap();
    for c in &changes {
        eprintln!(
            "lease {} term {:?} -> {}: {:?} -> {} at {} (old expiry {:?})",
            c.queue,
            c.old_term,
            c.new_term,
            c.old_holder,
            c.new_holder,
            c.new_acquired_at,
            c.old_expires_at
        );
    }
    assert!(
        changes.len() >= 6,
        "first lease and five takeovers at least"
    );
    let live: Vec<_> = changes.iter().filter(|c| c.took_live_lease()).collect();
    assert!(live.is_empty(), "leases taken while live: {live:?}");

    let audit = fault_invariants(db, &clients).await;
    assert_clean(&audit);
    assert_eq!(audit.live_leases_taken, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_storm_racing_a_solve_matches_no_cancelled_player() {
    let _timing = TIMING.write().await;
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let dir = tempfile::tempdir().unwrap();
    // One round, started by the burst (target 120), solving for a full second.
    let queues = "[queues.q.round]\nevery = \"1h\"\nbudget = \"1s\"\ntarget_pool = 120\n\
                  threads = 1\n";
    let config = write_config(dir.path(), &config_toml(queues)).unwrap();
    let _fleet = Fleet(vec![
        Replica::start(replica_spec(&tdb.url(), &config, dir.path(), "d")).unwrap(),
    ]);
    wait_for_published(db, 1).await;
    // The burst commits at once and wakes the leader; it looks 250 ms later (the notify
    // debounce), snapshots and solves for 1 s. The cancels land 450-1150 ms after the
    // burst: inside the solve.
    let storm = cancel_storm(
        db,
        &StormSpec {
            queue: "q".into(),
            players: 120,
            parties: 10,
            cancels: 100,
            start_after: Duration::from_millis(450),
            spread: Duration::from_millis(700),
            prefix: "d".into(),
            seed: 14,
        },
    )
    .await
    .unwrap();
    assert!(
        wait_for_rounds(db, 0, Duration::from_secs(15)).await,
        "the burst started a round"
    );
    wait_for_quiet(db, Duration::from_secs(2), Duration::from_secs(10)).await;

    let audit = fault_invariants(db, &storm.clients).await;
    assert_clean(&audit);
    assert_eq!(audit.checked, 120);
    assert_eq!(storm.clients.cancels, 100, "{:?}", storm.clients.last_error);

    // The storm did race the solve: cancels landed between the snapshot and the commit,
    // and the commit dropped the matches they broke.
    let (pool_size, dropped, during): (i32, i32, i64) = sqlx::query_as(
        "SELECT r.pool_size, r.dropped_by_cancel,
                (SELECT count(*) FROM queue_entries e
                  WHERE e.status = 'cancelled'
                    AND e.updated_at > r.snapshot_at AND e.updated_at < r.committed_at)
           FROM rounds r ORDER BY r.round_id LIMIT 1",
    )
    .fetch_one(db)
    .await
    .unwrap();
    eprintln!(
        "first round: pool {pool_size}, dropped_by_cancel {dropped}, cancels during the solve {during}"
    );
    assert!(
        during >= 20,
        "only {during} cancels landed during the solve (pool {pool_size})"
    );
    assert!(dropped > 0, "no match was dropped for a cancel");
}

/// How long the database lets a daemon's session sit idle inside a transaction.
const IDLE_IN_TRANSACTION: Duration = matchmaker::db::IDLE_IN_TRANSACTION_TIMEOUT;

async fn committing_sessions(db: &PgPool) -> i64 {
    matchmaker_testkit::fleet::committing_sessions(db)
        .await
        .unwrap()
}

/// Freeze `replica` (SIGSTOP) while it is inside a commit; true once it is frozen there
/// (seen committing after the freeze), false when 50 tries missed. Resume it yourself.
async fn freeze_inside_commit(db: &PgPool, replica: &mut Replica) -> bool {
    for _ in 0..50 {
        let started = std::time::Instant::now();
        while committing_sessions(db).await == 0 {
            if started.elapsed() > Duration::from_secs(10) {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        replica.pause();
        if committing_sessions(db).await > 0 {
            return true;
        }
        replica.resume();
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_frozen_mid_commit_does_not_stall_the_queue() {
    let _timing = TIMING.write().await;
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let (stage, mut fleet) = Stage::with_a(&tdb).await;
    assert!(wait_for_leaders(db, &["q"], Duration::from_secs(15)).await);
    fleet.0.push(stage.start("b"));
    wait_for_published(db, 1).await;
    let (stop, load) = start_load(tdb.new_pool(4).await, "f", None, 15);

    // Freeze the leader (SIGSTOP: a long GC pause, a frozen VM) while it is inside a
    // commit, holding the lease row's lock and its pool rows' locks.
    let (holder, term, _) = lease_of(db, "q").await.unwrap().expect("a leads");
    let leader = fleet.0.iter().position(|r| r.holder() == holder).unwrap();
    // Frozen once it holds its pool rows' locks (retried until a freeze lands there).
    let mut locked: Option<String> = None;
    for _ in 0..20 {
        assert!(
            freeze_inside_commit(db, &mut fleet.0[leader]).await,
            "could not freeze the leader inside a commit"
        );
        locked = sqlx::query_scalar(
            "SELECT player_id FROM queue_entries WHERE queue = 'q' AND status = 'queued'
             EXCEPT
             SELECT player_id FROM (SELECT player_id FROM queue_entries
                                     WHERE queue = 'q' AND status = 'queued'
                                       FOR UPDATE SKIP LOCKED) free
             LIMIT 1",
        )
        .fetch_optional(db)
        .await
        .unwrap();
        if locked.is_some() {
            break;
        }
        fleet.0[leader].resume();
    }
    let locked = locked.expect("the leader frozen in a commit that holds its pool rows");

    // The frozen leader's lease runs out; a standby must take over, and clients must get
    // answers, although the frozen process still holds its transaction open. A player
    // whose row the frozen commit locked is cancelled meanwhile.
    let frozen_at = std::time::Instant::now();
    let bound = LEASE_TTL.max(IDLE_IN_TRANSACTION) + LEASE_RENEW + Duration::from_secs(1);
    let canceller = {
        let (db, who) = (db.clone(), locked.clone());
        tokio::spawn(async move {
            let result = matchmaker::db::enqueue::cancel(&db, None, &who).await;
            (result, frozen_at.elapsed())
        })
    };
    let took = wait_for_new_term(db, "q", term, bound * 3).await;
    let cancelled = tokio::time::timeout(bound * 2, canceller).await;
    fleet.0[leader].resume();
    let (elapsed, new_holder, _) = took.expect("nobody took over from the frozen leader");
    eprintln!("{new_holder} took over {elapsed:?} after {holder} froze mid-commit");
    assert!(
        elapsed <= bound,
        "takeover {elapsed:?} after the leader froze, more than {bound:?}"
    );
    let mut extra_cancelled = Vec::new();
    let Ok(answer) = cancelled else {
        panic!("cancel() of {locked}, locked by the frozen commit, hung");
    };
    let (result, after) = answer.unwrap();
    let n = result.expect("cancel answers");
    eprintln!("cancel({locked}), locked by the frozen commit: {n} after {after:?}");
    assert!(after <= bound, "cancel() waited {after:?}");
    if n > 0 {
        extra_cancelled.push(locked);
    }

    // Thawed, the old leader finds its lease gone: its round is not committed.
    tokio::time::sleep(LEASE_RENEW * 2).await;
    let mut clients = stop_load(db, stop, load).await;
    clients.cancelled_players.extend(extra_cancelled);
    fleet.assert_all_alive();
    let audit = fault_invariants(db, &clients).await;
    assert_clean(&audit);
    let stale: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM rounds r WHERE r.term = $1
            AND r.committed_at > (SELECT min(new_acquired_at) FROM audit_lease_log
                                   WHERE new_term > $1)",
    )
    .bind(term)
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(
        stale, 0,
        "the thawed leader committed after losing its lease"
    );
}

/// When the server's postmaster started (epoch seconds), retried while it comes back.
async fn postmaster_start(db: &sqlx::PgPool) -> f64 {
    for _ in 0..100 {
        if let Ok(t) = sqlx::query_scalar::<_, f64>(
            "SELECT extract(epoch FROM pg_postmaster_start_time())::float8",
        )
        .fetch_one(db)
        .await
        {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("PostgreSQL did not answer for 10 s");
}
