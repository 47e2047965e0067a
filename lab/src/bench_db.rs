//! `matchmaker-lab bench-db`: the database side of a round, measured.
//!
//! 1. **Round database work** (snapshot + commit; the solve is excluded): for each pool
//!    size, the same players are enqueued again before every repetition, so from the
//!    second repetition on the snapshot also reads their match history, as in production.
//! 2. **Enqueue under load**: N connections enqueue single players as fast as they can
//!    while rounds of up to `--load-round-size` players run back to back on the same
//!    queue; the rate and the worst single enqueue are reported (an enqueue must never
//!    wait on a round's locks). The same connections alternate, in slices of 500 ms,
//!    between the client contract's `enqueue()` and the raw single-row INSERT clients ran
//!    before it, with the same players, and the ratio of the two rates is printed: the
//!    price of the front door's checks, measured under the same host noise.
//!
//! With `--history-rows N`, the round measurement runs side by side (alternating
//! repetitions, A B B A) on two scratch databases: one with an empty history and one
//! filled beforehand with N rows of `match_players` history (with their matches, rounds
//! and matched entries), in which the measured pools' players have past matches among
//! many other players'. The ratio of the two says what a long history costs a round.
//!
//! Runs in a scratch database (created and dropped) on `--database-url`, or on a
//! temporary private PostgreSQL when no URL is given. Absolute figures depend on the
//! machine and the server's settings (fsync, shared_buffers); the output says which.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};

use crate::sim::population::{Population, PopulationSpec};
use matchmaker::config::Config;
use matchmaker::db::{self, RoundRecord, RoundTrigger, local_pg::LocalPostgres};
use matchmaker::ops::init_logging;
use matchmaker::ops::shell::{self, Signals};
use matchmaker_optimizer::{self as optimizer, Budget, Network, SolveOptions, Strategy};

#[derive(Debug, Clone)]
pub struct BenchDbOptions {
    /// PostgreSQL server; a scratch database is created on it and dropped afterwards.
    /// Without it, a temporary private PostgreSQL is started.
    pub database_url: Option<String>,
    /// Pool sizes of the round measurement.
    pub sizes: Vec<usize>,
    /// Repetitions per pool size.
    pub repeat: usize,
    /// Concurrent enqueue connections.
    pub connections: usize,
    /// Duration of the enqueue measurement (both paths together: each gets half; at
    /// least 1s, two slices of 500 ms).
    pub enqueue_for: Duration,
    /// Enqueue with `SET synchronous_commit = off` (a client's choice: the commit does
    /// not wait for the WAL flush; a crash may lose the last enqueues, which the client
    /// sees as "not queued" and repeats). Shows what the disk's flush costs.
    pub async_commit: bool,
    /// Round size of the rounds running during the enqueue measurement.
    pub load_round_size: usize,
    /// Also measure the rounds against a second scratch database holding this many
    /// `match_players` history rows (e.g. 10000000), filled by INSERT ... SELECT
    /// generate_series before measuring, side by side with the empty history.
    pub history_rows: u64,
    /// Skip the enqueue measurement (the round measurement only).
    pub rounds_only: bool,
    /// Keep the history database under this name, and reuse it when it already holds
    /// `--history-rows` rows: a 10-million-row fill takes minutes, so comparing an index
    /// or a query before and after needs it once. It is migrated like any database.
    pub keep_history: Option<String>,
}

const QUEUE: &str = "bench";

pub fn run(args: BenchDbOptions) -> anyhow::Result<()> {
    // Both paths need a slice each (A B B A), or one of them is never measured; refused
    // before a scratch database is made and the rounds are run.
    anyhow::ensure!(
        args.rounds_only || args.enqueue_for >= SLICE * 2,
        "--enqueue-for {}: at least {} (the two enqueue paths alternate in slices of {} ms)",
        humantime::format_duration(args.enqueue_for),
        humantime::format_duration(SLICE * 2),
        SLICE.as_millis()
    );
    init_logging(false);
    // A stop signal drops the measurement, and with it the scratch databases' server.
    shell::run(Signals::All, async |stop| {
        stop.cancel(run_async(args)).await
    })
}

