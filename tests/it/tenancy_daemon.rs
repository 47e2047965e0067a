//! The tenancy suite against a running daemon: an honest game backend (login A) enqueues
//! players at a steady rate while another login (B) attacks with everything a client
//! login can do at once:
//!
//! - a ghost flood: entries nobody can host, up to B's quota, kept alive;
//! - squats: B queues A's player ids first, in A's queue and in a second queue, where
//!   they are matched (which withdraws B's own entries of those ids, not A's);
//! - a scale bomb: latencies written with a scale of 16383;
//! - an open transaction holding an entry of B's;
//! - a notification flood: fake wake-ups on the daemon's channel, and large payloads
//!   while a session of B's LISTENs inside an open transaction (holding PostgreSQL's
//!   notification queue back).
//!
//! Each attack is checked to have taken effect while it runs. A's players are placed at
//! the rate they are without B (within 20%; alone, at least 90% of them), none is
//! refused, withdrawn, cancelled or expired, and the rounds keep their budget.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use matchmaker::config::Config;
use matchmaker::daemon::{self, DaemonOptions};
use sqlx::{Connection, PgPool};

use crate::support::*;

/// q: 3v3 peer-to-peer, a round every 2 s of at most 60 players (a fair share each for
/// two logins), 400 entries a login; q2: where B's squatted ids are matched.
const CONFIG: &str = r#"
default_queue = "q"
[daemon]
poll_interval = "500ms"
lease_ttl = "3s"
lease_renew = "1s"
[queues.q]
[queues.q.round]
every = "2s"
budget = "100ms"
max_round_size = 60
[queues.q.limits]
max_queued_per_login = 400
[queues.q2]
[queues.q2.round]
every = "2s"
budget = "100ms"
"#;

/// A's arrivals: PER_TICK players every TICK, TICKS times (16 s), on a fixed schedule so
/// that both runs send the same players however slow the machine is.
const TICKS: u32 = 32;
const TICK: Duration = Duration::from_millis(500);
const PER_TICK: usize = 6;

#[derive(Debug)]
struct Outcome {
    /// A's players placed in a match by the end of the window (of TICKS * PER_TICK sent).
    matched: i64,
    /// A's enqueues refused, and A's entries withdrawn, cancelled, expired or rejected.
    refused: usize,
    harmed: i64,
    /// The longest solve and the longest snapshot plus commit of q's rounds, ms.
    max_solve_ms: f64,
    max_io_ms: f64,
}

/// What B's attacks did, counted as they ran.
#[derive(Debug, Default)]
struct Effects {
    /// keep_alive calls that refreshed ghosts.
    keep_alives: AtomicUsize,
    /// Scale bombs queued, and refused by B's quota.
    bombs_queued: AtomicUsize,
    bombs_over_quota: AtomicUsize,
    /// Fake wake-ups sent on the daemon's channel, and all wake-ups a listener heard there.
    wakeups_sent: AtomicUsize,
    wakeups_heard: AtomicUsize,
    /// Large payloads sent while B's stuck listener holds the notification queue back.
    payloads_sent: AtomicUsize,
    /// Any other error of an attack (an attack that fails does nothing).
    errors: std::sync::Mutex<Vec<String>>,
}

impl Effects {
    fn failed(&self, what: &str, e: sqlx::Error) {
        self.errors.lock().unwrap().push(format!("{what}: {e}"));
    }
}

/// B's attacks under way: B's login, its tasks, what they did, and the sessions that hold
/// an entry in an open transaction and LISTEN inside another.
struct Attack {
    b: String,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    listener: tokio::task::JoinHandle<()>,
    effects: Arc<Effects>,
    held_pid: i32,
    stuck_pid: i32,
}

/// A's ids B queues as ghosts in q, and the first of them B also queues in q2.
const GHOSTS: usize = 300;
const SQUATS: usize = 60;

