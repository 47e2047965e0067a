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
//! A's players are placed at the rate they are without B (within 20%), none is refused,
//! withdrawn, cancelled or expired, and the rounds keep their budget.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use matchmaker::config::Config;
use sqlx::Connection;

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

/// B's attacks, started before A's first player and run until `stop`.
async fn attack(tdb: &TestDb, stop: Arc<AtomicBool>) -> Vec<tokio::task::JoinHandle<()>> {
    let (b, client_b) = client_login(tdb, 4).await;
    // Ghosts under A's future ids (a squat) up to B's quota, kept alive.
    for i in 0..300 {
        enqueue(&client_b, "q", &format!("a{i}"), 1500.0)
            .latency("eu", 5000.0)
            .await;
    }
    // A's ids again in q2, as real players: matched there, they withdraw B's own entries.
    for i in 0..60 {
        enqueue(&client_b, "q2", &format!("a{i}"), 1500.0 + i as f64)
            .latency("eu", 30.0)
            .await;
    }
    let mut tasks = Vec::new();
    {
        let (client_b, stop) = (client_b.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let ids: Vec<String> = (0..300).map(|i| format!("a{i}")).collect();
                let _ = sqlx::query("SELECT keep_alive($1, 'q')")
                    .bind(&ids)
                    .execute(&client_b)
                    .await;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }));
    }
    // Scale bombs (matchable players: their numbers are zeros), until B's quota refuses
    // them.
    {
        let (client_b, stop) = (client_b.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let _ = sqlx::query(
                    "SELECT enqueue('q', $1, 1500, '{\"eu\": 0e-16383}', '{\"k\": 1e-300}')",
                )
                .bind(format!("bomb{i}"))
                .execute(&client_b)
                .await;
                i += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }
    // An entry held in an open transaction, and a LISTEN inside another.
    let mut held = connect_as(tdb, &b).await.unwrap();
    sqlx::query("BEGIN").execute(&mut held).await.unwrap();
    enqueue(&mut held, "q", "held", 1500.0)
        .latency("eu", 30.0)
        .await;
    let stuck = stuck_listener(tdb, &b, "spam").await;
    let mut spammer = connect_as(tdb, &b).await.unwrap();
    {
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let _ = sqlx::query(
                    "SELECT pg_notify('matchmaker_enqueue', 'q'),
                            pg_notify('spam', repeat('x', 7000))
                       FROM generate_series(1, 10)",
                )
                .execute(&mut spammer)
                .await;
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
    tasks
}

/// The daemon, A's steady arrivals and then until A's last players have
/// had two more rounds, with B's attacks or without.
async fn run(attacked: bool) -> Outcome {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let config = Config::from_toml_str(CONFIG).expect("valid config");
    let daemon = spawn_daemon(tdb.new_pool(6).await, config, "tenancy");
    let started = Instant::now();
    while count(db, "SELECT count(*) FROM queues WHERE active").await < 2 {
        assert!(
            started.elapsed() < secs(30),
            "the daemon publishes q and q2"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let stop = Arc::new(AtomicBool::new(false));
    let tasks = if attacked {
        attack(&tdb, stop.clone()).await
    } else {
        Vec::new()
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

    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    daemon.stop().await;
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
    assert!(alone.matched > 0, "{alone:?}");
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