async fn run_async(args: BenchDbOptions) -> anyhow::Result<()> {
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
    let history_name = match &args.keep_history {
        Some(kept) => {
            anyhow::ensure!(
                kept.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                    && !kept.is_empty(),
                "--keep-history {kept:?}: use lowercase letters, digits and _"
            );
            kept.clone()
        }
        None => format!("{name}_history"),
    };
    let history_exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)")
            .bind(&history_name)
            .fetch_one(&mut admin)
            .await?;
    let history_pool = if args.history_rows > 0 {
        if !history_exists {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "CREATE DATABASE {history_name}"
            )))
            .execute(&mut admin)
            .await?;
        }
        Some(
            PgPoolOptions::new()
                .max_connections(4)
                .connect_with(server_options.clone().database(&history_name))
                .await?,
        )
    } else {
        None
    };

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
        let mut databases = vec![(0, pool.clone())];
        if let Some(history) = &history_pool {
            if history_exists {
                check_kept_schema(history, &history_name).await?;
            }
            db::migrate(history).await?;
            let held: i64 = sqlx::query_scalar("SELECT count(*) FROM match_players")
                .fetch_one(history)
                .await?;
            if held as u64 >= args.history_rows && args.keep_history.is_some() {
                println!("history: reusing {history_name}, {held} match_players rows");
                // As the empty database starts: the last runs' dead rows gone from the
                // tables and from every index (INDEX_CLEANUP ON: a plain VACUUM skips
                // the indexes when few pages of a large table hold dead rows, and the
                // queued-only indexes would keep the last runs' entries), the
                // statistics current (a migration may have just added a table).
                sqlx::query("VACUUM (ANALYZE, INDEX_CLEANUP ON)")
                    .execute(history)
                    .await
                    .context("VACUUM ANALYZE the kept history")?;
            } else {
                anyhow::ensure!(
                    held == 0,
                    "{history_name} holds {held} history rows, fewer than --history-rows"
                );
                fill_history(history, args.history_rows, &args.sizes).await?;
            }
            databases.push((args.history_rows, history.clone()));
        }
        if history_pool.is_some() {
            // Both databases start measuring just after a checkpoint (the server's, so
            // one for both): the first change of each page after it writes the whole
            // page to the WAL, as in the minutes after any checkpoint of a live server,
            // and neither database is measured with the other's writes still pending.
            // Needs a superuser (or pg_checkpoint); without it the run goes on.
            if let Err(e) = sqlx::query("CHECKPOINT").execute(&mut admin).await {
                println!("(no CHECKPOINT before measuring: {e})");
            }
        }
        bench_rounds(&databases, &args).await?;
        if args.rounds_only {
            return Ok(());
        }
        bench_enqueue(&pool, &args).await
    }
    .await;

    pool.close().await;
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {name}")))
        .execute(&mut admin)
        .await?;
    if let Some(history) = history_pool {
        history.close().await;
        if args.keep_history.is_none() {
            sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {history_name}")))
                .execute(&mut admin)
                .await?;
        }
    }
    admin.close().await?;
    if let Some(server) = server {
        server.stop().await?;
    }
    result
}

/// A kept history database must not hold migrations this binary does not know: another
/// build's schema (an index dropped, a table added) would be measured as this one's. An
/// older schema is fine: `migrate` brings it up to date.
async fn check_kept_schema(history: &PgPool, name: &str) -> anyhow::Result<()> {
    let known = db::MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
    // A database never migrated has no such table: nothing to check.
    let applied: Option<i64> = sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations")
        .fetch_one(history)
        .await
        .unwrap_or(None);
    if let Some(applied) = applied {
        anyhow::ensure!(
            applied <= known,
            "{name} holds migration {applied}, newer than this binary's last ({known}): its \
             schema is another build's; keep the history under another name"
        );
    }
    Ok(())
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
    /// The commit transaction alone.
    commit_ms: f64,
    /// The replay record before it (left-over players explained, the pool compressed):
    /// CPU work of the round between solve and commit, not database work.
    replay_ms: f64,
    matched: usize,
}

/// How a measured round solves its pool (the solve is never timed): the default strategy
/// on a fixed budget (one restart of 100,000 moves), so the matches a round commits are
/// the daemon's kind, with a host in every peer-to-peer match. The chunk baseline, used
/// before the host rule, now leaves 40% of these pools unmatched (its matches are cut by
/// skill alone): the load's rounds would keep thousands of players queued and explain
/// them again every round, which is neither the daemon's commit nor its load.
fn round_solve_options() -> SolveOptions {
    SolveOptions {
        strategy: Strategy::Default,
        budget: Budget::Restarts(1),
        moves_per_restart: Some(100_000),
        seed: 1,
        threads: Some(1),
        ..SolveOptions::default()
    }
}

