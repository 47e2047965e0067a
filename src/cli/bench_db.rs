//! `matchmaker bench-db`: the database side of the targets of issue 3, measured.
//!
//! 1. **Round database work** (snapshot + commit; the solve is excluded): for each pool
//!    size, the same players are enqueued again before every repetition, so from the
//!    second repetition on the snapshot also reads their match history, as in production.
//! 2. **Enqueue under load**: N connections insert single rows as fast as they can while
//!    rounds of up to `--load-round-size` players run back to back on the same queue; the
//!    rate and the worst single enqueue are reported (an enqueue must never wait on a
//!    round's locks).
//!
//! Runs in a scratch database (created and dropped) on `--database-url`, or on a
//! temporary private PostgreSQL when no URL is given. Absolute figures depend on the
//! machine and the server's settings (fsync, shared_buffers); the output says which.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};

use super::run::init_logging;
use crate::config::Config;
use crate::core::{self, Budget, Network, SolveOptions, Strategy};
use crate::db::{self, RoundRecord, RoundTrigger, local_pg::LocalPostgres};
use crate::sim::population::{Population, PopulationSpec};

#[derive(Debug, Args)]
pub struct BenchDbArgs {
    /// PostgreSQL server; a scratch database is created on it and dropped afterwards.
    /// Without it, a temporary private PostgreSQL is started.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Pool sizes of the round measurement.
    #[arg(long, value_delimiter = ',', default_value = "300,10000")]
    pub sizes: Vec<usize>,
    /// Repetitions per pool size.
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Concurrent enqueue connections.
    #[arg(long, default_value_t = 8)]
    pub connections: usize,
    /// Duration of the enqueue measurement.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub enqueue_for: Duration,
    /// Enqueue with `SET synchronous_commit = off` (a client's choice: the commit does
    /// not wait for the WAL flush; a crash may lose the last enqueues, which the client
    /// sees as "not queued" and repeats). Shows what the disk's flush costs.
    #[arg(long)]
    pub async_commit: bool,
    /// Round size of the rounds running during the enqueue measurement.
    #[arg(long, default_value_t = 10_000)]
    pub load_round_size: usize,
}

const QUEUE: &str = "bench";

pub fn run(args: BenchDbArgs) -> anyhow::Result<()> {
    init_logging(Default::default());
    tokio::runtime::Runtime::new()?.block_on(run_async(args))
}

async fn run_async(args: BenchDbArgs) -> anyhow::Result<()> {
    let (server_url, server) = match &args.database_url {
        Some(url) => (url.clone(), None),
        None => {
            let s = LocalPostgres::start_temporary().await?;
            (s.url(), Some(s))
        }
    };
    let server_options: PgConnectOptions = server_url.parse()?;
    let name = format!("mm_bench_{}", std::process::id());
    let mut admin = server_options
        .connect()
        .await
        .context("connect to the server")?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await?;
    let settings: (String, String, String) = sqlx::query_as(
        "SELECT current_setting('server_version'), current_setting('fsync'),
                current_setting('synchronous_commit')",
    )
    .fetch_one(&mut admin)
    .await?;
    let options = server_options.clone().database(&name);
    let pool = PgPoolOptions::new()
        .max_connections(args.connections as u32 + 4)
        .connect_with(options)
        .await?;

    let result = async {
        db::migrate(&pool).await?;
        println!(
            "PostgreSQL {} (fsync={}, synchronous_commit={}), {}",
            settings.0,
            settings.1,
            settings.2,
            if server.is_some() {
                "temporary private server"
            } else {
                "DATABASE_URL"
            }
        );
        bench_rounds(&pool, &args).await?;
        bench_enqueue(&pool, &args).await
    }
    .await;

    pool.close().await;
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {name}")))
        .execute(&mut admin)
        .await?;
    admin.close().await?;
    if let Some(server) = server {
        server.stop().await?;
    }
    result
}