/// B's attacks, started before A's first player and run until `stop`.
async fn attack(tdb: &TestDb, stop: Arc<AtomicBool>) -> Attack {
    let effects = Arc::new(Effects::default());
    // Every wake-up on the daemon's channel, heard by a session that reads them.
    let mut listener = sqlx::postgres::PgListener::connect_with(&tdb.pool)
        .await
        .unwrap();
    listener.listen(daemon::ENQUEUE_CHANNEL).await.unwrap();
    let listener = {
        let effects = effects.clone();
        tokio::spawn(async move {
            while let Ok(n) = listener.recv().await {
                if n.payload() == "q" {
                    effects.wakeups_heard.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };

    let (b, client_b) = client_login(tdb, 4).await;
    // Ghosts under A's future ids (a squat) up to B's quota, kept alive; nobody can host
    // them.
    for i in 0..GHOSTS {
        sqlx::query("SELECT enqueue('q', $1, 1500, '{\"eu\": 5000}')")
            .bind(format!("a{i}"))
            .execute(&client_b)
            .await
            .unwrap();
    }
    // A's ids again in q2, as real players: matched there, they withdraw B's own entries.
    for i in 0..SQUATS {
        sqlx::query("SELECT enqueue('q2', $1, $2, '{\"eu\": 30}')")
            .bind(format!("a{i}"))
            .bind(1500.0 + i as f64)
            .execute(&client_b)
            .await
            .unwrap();
    }
    let mut tasks = Vec::new();
    {
        let (client_b, stop, effects) = (client_b.clone(), stop.clone(), effects.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let ids: Vec<String> = (0..GHOSTS).map(|i| format!("a{i}")).collect();
                match sqlx::query_scalar::<_, i32>("SELECT keep_alive($1, 'q')")
                    .bind(&ids)
                    .fetch_one(&client_b)
                    .await
                {
                    Ok(n) if n > 0 => _ = effects.keep_alives.fetch_add(1, Ordering::Relaxed),
                    Ok(_) => effects.errors.lock().unwrap().push("keep_alive: 0".into()),
                    Err(e) => effects.failed("keep_alive", e),
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }));
    }
    // Scale bombs (matchable players: their numbers are zeros), until B's quota refuses
    // them.
    {
        let (client_b, stop, effects) = (client_b.clone(), stop.clone(), effects.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let r = sqlx::query(
                    "SELECT enqueue('q', $1, 1500, '{\"eu\": 0e-16383}', '{\"k\": 1e-300}')",
                )
                .bind(format!("bomb{i}"))
                .execute(&client_b)
                .await;
                match r {
                    Ok(_) => _ = effects.bombs_queued.fetch_add(1, Ordering::Relaxed),
                    Err(e) if e.to_string().contains("(limits.max_queued_per_login)") => {
                        effects.bombs_over_quota.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => effects.failed("scale bomb", e),
                }
                i += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }
    // An entry held in an open transaction (by a second attacking login: one login's
    // open transaction makes its own enqueues into the queue wait for the quota count),
    // and a LISTEN inside another.
    let (b2, _) = client_login(tdb, 1).await;
    let mut held = connect_as(tdb, &b2).await.unwrap();
    sqlx::query("BEGIN").execute(&mut held).await.unwrap();
    sqlx::query("SELECT enqueue('q', 'held', 1500, '{\"eu\": 30}')")
        .execute(&mut held)
        .await
        .unwrap();
    let held_pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut held)
        .await
        .unwrap();
    let mut stuck = stuck_listener(tdb, &b, "spam").await;
    let stuck_pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut stuck)
        .await
        .unwrap();
    let mut spammer = connect_as(tdb, &b).await.unwrap();
    {
        let (stop, effects) = (stop.clone(), effects.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                // Distinct payloads: PostgreSQL folds equal ones of one transaction.
                let r = sqlx::query(
                    "SELECT pg_notify('matchmaker_enqueue', 'q'),
                            pg_notify('spam', g || repeat('x', 7000))
                       FROM generate_series(1, 10) g",
                )
                .execute(&mut spammer)
                .await;
                match r {
                    Ok(_) => {
                        effects.wakeups_sent.fetch_add(1, Ordering::Relaxed);
                        effects.payloads_sent.fetch_add(10, Ordering::Relaxed);
                    }
                    Err(e) => effects.failed("notification flood", e),
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }));
    }
    tasks.push(tokio::spawn(async move {
        while !stop.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = held.close().await;
        let _ = stuck.close().await;
    }));
    Attack {
        b,
        tasks,
        listener,
        effects,
        held_pid,
        stuck_pid,
    }
}

/// Each of B's attacks took effect, read while they are still under way.
async fn assert_attacks_took_effect(db: &PgPool, attack: &Attack) {
    let effects = &attack.effects;
    let errors = effects.errors.lock().unwrap().clone();
    assert!(errors.is_empty(), "attacks that failed: {errors:?}");
    let b = &attack.b;
    // The ghosts A's ids did not squat in q2 are all still queued, and kept alive past
    // the expiry their enqueue gave them.
    let (ghosts, kept): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE e.expires_at > e.enqueued_at + q.ticket_ttl)
           FROM queue_entries e JOIN queues q USING (queue)
          WHERE e.owner = $1 AND e.queue = 'q' AND e.player_id ~ '^a[0-9]+$'
            AND e.status = 'queued' AND e.expires_at > now()",
    )
    .bind(b)
    .fetch_one(db)
    .await
    .unwrap();
    let unsquatted = (GHOSTS - SQUATS) as i64;
    assert!(ghosts >= unsquatted, "{ghosts} ghosts queued: {effects:?}");
    assert!(kept >= unsquatted, "{kept} ghosts kept alive: {effects:?}");
    assert!(
        effects.keep_alives.load(Ordering::Relaxed) >= 10,
        "{effects:?}"
    );
    // A's ids matched in q2 as B's players, and B's ghosts of exactly those ids withdrawn.
    let (squats_matched, ghosts_withdrawn): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE queue = 'q2' AND status = 'matched'),
                count(*) FILTER (WHERE queue = 'q' AND status = 'withdrawn'
                                   AND player_id IN (SELECT player_id FROM queue_entries
                                                      WHERE owner = $1 AND queue = 'q2'
                                                        AND status = 'matched'))
           FROM queue_entries WHERE owner = $1",
    )
    .bind(b)
    .fetch_one(db)
    .await
    .unwrap();
    assert!(
        squats_matched >= 48,
        "{squats_matched} squats matched in q2"
    );
    assert_eq!(
        ghosts_withdrawn, squats_matched,
        "the squats matched in q2 withdrew B's ghosts of the same ids"
    );
    // Scale bombs queued until B's quota refused them.
    assert!(
        effects.bombs_queued.load(Ordering::Relaxed) > 0,
        "{effects:?}"
    );
    assert!(
        effects.bombs_over_quota.load(Ordering::Relaxed) > 0,
        "{effects:?}"
    );
    // The held entry: its session sits in a transaction that wrote it, nobody else sees
    // it.
    let (held_state, held_wrote): (String, bool) = sqlx::query_as(
        "SELECT state, backend_xid IS NOT NULL FROM pg_stat_activity WHERE pid = $1",
    )
    .bind(attack.held_pid)
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(
        (held_state.as_str(), held_wrote),
        ("idle in transaction", true)
    );
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM queue_entries WHERE player_id = 'held'"
        )
        .await,
        0,
        "the held entry is not committed"
    );
    // The stuck listener: still inside its transaction, holding back the notification
    // queue the flood fills.
    let stuck_state: String =
        sqlx::query_scalar("SELECT state FROM pg_stat_activity WHERE pid = $1")
            .bind(attack.stuck_pid)
            .fetch_one(db)
            .await
            .unwrap();
    assert_eq!(stuck_state, "idle in transaction");
    let usage: f64 = sqlx::query_scalar("SELECT pg_notification_queue_usage()")
        .fetch_one(db)
        .await
        .unwrap();
    assert!(usage > 0.0, "the notification queue is held back: {usage}");
    assert!(
        effects.payloads_sent.load(Ordering::Relaxed) >= 1000,
        "{effects:?}"
    );
    // The fake wake-ups reached the daemon's channel (a listener heard at least as many
    // as B sent; A's enqueues add their own).
    let sent = effects.wakeups_sent.load(Ordering::Relaxed);
    assert!(sent >= 100, "{effects:?}");
    time_limit::wait_until("the fake wake-ups to be heard", || async {
        effects.wakeups_heard.load(Ordering::Relaxed) >= sent
    })
    .await;
}