/// One round's database work, timed; the solve between is not.
async fn timed_round(
    pool: &PgPool,
    lease: &db::Lease,
    max_players: usize,
    config: &matchmaker::config::QueueConfig,
) -> anyhow::Result<RoundTiming> {
    let started_at = chrono::Utc::now();
    let t = Instant::now();
    let snapshot = db::snapshot_pool(pool, QUEUE, max_players, config.history_matches()).await?;
    let snapshot_ms = t.elapsed().as_secs_f64() * 1000.0;
    let (core_pool, rejected) = snapshot.to_pool(started_at);
    let model = config.model.clone();
    let options = round_solve_options();
    let (outcome, core_pool) = {
        let options = options.clone();
        tokio::task::spawn_blocking(move || {
            optimizer::solve(&core_pool, &model, &options).map(|o| (o, core_pool))
        })
        .await??
    };
    let now = chrono::Utc::now();
    let next_state = matchmaker::daemon::countdown::after_round(QUEUE, config, now);
    let config_json = config.to_json();
    let mut all_rejected = rejected;
    all_rejected.extend(outcome.rejected.iter().cloned());
    // The replay record (left-overs explained, the pool compressed) is round work the
    // daemon does between the solve and the commit: timed apart from the commit.
    // Off the runtime's threads, as the daemon does it: explaining thousands of left-over
    // players takes seconds, and on a runtime thread it stalls the enqueue writers.
    let t = Instant::now();
    let (replay, outcome) = {
        let config = config.clone();
        tokio::task::spawn_blocking(move || {
            let replay = matchmaker::daemon::round::replay_record(
                QUEUE, &config, &options, &core_pool, &outcome,
            );
            (replay, outcome)
        })
        .await?
    };
    let replay_ms = t.elapsed().as_secs_f64() * 1000.0;
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
            replay: Some(&replay),
            backfill: &matchmaker::db::BackfillRecord::default(),
            keep_countdown: false,
            history_matches: config.history_matches(),
            ready_timeout: None,
            win_model: matchmaker::daemon::round::round_config(config).win_model,
            servers_ttl: None,
            unplaced_matches: 0,
        },
    )
    .await?;
    Ok(RoundTiming {
        snapshot_ms,
        commit_ms: t.elapsed().as_secs_f64() * 1000.0,
        replay_ms,
        matched: report.matched,
    })
}

fn bench_config() -> matchmaker::config::QueueConfig {
    Config::embedded_default().queues["ranked_3v3"].clone()
}

/// The players of the round measurement's pool of `size`.
fn round_players(population: &Population, size: usize) -> Vec<matchmaker_optimizer::Player> {
    let spec = PopulationSpec {
        players: size,
        network: Network::PeerToPeer,
        id_prefix: format!("r{size}-"),
        ..PopulationSpec::default()
    };
    population.generate_pool(&spec, 7).players
}

/// Matches per round of the synthetic history.
const HISTORY_MATCHES_PER_ROUND: u64 = 1000;
/// Past matches per player of the synthetic history, on average.
const HISTORY_MATCHES_PER_PLAYER: u64 = 50;