/// A lease for the bench queue (nobody else competes for it).
async fn bench_lease(pool: &PgPool) -> anyhow::Result<db::Lease> {
    if let Some(l) =
        db::acquire_lease(pool, QUEUE, "bench", Duration::from_secs(3600), None).await?
    {
        return Ok(l);
    }
    let term: i64 = sqlx::query_scalar("SELECT term FROM leases WHERE queue = $1")
        .bind(QUEUE)
        .fetch_one(pool)
        .await?;
    Ok(db::Lease {
        queue: QUEUE.into(),
        holder: "bench".into(),
        term,
    })
}

struct RoundTiming {
    snapshot_ms: f64,
    commit_ms: f64,
    matched: usize,
}

/// One round's database work, timed; the solve between is not.
async fn timed_round(
    pool: &PgPool,
    lease: &db::Lease,
    max_players: usize,
    config: &crate::config::QueueConfig,
) -> anyhow::Result<RoundTiming> {
    let started_at = chrono::Utc::now();
    let t = Instant::now();
    let snapshot = db::snapshot_pool(pool, QUEUE, max_players, config.history_matches()).await?;
    let snapshot_ms = t.elapsed().as_secs_f64() * 1000.0;
    let (core_pool, rejected) = snapshot.to_pool(started_at);
    let model = config.model.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        core::solve(
            &core_pool,
            &model,
            &SolveOptions {
                strategy: Strategy::Chunk,
                budget: Budget::Time(Duration::from_millis(200)),
                seed: 1,
                threads: Some(1),
                ..SolveOptions::default()
            },
        )
    })
    .await??;
    let now = chrono::Utc::now();
    let next_state = crate::daemon::countdown::after_round(QUEUE, config, now);
    let config_json = config.to_json();
    let mut all_rejected = rejected;
    all_rejected.extend(outcome.rejected.iter().cloned());
    let t = Instant::now();
    let report = db::commit_round(
        pool,
        &RoundRecord {
            snapshot: &snapshot,
            trigger: RoundTrigger::Manual,
            lease,
            lease_now: None,
            started_at,
            snapshot_at: started_at,
            committed_at: now,
            outcome: &outcome,
            rejected: &all_rejected,
            seed: 1,
            config_hash: &config.hash(),
            config: &config_json,
            snapshot_ms,
            solve_ms: 0.0,
            next_state: &next_state,
        },
    )
    .await?;
    Ok(RoundTiming {
        snapshot_ms,
        commit_ms: t.elapsed().as_secs_f64() * 1000.0,
        matched: report.matched,
    })
}

fn bench_config() -> crate::config::QueueConfig {
    Config::embedded_default().queues["ranked_3v3"].clone()
}

async fn bench_rounds(pool: &PgPool, args: &BenchDbArgs) -> anyhow::Result<()> {
    let population = Population::realistic();
    let config = bench_config();
    let lease = bench_lease(pool).await?;
    println!();
    println!(
        "Round database work (snapshot + commit, solve excluded), {} repetitions",
        args.repeat
    );
    println!(
        "{:>8} {:>9} {:>12} {:>12} {:>12} {:>12}",
        "players", "matched", "snapshot ms", "commit ms", "total ms", "max total ms"
    );
    for &size in &args.sizes {
        let spec = PopulationSpec {
            players: size,
            network: Network::PeerToPeer,
            id_prefix: format!("r{size}-"),
            ..PopulationSpec::default()
        };
        let players = population.generate_pool(&spec, 7).players;
        let mut timings = Vec::new();
        for _ in 0..args.repeat {
            db::enqueue::enqueue_many(pool, QUEUE, &players, chrono::Utc::now()).await?;
            timings.push(timed_round(pool, &lease, size, &config).await?);
            // Leftovers and rejected rows out of the way: the next repetition starts from
            // the same pool (and reads this repetition's matches as history).
            sqlx::query("UPDATE queue_entries SET status = 'cancelled' WHERE status = 'queued'")
                .execute(pool)
                .await?;
        }
        let n = timings.len() as f64;
        let mean = |f: fn(&RoundTiming) -> f64| timings.iter().map(f).sum::<f64>() / n;
        let max_total = timings
            .iter()
            .map(|t| t.snapshot_ms + t.commit_ms)
            .fold(0.0, f64::max);
        println!(
            "{:>8} {:>9} {:>12.1} {:>12.1} {:>12.1} {:>12.1}",
            size,
            timings[0].matched,
            mean(|t| t.snapshot_ms),
            mean(|t| t.commit_ms),
            mean(|t| t.snapshot_ms + t.commit_ms),
            max_total
        );
    }
    Ok(())
}

