//! The ready check as a client sees it, against a running daemon (`daemon::run`, wall
//! clock) with `timeout = "3s"`: a decline puts the other players back with their
//! original enqueue time and the next round places them; the decliner waits out the
//! cooldown; all accept makes the match final; a player who never answers cancels it
//! like a decline; answering twice, late, for a cancelled match or for another login's
//! player gets a clear result and changes nothing. Players one short of a match read
//! no wait estimate.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use matchmaker::config::Config;
use matchmaker::daemon::{self, DaemonOptions};
use sqlx::PgPool;

use crate::support::*;

// Rounds start early at 6 queued players (one 3v3 match); the schedule never fires
// within a test. The leader looks every 200 ms, so a timed-out ready check resolves
// promptly.
const CONFIG: &str = "[daemon]\npoll_interval = \"200ms\"\nlease_ttl = \"3s\"\n\
                      lease_renew = \"1s\"\n\
                      [queues.q.round]\nevery = \"1h\"\nbudget = \"50ms\"\ntarget_pool = 6\n\
                      [queues.q.ready_check]\ntimeout = \"3s\"\ndecline_cooldown = \"60s\"\n";

/// Generous for a loaded machine; the test waits for states, never asserts durations.
const WITHIN: Duration = Duration::from_secs(30);

struct Running {
    tdb: TestDb,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

impl Running {
    async fn start() -> Running {
        Running::start_with(CONFIG).await
    }

    async fn start_with(config: &str) -> Running {
        let tdb = fresh_db().await;
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let options = DaemonOptions {
            holder: "ready".into(),
            ..DaemonOptions::default()
        };
        let pool = tdb.new_pool(4).await;
        let config = Config::from_toml_str(config).unwrap();
        let task = tokio::spawn(daemon::run(pool, config, options, async {
            let _ = stop_rx.await;
        }));
        let r = Running {
            tdb,
            stop: Some(stop),
            task: Some(task),
        };
        r.wait_for("SELECT count(*) FROM queues WHERE active", 1)
            .await;
        r.wait_for(
            "SELECT count(*) FROM pg_stat_activity
              WHERE datname = current_database() AND state = 'idle'
                AND query = 'LISTEN \"matchmaker_enqueue\"'",
            1,
        )
        .await;
        r
    }

    fn db(&self) -> &PgPool {
        &self.tdb.pool
    }

    async fn wait_for(&self, sql: &'static str, want: i64) {
        let start = Instant::now();
        while start.elapsed() < WITHIN {
            if count(self.db(), sql).await == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "waited for `{sql}` to be {want} (is {})",
            count(self.db(), sql).await
        );
    }