/// `rows` rows of match history in queue `bench`: matches of 6 over the last 60 days,
/// each with its round and its players' matched entries, as the daemon leaves them. Among
/// the players are those of the round measurement's pools, so their rounds read real
/// history. One INSERT ... SELECT generate_series per table, the indexes that are no
/// constraint built afterwards, `recent_matches` from the rows; then VACUUM ANALYZE, as
/// autovacuum would have done on a database that grew this large.
async fn fill_history(pool: &PgPool, rows: u64, sizes: &[usize]) -> anyhow::Result<()> {
    let started = Instant::now();
    let population = Population::realistic();
    let pooled: Vec<String> = sizes
        .iter()
        .flat_map(|&size| round_players(&population, size))
        .map(|p| p.id)
        .collect();
    let per_match = bench_config().model.players_per_match() as u64;
    let matches = rows.div_ceil(per_match);
    let rows = matches * per_match;
    let rounds = matches.div_ceil(HISTORY_MATCHES_PER_ROUND);
    // Player k of match m is player (m * per_match + k) * 7919 mod P: distinct within a
    // match while P is not a multiple of the prime 7919, and each player meets many
    // different others.
    let mut players = (rows / HISTORY_MATCHES_PER_PLAYER)
        .max(pooled.len() as u64 + 1)
        .max(per_match * 2);
    if players.is_multiple_of(7919) {
        players += 1;
    }
    let mut conn = pool.acquire().await?;
    sqlx::query("SET synchronous_commit = off")
        .execute(&mut *conn)
        .await?;
    // The rows are consistent by construction: a superuser skips the per-row foreign-key
    // checks (and the enqueue NOTIFY); anyone else pays for them.
    let _ = sqlx::query("SET session_replication_role = replica")
        .execute(&mut *conn)
        .await;
    sqlx::query("SET maintenance_work_mem = '1GB'")
        .execute(&mut *conn)
        .await?;
    let deferred = drop_deferred_indexes(&mut conn).await?;
    let shape = HistoryShape {
        rows,
        matches,
        rounds,
        per_match,
        players,
    };
    insert_history(&mut conn, &shape, &pooled).await?;
    restore_after_history(&mut conn, &deferred).await?;
    let size: String =
        sqlx::query_scalar("SELECT pg_size_pretty(pg_database_size(current_database()))")
            .fetch_one(&mut *conn)
            .await?;
    println!(
        "history: {rows} match_players rows ({matches} matches in {rounds} rounds, {players} \
         players, each pooled player in about {} past matches), database {size}, filled in {:.0} s",
        rows / players,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// How the history is laid out: `rows` match_players rows in `matches` matches of
/// `per_match` players, `rounds` rounds, over `players` distinct players.
#[derive(Clone, Copy)]
struct HistoryShape {
    rows: u64,
    matches: u64,
    rounds: u64,
    per_match: u64,
    players: u64,
}

/// Drop the indexes of queue_entries and match_players that back no constraint; returns
/// their names and definitions, to build them again after the fill.
async fn drop_deferred_indexes(conn: &mut PgConnection) -> anyhow::Result<Vec<(String, String)>> {
    // The indexes that are no constraint are built after the rows are in, each in one
    // sort, instead of taking ten million inserts at random places (most of the fill's
    // time, and gigabytes of WAL). Same definitions, from the catalog.
    let deferred: Vec<(String, String)> = sqlx::query_as(
        "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
           FROM pg_index i
          WHERE i.indrelid IN ('queue_entries'::regclass, 'match_players'::regclass)
            AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conindid = i.indexrelid)",
    )
    .fetch_all(&mut *conn)
    .await?;
    for (index, _) in &deferred {
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP INDEX {index}")))
            .execute(&mut *conn)
            .await?;
    }
    Ok(deferred)
}

/// The rounds, matches, entries and match_players rows of the history, each in one
/// INSERT ... SELECT; the pooled players (`pooled`) are among the history's players.
async fn insert_history(
    conn: &mut PgConnection,
    shape: &HistoryShape,
    pooled: &[String],
) -> anyhow::Result<()> {
    let HistoryShape {
        rows,
        matches,
        rounds,
        per_match,
        players,
    } = *shape;
    let first_round: i64 = sqlx::query_scalar(
        "INSERT INTO rounds (queue, trigger, leader, term, started_at, snapshot_at,
                             committed_at, pool_size, match_count, matched, left_over,
                             rejected, snapshot_ms, solve_ms, commit_ms, seed, config_hash,
                             config)
         SELECT 'bench', 'schedule', 'bench-history', 1, t, t, t, $2 * $3, $2, $2 * $3, 0, 0,
                0, 0, 0, 1, 'history', '{}'
           FROM generate_series(0, $1 - 1) r,
                LATERAL (SELECT now() - interval '60 days'
                                + (interval '60 days' * r / $1) AS t) at
         ORDER BY r
         RETURNING round_id",
    )
    .bind(rounds as i64)
    .bind(HISTORY_MATCHES_PER_ROUND as i64)
    .bind(per_match as i64)
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .min()
    .unwrap_or(1);
    sqlx::query(
        "INSERT INTO matches (match_id, round_id, queue, created_at, score)
         OVERRIDING SYSTEM VALUE
         SELECT m + 1, r.round_id, 'bench', r.committed_at, 0.8
           FROM generate_series(0, $1 - 1) m
           JOIN rounds r ON r.round_id = $2 + m / $3",
    )
    .bind(matches as i64)
    .bind(first_round)
    .bind(HISTORY_MATCHES_PER_ROUND as i64)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO queue_entries (entry_id, queue, player_id, skill, enqueued_at, status,
                                    round_id, match_id, team, updated_at, expires_at)
         OVERRIDING SYSTEM VALUE
         SELECT k + 1, 'bench', p.player_id, 1500, m.created_at - interval '1 minute',
                'matched', m.round_id, m.match_id, (k % $2) / ($2 / 2), m.created_at,
                m.created_at
           FROM generate_series(0, $1 - 1) k
           JOIN matches m ON m.match_id = k / $2 + 1
           CROSS JOIN LATERAL (
                SELECT coalesce(($4::text[])[(k * 7919) % $3 + 1], 'h' || ((k * 7919) % $3))
                       AS player_id) p",
    )
    .bind(rows as i64)
    .bind(per_match as i64)
    .bind(players as i64)
    .bind(pooled)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO match_players (match_id, entry_id, queue, player_id, team, skill,
                                    enqueued_at, matched_at)
         SELECT match_id, entry_id, queue, player_id, team, skill, enqueued_at, updated_at
           FROM queue_entries WHERE status = 'matched'",
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Build the dropped indexes again, derive each player's recent matches, move the
/// sequences past the rows, and analyze.
async fn restore_after_history(
    conn: &mut PgConnection,
    deferred: &[(String, String)],
) -> anyhow::Result<()> {
    for (_, definition) in deferred {
        sqlx::query(sqlx::AssertSqlSafe(definition.clone()))
            .execute(&mut *conn)
            .await?;
    }
    // Each player's last matches, as the commit keeps them.
    sqlx::query(
        "INSERT INTO recent_matches (queue, player_id, match_ids)
         SELECT queue, player_id, (array_agg(match_id ORDER BY match_id))
                                  [greatest(count(*)::int - $1 + 1, 1):]
           FROM match_players
          GROUP BY queue, player_id",
    )
    .bind(bench_config().history_matches() as i32)
    .execute(&mut *conn)
    .await?;
    for seq in [("matches", "match_id"), ("queue_entries", "entry_id")] {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT setval(pg_get_serial_sequence('{0}', '{1}'), (SELECT max({1}) FROM {0}))",
            seq.0, seq.1
        )))
        .execute(&mut *conn)
        .await?;
    }
    sqlx::query("RESET session_replication_role")
        .execute(&mut *conn)
        .await?;
    sqlx::query("VACUUM ANALYZE rounds, matches, queue_entries, match_players, recent_matches")
        .execute(&mut *conn)
        .await?;
    Ok(())
}