async fn bench_enqueue(pool: &PgPool, args: &BenchDbArgs) -> anyhow::Result<()> {
    let population = Population::realistic();
    let config = bench_config();
    let lease = bench_lease(pool).await?;
    // Start with a full pool so the first rounds are big.
    let seed_players = population
        .generate_pool(
            &PopulationSpec {
                players: args.load_round_size,
                id_prefix: "seed-".into(),
                ..PopulationSpec::default()
            },
            11,
        )
        .players;
    db::enqueue::enqueue_many(pool, QUEUE, &seed_players, chrono::Utc::now()).await?;

    let stop = Arc::new(AtomicBool::new(false));
    let rounds = {
        let (pool, stop, lease, config) =
            (pool.clone(), stop.clone(), lease.clone(), config.clone());
        let size = args.load_round_size;
        tokio::spawn(async move {
            let mut done = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                match timed_round(&pool, &lease, size, &config).await {
                    Ok(t) => done.push(t),
                    Err(e) => return Err(e),
                }
            }
            Ok(done)
        })
    };

    let started = Instant::now();
    let mut writers = Vec::new();
    for w in 0..args.connections {
        let template = population
            .generate_pool(
                &PopulationSpec {
                    players: 200,
                    id_prefix: format!("w{w}-"),
                    ..PopulationSpec::default()
                },
                100 + w as u64,
            )
            .players;
        let pool = pool.clone();
        let stop = stop.clone();
        let async_commit = args.async_commit;
        writers.push(tokio::spawn(async move {
            // One connection per writer, held for the whole run.
            let mut conn = pool.acquire().await?;
            if async_commit {
                sqlx::query("SET synchronous_commit = off")
                    .execute(&mut *conn)
                    .await?;
            }
            let mut waits = Vec::new();
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let mut p = template[i % template.len()].clone();
                p.id = format!("w{w}-{i}");
                p.party = None;
                p.enqueued_at = None;
                let t = Instant::now();
                db::enqueue::enqueue(&mut *conn, QUEUE, &p).await?;
                waits.push(t.elapsed());
                i += 1;
            }
            anyhow::Ok(waits)
        }));
    }
    tokio::time::sleep(args.enqueue_for).await;
    stop.store(true, Ordering::Relaxed);
    let mut waits = Vec::new();
    for w in writers {
        waits.extend(w.await??);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let rounds = rounds.await??;
    waits.sort();
    let pct = |p: f64| waits[((waits.len() - 1) as f64 * p) as usize].as_secs_f64() * 1000.0;
    let over_50 = waits
        .iter()
        .filter(|w| **w > Duration::from_millis(50))
        .count();
    println!();
    println!(
        "Enqueue under load: {} connections{}, {:.1} s, {} rounds of up to {} players running meanwhile",
        args.connections,
        if args.async_commit {
            " (synchronous_commit off)"
        } else {
            ""
        },
        elapsed,
        rounds.len(),
        args.load_round_size
    );
    println!(
        "{:>10} {:>12} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "enqueues", "per second", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "> 50 ms"
    );
    println!(
        "{:>10} {:>12.0} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>10}",
        waits.len(),
        waits.len() as f64 / elapsed,
        pct(0.5),
        pct(0.99),
        pct(0.999),
        pct(1.0),
        over_50
    );
    if !rounds.is_empty() {
        let max_round = rounds
            .iter()
            .map(|t| t.snapshot_ms + t.commit_ms)
            .fold(0.0, f64::max);
        let matched: usize = rounds.iter().map(|t| t.matched).sum();
        println!(
            "rounds meanwhile: {} matched in total, slowest round database work {:.1} ms",
            matched, max_round
        );
    }
    Ok(())
}