    /// Wait until every one of `players` reads `status` in player_status.
    async fn wait_status(&self, client: &PgPool, players: &[String], status: &str) {
        let start = Instant::now();
        loop {
            let now = statuses_of(client, players).await;
            if players
                .iter()
                .all(|p| now.get(p).map(|s| s.0.as_str()) == Some(status))
            {
                return;
            }
            assert!(
                start.elapsed() < WITHIN,
                "waited for {players:?} to be {status}: {now:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            time_limit::within("the daemon to stop", task)
                .await
                .unwrap()
                .unwrap();
        }
    }
}

/// A player's row of player_status: (status, match_id, enqueued_at, reason,
/// estimated_wait_s).
type Status = (
    String,
    Option<i64>,
    DateTime<Utc>,
    Option<String>,
    Option<i32>,
);

/// player -> their [`Status`] as the client reads it.
type Seen = BTreeMap<String, Status>;

async fn statuses_of(client: &PgPool, players: &[String]) -> Seen {
    use sqlx::Row;
    sqlx::query(
        "SELECT player_id, status, match_id, enqueued_at, reason, estimated_wait_s
           FROM player_status WHERE queue = 'q' AND player_id = ANY($1)",
    )
    .bind(players)
    .fetch_all(client)
    .await
    .unwrap()
    .into_iter()
    .map(|row| {
        let status: Status = (
            row.get("status"),
            row.get("match_id"),
            row.get("enqueued_at"),
            row.get("reason"),
            row.get("estimated_wait_s"),
        );
        (row.get("player_id"), status)
    })
    .collect()
}

async fn answer(
    client: &PgPool,
    f: &str,
    player: &str,
    match_id: i64,
) -> Result<String, sqlx::Error> {
    if f == "accept" {
        accept_match(client, player, match_id).await
    } else {
        decline_match(client, player, match_id).await
    }
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// The refusal's SQLSTATE and text.
fn refusal(r: Result<String, sqlx::Error>) -> String {
    let (code, message) = db_error(&r.expect_err("a refusal"));
    assert!(code.starts_with("22"), "class 22: {code} {message}");
    message
}

#[tokio::test]
async fn a_ready_check_requeues_who_accepted_and_holds_back_who_did_not() {
    let d = Running::start().await;
    let (_, client) = client_login(&d.tdb, 2).await;
    let (_, other) = client_login(&d.tdb, 1).await;

    // ---- One player declines -------------------------------------------------------
    let first = names("a", 6);
    for (i, p) in first.iter().enumerate() {
        enqueue(&client, "q", p, 1500.0 + 10.0 * i as f64).await;
    }
    d.wait_status(&client, &first, "pending").await;
    let before = statuses_of(&client, &first).await;
    let m1 = before["a0"].1.expect("a pending match names its match");
    assert!(
        before.values().all(|s| s.1 == Some(m1)),
        "one match: {before:?}"
    );
    let answer_by: Option<DateTime<Utc>> =
        sqlx::query_scalar("SELECT answer_by FROM player_status WHERE player_id = 'a0'")
            .fetch_one(&client)
            .await
            .unwrap();
    assert!(answer_by.is_some(), "pending shows the time to answer by");

    // Another login's player, and an accept twice.
    let other_login = refusal(answer(&other, "accept", "a1", m1).await);
    assert_eq!(
        other_login,
        format!("match_id = {m1}: is not a match of player 'a1' of this login")
    );
    for p in &first[1..] {
        assert_eq!(answer(&client, "accept", p, m1).await.unwrap(), "accepted");
    }
    assert_eq!(
        answer(&client, "accept", "a1", m1).await.unwrap(),
        "already_accepted",
        "answering twice changes nothing"
    );
    assert_eq!(
        answer(&client, "decline", "a0", m1).await.unwrap(),
        "declined"
    );

    let five: Vec<String> = first[1..].to_vec();
    d.wait_status(&client, &five, "queued").await;
    d.wait_status(&client, &first[..1], "declined").await;
    let after = statuses_of(&client, &first).await;
    for p in &five {
        assert_eq!(
            after[p].2, before[p].2,
            "{p} keeps the original enqueued_at"
        );
        assert!(
            after[p]
                .3
                .as_deref()
                .is_some_and(|r| r.contains("declined by a0")),
            "{p}: {:?}",
            after[p].3
        );
        assert!(
            after[p].4.is_none(),
            "{p} is one of five, one short of a match: no wait estimate: {:?}",
            after[p]
        );
    }
    assert_eq!(
        after["a0"].3.as_deref(),
        Some(&*format!("declined match {m1}"))
    );
    let (status, reason): (String, String) =
        sqlx::query_as("SELECT status, cancel_reason FROM matches WHERE match_id = $1")
            .bind(m1)
            .fetch_one(d.db())
            .await
            .unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("cancelled", "declined by a0")
    );
    assert_eq!(
        count(d.db(), "SELECT count(*) FROM recent_matches").await,
        0,
        "a cancelled match is in nobody's history"
    );

    // The decliner: held back, with the time left; answers to the cancelled match refused.
    let held = db_error(
        &enqueue(&client, "q", "a0", 1500.0)
            .send()
            .await
            .unwrap_err(),
    )
    .1;
    assert!(
        held.starts_with(&format!(
            "player_id = 'a0': declined match {m1} in queue q; may enqueue again in "
        )) && held.ends_with(" s (decline_cooldown)"),
        "{held}"
    );
    let cancelled = refusal(answer(&client, "accept", "a1", m1).await);
    assert_eq!(
        cancelled,
        format!(
            "match_id = {m1}: was cancelled by its ready check; read player_status for player 'a1'"
        )
    );

    // ---- The next round places them, and all accept --------------------------------
    enqueue(&client, "q", "b0", 1520.0).await;
    let second: Vec<String> = five.iter().cloned().chain(["b0".to_string()]).collect();
    d.wait_status(&client, &second, "pending").await;
    let placed = statuses_of(&client, &second).await;
    let m2 = placed["b0"].1.unwrap();
    assert!(placed.values().all(|s| s.1 == Some(m2)), "{placed:?}");
    for p in &second {
        assert_eq!(answer(&client, "accept", p, m2).await.unwrap(), "accepted");
    }
    d.wait_status(&client, &second, "matched").await;
    let decline_late = refusal(answer(&client, "decline", "b0", m2).await);
    assert_eq!(
        decline_late,
        format!("match_id = {m2}: is ready: every player accepted (too late to decline)")
    );
    assert_eq!(
        count(d.db(), "SELECT count(*) FROM recent_matches").await,
        6,
        "a ready match is in its players' history"
    );

    // ---- One player never answers ----------------------------------------------------
    let third = names("c", 6);
    for (i, p) in third.iter().enumerate() {
        enqueue(&client, "q", p, 1400.0 + 10.0 * i as f64).await;
    }
    d.wait_status(&client, &third, "pending").await;
    let m3 = statuses_of(&client, &third).await["c0"].1.unwrap();
    for p in &third[1..] {
        answer(&client, "accept", p, m3).await.unwrap();
    }
    let back: Vec<String> = third[1..].to_vec();
    d.wait_status(&client, &back, "queued").await;
    d.wait_status(&client, &third[..1], "declined").await;
    let silent = statuses_of(&client, &third).await;
    assert_eq!(
        silent["c0"].3.as_deref(),
        Some(&*format!(
            "did not answer the ready check of match {m3} in time"
        ))
    );
    let late = refusal(answer(&client, "accept", "c0", m3).await);
    assert!(
        late.starts_with(&format!(
            "match_id = {m3}: was cancelled by its ready check; read player_status for player 'c0'"
        )),
        "{late}"
    );
    assert!(
        db_error(
            &enqueue(&client, "q", "c0", 1400.0)
                .send()
                .await
                .unwrap_err()
        )
        .1
        .contains("(decline_cooldown)")
    );

    // ---- Cancel while pending counts as a decline -----------------------------------
    enqueue(&client, "q", "d0", 1450.0).await;
    let fourth: Vec<String> = back.iter().cloned().chain(["d0".to_string()]).collect();
    d.wait_status(&client, &fourth, "pending").await;
    let m4 = statuses_of(&client, &fourth).await["d0"].1.unwrap();
    for p in &fourth[..5] {
        answer(&client, "accept", p, m4).await.unwrap();
    }
    let n = cancel(&client, "d0").await;
    assert_eq!(n, 1, "cancel declines the pending match");
    d.wait_status(&client, &fourth[..5], "queued").await;
    d.wait_status(&client, &fourth[5..], "declined").await;
    let status: String = sqlx::query_scalar("SELECT status FROM matches WHERE match_id = $1")
        .bind(m4)
        .fetch_one(d.db())
        .await
        .unwrap();
    assert_eq!(status, "cancelled");

    // Five queued, one short of a match: no estimate, and players_missing says why;
    // the audit finds nothing wrong.
    let queued: Vec<(String, Option<i32>, Option<i32>)> = sqlx::query_as(
        "SELECT player_id, estimated_wait_s, players_missing FROM player_status
          WHERE status = 'queued'",
    )
    .fetch_all(&client)
    .await
    .unwrap();
    assert_eq!(queued.len(), 5);
    assert!(
        queued
            .iter()
            .all(|(_, e, missing)| e.is_none() && missing.is_some_and(|m| m > 0)),
        "{queued:?}"
    );
    let median: Option<i32> =
        sqlx::query_scalar("SELECT recent_median_wait_s FROM queue_catalog WHERE queue = 'q'")
            .fetch_one(&client)
            .await
            .unwrap();
    assert!(median.is_some(), "the catalog shows the recent median wait");
    let audit = audit::audit(d.db(), Default::default()).await.unwrap();
    assert_eq!(audit.violation_count(), 0, "{audit}");
    d.stop().await;
}

/// A decline cooldown ends: the decliner is refused while the database's clock is before
/// `declined_until` and queued again once it has passed.
#[tokio::test]
async fn a_decliner_may_enqueue_again_once_the_cooldown_has_passed() {
    const COOLDOWN_S: f64 = 4.0;
    let config = CONFIG.replace("decline_cooldown = \"60s\"", "decline_cooldown = \"4s\"");
    assert_ne!(config, CONFIG);
    let d = Running::start_with(&config).await;
    let (_, client) = client_login(&d.tdb, 2).await;
    let players = names("a", 6);
    for (i, p) in players.iter().enumerate() {
        enqueue(&client, "q", p, 1500.0 + 10.0 * i as f64).await;
    }
    d.wait_status(&client, &players, "pending").await;
    let m = statuses_of(&client, &players).await["a0"].1.unwrap();
    assert_eq!(
        answer(&client, "decline", "a0", m).await.unwrap(),
        "declined"
    );
    d.wait_status(&client, &players[..1], "declined").await;

    // The cooldown runs from the moment the decline was resolved, as long as configured.
    let (until, cooldown_s): (DateTime<Utc>, f64) = sqlx::query_as(
        "SELECT declined_until, extract(epoch FROM declined_until - updated_at)::float8
           FROM queue_entries WHERE player_id = 'a0' AND status = 'declined'",
    )
    .fetch_one(d.db())
    .await
    .unwrap();
    assert_eq!(cooldown_s, COOLDOWN_S);

    // During it: refused, and the refusal was indeed before declined_until.
    let refused = enqueue(&client, "q", "a0", 1500.0)
        .send()
        .await
        .unwrap_err();
    let refused_by: DateTime<Utc> = sqlx::query_scalar("SELECT clock_timestamp()")
        .fetch_one(d.db())
        .await
        .unwrap();
    assert!(refused_by < until, "refused at {refused_by}, after {until}");
    let message = db_error(&refused).1;
    assert!(message.ends_with(" s (decline_cooldown)"), "{message}");

    // After it, on the database's clock: queued again.
    time_limit::wait_until("the database clock to pass declined_until", || async {
        sqlx::query_scalar::<_, bool>("SELECT clock_timestamp() > $1")
            .bind(until)
            .fetch_one(d.db())
            .await
            .unwrap()
    })
    .await;
    enqueue(&client, "q", "a0", 1500.0)
        .send()
        .await
        .expect("the cooldown is over");
    let status = &statuses_of(&client, &players[..1]).await["a0"].0;
    assert!(["queued", "pending"].contains(&status.as_str()), "{status}");
    d.stop().await;
}

/// Answers every pending match of this pool's logins (the load's): most players accept,
/// some decline, some never answer (seeded), every 100 ms until `stop`. Errors (a
/// restart, a late answer) are skipped: the next pass tries again.
async fn answer_pending(db: PgPool, mut stop: tokio::sync::watch::Receiver<bool>) -> u64 {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
    let mut answered = 0;
    let mut silent = std::collections::HashSet::new();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = stop.changed() => {}
        }
        if *stop.borrow() {
            return answered;
        }
        let Ok(pending) = sqlx::query_as::<_, (String, i64)>(
            "SELECT player_id, match_id FROM player_status
              WHERE status = 'pending' AND answer IS NULL",
        )
        .fetch_all(&db)
        .await
        else {
            continue;
        };
        for (player, match_id) in pending {
            if silent.contains(&player) {
                continue;
            }
            let roll: f64 = rng.random();
            let f = if roll < 0.9 {
                "accept"
            } else if roll < 0.95 {
                "decline"
            } else {
                silent.insert(player);
                continue;
            };
            if answer(&db, f, &player, match_id).await.is_ok() {
                answered += 1;
            }
        }
    }
}