async fn bench_rounds(databases: &[(u64, PgPool)], args: &BenchDbOptions) -> anyhow::Result<()> {
    let population = Population::realistic();
    let config = bench_config();
    let mut leases = Vec::new();
    for (_, pool) in databases {
        leases.push(bench_lease(pool).await?);
    }
    let side_by_side = databases.len() > 1;
    println!();
    println!(
        "Round database work (snapshot + commit; the solve and the replay record between excluded), {} repetitions{}",
        args.repeat,
        if side_by_side {
            " on each database, alternating (A B B A)"
        } else {
            ""
        }
    );
    println!(
        "{:>8} {:>13} {:>9} {:>12} {:>12} {:>12} {:>12} {:>10}",
        "players",
        "history rows",
        "matched",
        "snapshot ms",
        "commit ms",
        "total ms",
        "max total ms",
        "replay ms"
    );
    for &size in &args.sizes {
        let players = round_players(&population, size);
        let mut timings: Vec<Vec<RoundTiming>> = databases.iter().map(|_| Vec::new()).collect();
        for rep in 0..args.repeat {
            let mut order: Vec<usize> = (0..databases.len()).collect();
            if rep % 2 == 1 {
                order.reverse();
            }
            for d in order {
                let pool = &databases[d].1;
                db::enqueue::enqueue_many(pool, QUEUE, &players, chrono::Utc::now()).await?;
                timings[d].push(timed_round(pool, &leases[d], size, &config).await?);
                // Leftovers and rejected rows out of the way: the next repetition starts
                // from the same pool (and reads this repetition's matches as history).
                sqlx::query(
                    "UPDATE queue_entries SET status = 'cancelled' WHERE status = 'queued'",
                )
                .execute(pool)
                .await?;
            }
        }
        let mut totals = Vec::new();
        for ((history, _), timings) in databases.iter().zip(&timings) {
            let n = timings.len() as f64;
            let mean = |f: fn(&RoundTiming) -> f64| timings.iter().map(f).sum::<f64>() / n;
            let max_total = timings
                .iter()
                .map(|t| t.snapshot_ms + t.commit_ms)
                .fold(0.0, f64::max);
            totals.push(mean(|t| t.snapshot_ms + t.commit_ms));
            println!(
                "{:>8} {:>13} {:>9} {:>12.1} {:>12.1} {:>12.1} {:>12.1} {:>10.1}",
                size,
                history,
                timings[0].matched,
                mean(|t| t.snapshot_ms),
                mean(|t| t.commit_ms),
                mean(|t| t.snapshot_ms + t.commit_ms),
                max_total,
                mean(|t| t.replay_ms)
            );
        }
        if side_by_side {
            println!(
                "{:>8} history {} / empty: {:.1} / {:.1} ms = {:.3} (target <= 1.2)",
                size,
                databases[1].0,
                totals[1],
                totals[0],
                totals[1] / totals[0]
            );
        }
    }
    Ok(())
}