/// The daemon, A's steady arrivals and then until A's last players have
/// had two more rounds, with B's attacks or without.
async fn run(attacked: bool) -> Outcome {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let config = Config::from_toml_str(CONFIG).expect("valid config");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let options = DaemonOptions {
        holder: "tenancy".into(),
        ..DaemonOptions::default()
    };
    let daemon = tokio::spawn(daemon::run(tdb.new_pool(6).await, config, options, async {
        let _ = stop_rx.await;
    }));
    time_limit::wait_until("the daemon to publish q and q2", || async {
        count(db, "SELECT count(*) FROM queues WHERE active").await == 2
    })
    .await;

    let stop = Arc::new(AtomicBool::new(false));
    let attack = if attacked {
        Some(attack(&tdb, stop.clone()).await)
    } else {
        None
    };
    let (a, client_a) = client_login(&tdb, 2).await;
    let refused = AtomicUsize::new(0);
    let mut enqueued = 0;
    let begun = tokio::time::Instant::now();
    for tick in 0..TICKS {
        tokio::time::sleep_until(begun + TICK * tick).await;
        for _ in 0..PER_TICK {
            let skill = 1500.0 + (enqueued % 7) as f64 * 10.0;
            let r = enqueue(&client_a, "q", &format!("a{enqueued}"), skill)
                .latency("eu", 30.0)
                .send()
                .await;
            if let Err(e) = r {
                eprintln!("A's enqueue refused: {e}");
                refused.fetch_add(1, Ordering::Relaxed);
            }
            enqueued += 1;
        }
    }
    // Two more rounds for the last arrivals.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let matched: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM queue_entries WHERE owner = $1 AND status = 'matched'",
    )
    .bind(&a)
    .fetch_one(db)
    .await
    .unwrap();
    let harmed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM queue_entries
          WHERE owner = $1 AND status IN ('withdrawn', 'cancelled', 'expired', 'rejected')",
    )
    .bind(&a)
    .fetch_one(db)
    .await
    .unwrap();
    let (max_solve_ms, max_io_ms): (f64, f64) = sqlx::query_as(
        "SELECT coalesce(max(solve_ms), 0), coalesce(max(snapshot_ms + commit_ms), 0)
           FROM rounds WHERE queue = 'q'",
    )
    .fetch_one(db)
    .await
    .unwrap();

    if let Some(attack) = attack {
        assert_attacks_took_effect(db, &attack).await;
        stop.store(true, Ordering::Relaxed);
        for t in attack.tasks {
            time_limit::within("an attack to stop", t).await.unwrap();
        }
        attack.listener.abort();
    }
    let _ = stop_tx.send(());
    time_limit::within("the daemon to stop", daemon)
        .await
        .unwrap()
        .unwrap();
    assert_nobody_matched_twice(db).await;
    Outcome {
        matched,
        refused: refused.load(Ordering::Relaxed),
        harmed,
        max_solve_ms,
        max_io_ms,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_attacking_login_leaves_an_honest_logins_rate_budget_and_players_alone() {
    let _load = crate::support::TIMING.write().await;
    let alone = run(false).await;
    let attacked = run(true).await;
    eprintln!("alone: {alone:?}\nattacked: {attacked:?}");
    // Alone, A's players are placed but for a few left over at the end.
    let sent = (TICKS as usize * PER_TICK) as f64;
    assert!(alone.matched as f64 >= 0.9 * sent, "{alone:?}");
    assert_eq!((alone.refused, alone.harmed), (0, 0), "{alone:?}");
    assert_eq!((attacked.refused, attacked.harmed), (0, 0), "{attacked:?}");
    assert!(
        attacked.matched as f64 >= 0.8 * alone.matched as f64,
        "A's players placed: {} with the attacker, {} without",
        attacked.matched,
        alone.matched
    );
    // A solve runs to its 100 ms budget; reading the pool and committing stay far below
    // a round's interval however B wrote its rows.
    assert!(attacked.max_solve_ms < 600.0, "{attacked:?}");
    assert!(attacked.max_io_ms < 1500.0, "{attacked:?}");
}