/// kill -9 of the leader (a second replica takes over) and PostgreSQL restarts while
/// matches wait for their ready check: every pending match is resolved once (ready or
/// cancelled, never both), nobody is lost, nobody is in two matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_and_restarts_during_ready_checks_resolve_every_match_once() {
    use matchmaker::db::local_pg::StopMode;
    use matchmaker_testkit::audit;
    use matchmaker_testkit::fleet::{Replica, ReplicaSpec, lease_of, wait_for_quiet, write_config};
    use matchmaker_testkit::load::{LoadSpec, run_load};

    let _timing = TIMING.write().await;
    let (server, url, db) = own_server().await;
    let db = &db;
    audit::install_lease_log(db).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "default_queue = \"q\"\n[daemon]\npoll_interval = \"500ms\"\nlease_ttl = \"3s\"\n\
         lease_renew = \"1s\"\n[queues.q.round]\nevery = \"1s\"\nbudget = \"100ms\"\n\
         target_pool = 12\nthreads = 1\n[queues.q.ready_check]\ntimeout = \"3s\"\n",
    )
    .unwrap();
    let spec = |name: &str| ReplicaSpec {
        exe: env!("CARGO_BIN_EXE_matchmaker").into(),
        database_url: url.clone(),
        config: config.clone(),
        name: name.to_string(),
        clock_skew: None,
        log_dir: dir.path().to_path_buf(),
    };
    let mut fleet = vec![
        Replica::start(spec("ra")).unwrap(),
        Replica::start(spec("rb")).unwrap(),
    ];
    for _ in 0..200 {
        if count(db, "SELECT count(*) FROM queues WHERE active").await == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let load = tokio::spawn(run_load(
        matchmaker::db::connect_with(&url, 4).await.unwrap(),
        LoadSpec {
            queue: "q".into(),
            second_queue: None,
            max_party: 3,
            pace: Duration::from_millis(20),
            prefix: "rc".into(),
            seed: 21,
        },
        stop_rx.clone(),
    ));
    let answers = tokio::spawn(answer_pending(
        matchmaker::db::connect_with(&url, 2).await.unwrap(),
        stop_rx,
    ));

    // Wait for pending matches, then the fault, three times each.
    let pending_now = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM matches WHERE status = 'pending'")
            .fetch_one(db)
            .await
            .unwrap_or(0)
    };
    let mut faults_while_pending = 0;
    for i in 0..6 {
        let start = Instant::now();
        while pending_now().await == 0 && start.elapsed() < WITHIN {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if pending_now().await > 0 {
            faults_while_pending += 1;
        }
        if i % 2 == 0 {
            // kill -9 of whoever leads the queue; the other replica takes over.
            let holder = lease_of(db, "q").await.ok().flatten().map(|l| l.0);
            if let Some(r) = fleet
                .iter_mut()
                .find(|r| holder.as_deref() == Some(r.holder().as_str()))
            {
                r.kill();
                r.restart().unwrap();
            }
        } else {
            let mode = if i == 3 {
                StopMode::Immediate
            } else {
                StopMode::Fast
            };
            server.restart(mode).await.expect("restart PostgreSQL");
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }

    let _ = stop_tx.send(true);
    let clients = time_limit::within("the load to stop", load).await.unwrap();
    let answered = time_limit::within("the answers to stop", answers)
        .await
        .unwrap();
    // Every pending match is resolved by its timeout at the latest.
    let start = Instant::now();
    while pending_now().await > 0 && start.elapsed() < WITHIN {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_for_quiet(db, Duration::from_secs(3), Duration::from_secs(20)).await;
    for r in fleet.iter_mut() {
        assert!(r.check_alive(), "replica {} exited by itself", r.holder());
    }
    let audit = audit::audit(db, clients.expected()).await.unwrap();
    eprintln!("{audit}answers: {answered}");
    let bad = audit.nonzero_violations();
    assert!(bad.is_empty(), "violations: {bad:?}\n{audit}");
    assert_eq!(audit.pending_matches, 0, "every pending match was resolved");
    assert!(
        audit.cancelled_matches > 0,
        "some ready checks failed: {audit}"
    );
    assert!(
        faults_while_pending >= 4,
        "faults while matches were pending: {faults_while_pending}"
    );
    let ready: i64 = count(db, "SELECT count(*) FROM matches WHERE status = 'ready'").await;
    assert!(ready > 0, "some ready checks passed");
    drop(fleet);
    db.close().await;
    server.stop().await.unwrap();
}