/// The two enqueue paths measured side by side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EnqueuePath {
    /// `SELECT enqueue(...)`: the client contract.
    Function,
    /// The single-row INSERT clients ran before the contract (the raw path of commit
    /// 6043e12's `db::enqueue::enqueue`), for the comparison only.
    RawInsert,
}

impl EnqueuePath {
    const BOTH: [EnqueuePath; 2] = [EnqueuePath::Function, EnqueuePath::RawInsert];

    fn index(self) -> usize {
        self as usize
    }

    fn label(self) -> &'static str {
        match self {
            EnqueuePath::Function => "enqueue()",
            EnqueuePath::RawInsert => "raw INSERT",
        }
    }
}

/// Slices of the enqueue measurement, alternating the path in the order A B B A, so that
/// a drift of the host's speed hits both paths alike.
const SLICE: Duration = Duration::from_millis(500);
const SLICE_ORDER: [EnqueuePath; 4] = [
    EnqueuePath::Function,
    EnqueuePath::RawInsert,
    EnqueuePath::RawInsert,
    EnqueuePath::Function,
];

/// One enqueue of `p` through `path`.
async fn enqueue_once(
    conn: &mut sqlx::PgConnection,
    path: EnqueuePath,
    p: &matchmaker_optimizer::Player,
) -> anyhow::Result<i64> {
    Ok(match path {
        EnqueuePath::Function => db::enqueue::enqueue(&mut *conn, QUEUE, p).await?,
        EnqueuePath::RawInsert => {
            sqlx::query_scalar(
                "INSERT INTO queue_entries (queue, player_id, party_id, skill, skill_sigma,
                                            latencies, peer_pings, roles, side, enqueued_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, coalesce($10, now()))
                 RETURNING entry_id",
            )
            .bind(QUEUE)
            .bind(&p.id)
            .bind(&p.party)
            .bind(p.skill)
            .bind(p.skill_sigma)
            .bind(sqlx::types::Json(&p.latencies))
            .bind(sqlx::types::Json(&p.peer_pings))
            .bind(&p.roles)
            .bind(p.side)
            .bind(p.enqueued_at)
            .fetch_one(&mut *conn)
            .await?
        }
    })
}

async fn bench_enqueue(pool: &PgPool, args: &BenchDbOptions) -> anyhow::Result<()> {
    let population = Population::realistic();
    let config = bench_config();
    let lease = bench_lease(pool).await?;
    // What the daemon does when it takes a queue: enqueue() accepts published queues only.
    db::queues::publish_queue(pool, QUEUE, &config, "bench").await?;
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
    // The path every writer uses right now (an EnqueuePath index).
    let path_now = Arc::new(AtomicUsize::new(SLICE_ORDER[0].index()));
    // Writers warm up (each statement prepared on its connection), then all start at once.
    let start = Arc::new(tokio::sync::Barrier::new(args.connections + 1));

    let mut writers = Vec::new();
    for w in 0..args.connections {
        let shared = (stop.clone(), path_now.clone(), start.clone());
        writers.push(spawn_writer(
            pool,
            &population,
            w,
            args.async_commit,
            shared,
        ));
    }

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

    // The slices: each path's time is the sum of its slices; an enqueue counts for the
    // path it started with.
    start.wait().await;
    let started = Instant::now();
    let mut path_time = [Duration::ZERO; 2];
    let mut slice = 0;
    while started.elapsed() < args.enqueue_for {
        let path = SLICE_ORDER[slice % SLICE_ORDER.len()];
        let t = Instant::now();
        path_now.store(path.index(), Ordering::Relaxed);
        tokio::time::sleep(SLICE.min(args.enqueue_for.saturating_sub(started.elapsed()))).await;
        path_time[path.index()] += t.elapsed();
        slice += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    let mut waits: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    for w in writers {
        let [function, raw] = w.await??;
        waits[0].extend(function);
        waits[1].extend(raw);
    }
    let rounds = rounds.await??;

    let enqueued = EnqueueRun {
        elapsed,
        slices: slice,
        path_time,
        waits,
    };
    print_enqueue_run(args, enqueued, &rounds)?;
    server_time_per_call(pool, &population).await
}

/// What the writers share with the clock of the slices: the stop flag, the path in use
/// now (an `EnqueuePath` index) and the barrier they all start at.
type WriterShared = (Arc<AtomicBool>, Arc<AtomicUsize>, Arc<tokio::sync::Barrier>);

/// One writer on a connection of its own: warm up both paths, wait for the start, then
/// enqueue through the path in use until the stop; returns the waits per path.
fn spawn_writer(
    pool: &PgPool,
    population: &Population,
    w: usize,
    async_commit: bool,
    shared: WriterShared,
) -> tokio::task::JoinHandle<anyhow::Result<[Vec<Duration>; 2]>> {
    // The same players for both paths: each writer cycles through its 200.
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
    let (stop, path_now, start) = shared;
    let pool = pool.clone();
    tokio::spawn(async move {
        // One connection per writer, held for the whole run.
        let mut conn = pool.acquire().await?;
        if async_commit {
            sqlx::query("SET synchronous_commit = off")
                .execute(&mut *conn)
                .await?;
        }
        let mut i = 0usize;
        let next = |i: &mut usize| {
            let mut p = template[*i % template.len()].clone();
            p.id = format!("w{w}-{i}");
            p.party = None;
            p.enqueued_at = None;
            *i += 1;
            p
        };
        for path in EnqueuePath::BOTH {
            for _ in 0..5 {
                enqueue_once(&mut conn, path, &next(&mut i)).await?;
            }
        }
        start.wait().await;
        let mut waits: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
        while !stop.load(Ordering::Relaxed) {
            let path = EnqueuePath::BOTH[path_now.load(Ordering::Relaxed)];
            let p = next(&mut i);
            let t = Instant::now();
            enqueue_once(&mut conn, path, &p).await?;
            waits[path.index()].push(t.elapsed());
        }
        anyhow::Ok(waits)
    })
}

/// What the enqueue measurement saw: its length, the slices, each path's time and the
/// waits of its enqueues.
struct EnqueueRun {
    elapsed: f64,
    slices: usize,
    path_time: [Duration; 2],
    waits: [Vec<Duration>; 2],
}

/// The table of the enqueue measurement and the rounds that ran meanwhile.
fn print_enqueue_run(
    args: &BenchDbOptions,
    run: EnqueueRun,
    rounds: &[RoundTiming],
) -> anyhow::Result<()> {
    let EnqueueRun {
        elapsed,
        slices: slice,
        path_time,
        mut waits,
    } = run;
    println!();
    println!(
        "Enqueue under load: {} connections{}, {:.1} s in {} slices of {} ms alternating \
         enqueue() and the raw INSERT (A B B A), {} rounds of up to {} players running meanwhile",
        args.connections,
        if args.async_commit {
            " (synchronous_commit off)"
        } else {
            ""
        },
        elapsed,
        slice,
        SLICE.as_millis(),
        rounds.len(),
        args.load_round_size
    );
    println!(
        "{:<11} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "path", "enqueues", "per second", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "> 50 ms"
    );
    let mut rates = [0.0; 2];
    for path in EnqueuePath::BOTH {
        let waits = &mut waits[path.index()];
        anyhow::ensure!(!waits.is_empty(), "no enqueue through {}", path.label());
        waits.sort();
        let pct = |p: f64| waits[((waits.len() - 1) as f64 * p) as usize].as_secs_f64() * 1000.0;
        let over_50 = waits
            .iter()
            .filter(|w| **w > Duration::from_millis(50))
            .count();
        rates[path.index()] = waits.len() as f64 / path_time[path.index()].as_secs_f64();
        println!(
            "{:<11} {:>9} {:>10.0} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>8}",
            path.label(),
            waits.len(),
            rates[path.index()],
            pct(0.5),
            pct(0.99),
            pct(0.999),
            pct(1.0),
            over_50
        );
    }
    println!(
        "enqueue() / raw INSERT: {:.0} / {:.0} = {:.3} (target >= 0.9)",
        rates[0],
        rates[1],
        rates[0] / rates[1]
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

/// Calls per path and repetition of the server-time measurement.
const SERVER_CALLS: usize = 1000;
/// Repetitions of the server-time measurement, alternating the paths.
const SERVER_REPS: usize = 9;

/// Server time per enqueue, without the client, the network, the commit or rounds running
/// meanwhile: `SERVER_CALLS` players enqueued one statement each in a PL/pgSQL loop,
/// inside a transaction that is rolled back, each path `SERVER_REPS` times in turn; the
/// median per call. The throughput above is what a client sees, and on a busy 2-core host
/// it moves by about 0.1 from run to run; this shows what `enqueue()` itself adds, within a
/// few percent.
async fn server_time_per_call(pool: &PgPool, population: &Population) -> anyhow::Result<()> {
    let players = population
        .generate_pool(
            &PopulationSpec {
                players: SERVER_CALLS,
                id_prefix: "srv-".into(),
                ..PopulationSpec::default()
            },
            99,
        )
        .players;
    let members: Vec<serde_json::Value> = players.iter().map(db::enqueue::member_json).collect();
    let mut conn = pool.acquire().await?;
    sqlx::query(
        "CREATE TEMP TABLE bench_players AS
         SELECT * FROM jsonb_to_recordset($1)
                    AS m(player_id text, skill float8, skill_sigma float8, latencies jsonb,
                         peer_pings jsonb, roles text[], side float8)",
    )
    .bind(sqlx::types::Json(&members))
    .execute(&mut *conn)
    .await?;
    let call = |path: EnqueuePath| match path {
        EnqueuePath::Function => format!(
            "id := enqueue(queue => '{QUEUE}', player_id => r.player_id, skill => r.skill,
                           latencies => r.latencies, peer_pings => r.peer_pings,
                           roles => r.roles, side => r.side, skill_sigma => r.skill_sigma);"
        ),
        EnqueuePath::RawInsert => format!(
            "INSERT INTO queue_entries (queue, player_id, party_id, skill, skill_sigma,
                                        latencies, peer_pings, roles, side, enqueued_at)
             VALUES ('{QUEUE}', r.player_id, NULL, r.skill, r.skill_sigma, r.latencies,
                     r.peer_pings, r.roles, r.side, now())
             RETURNING entry_id INTO id;"
        ),
    };
    let mut per_call: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for rep in 0..SERVER_REPS {
        // A B, then B A: a drift of the host's speed hits both paths alike.
        let order = if rep % 2 == 0 {
            EnqueuePath::BOTH
        } else {
            [EnqueuePath::RawInsert, EnqueuePath::Function]
        };
        for path in order {
            let body = format!(
                "DO $$ DECLARE r record; id bigint; BEGIN
                     FOR r IN SELECT * FROM bench_players LOOP {} END LOOP;
                 END $$",
                call(path)
            );
            let mut tx = conn.begin().await?;
            let t = Instant::now();
            // The body is ours: QUEUE is a constant, the players come from a table.
            sqlx::raw_sql(sqlx::AssertSqlSafe(body))
                .execute(&mut *tx)
                .await?;
            per_call[path.index()].push(t.elapsed().as_secs_f64() * 1e6 / SERVER_CALLS as f64);
            tx.rollback().await?;
        }
    }
    let [function, raw] = per_call.map(|mut v| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    });
    println!(
        "server time per enqueue ({SERVER_CALLS} calls in one transaction, rolled back, \
         median of {SERVER_REPS}): enqueue() {function:.0} us, raw INSERT {raw:.0} us, \
         raw / enqueue() = {:.3}",
        raw / function
    );
    Ok(())
}
