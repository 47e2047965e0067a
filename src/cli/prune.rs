//! `matchmaker prune`: delete the history past the retention horizon now, the same way
//! the daemon's queue leaders do on their timer (`db::retention`): every queue in the
//! database, in batches of short transactions, each player's last matches kept. With
//! `--dry-run` it prints what would go and changes nothing.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use super::run::{DatabaseArgs, init_logging, open_database};
use crate::config::{self, Config};
use crate::db::{self, retention};
use crate::ops::require_schema;

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Config file (default: $MATCHMAKER_CONFIG, else ./config/matchmaker.toml if present,
    /// else the built-in default): `[retention]`, each queue's history depth, and the
    /// daemon's lock and statement timeouts.
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Delete what ended longer ago than this ("30d"; at least 1h). Default: the config's
    /// `retention.horizon`.
    #[arg(long, value_parser = parse_horizon)]
    pub horizon: Option<Duration>,
    /// Rows of each kind per transaction. Default: the config's `retention.batch_size`.
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Only this queue (repeat for several). Default: every queue with history.
    #[arg(long)]
    pub queue: Vec<String>,
    /// Print what would be deleted; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

fn parse_horizon(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text).map_err(|e| e.to_string())?;
    config::check_retention_horizon(d)?;
    Ok(d)
}

pub fn run(args: PruneArgs) -> anyhow::Result<()> {
    init_logging(Default::default());
    tokio::runtime::Runtime::new()?.block_on(run_async(args))
}

async fn run_async(args: PruneArgs) -> anyhow::Result<()> {
    let config = match config::resolve_path(args.config.clone()) {
        Some(path) => Config::load(&path)?,
        None => Config::embedded_default(),
    };
    let horizon = args.horizon.or(config.retention.horizon).context(
        "no retention horizon: set [retention] horizon in the config, or pass --horizon 30d",
    )?;
    let batch_size = args.batch_size.unwrap_or(config.retention.batch_size);
    anyhow::ensure!(
        (1..=config::MAX_RETENTION_BATCH).contains(&batch_size),
        "--batch-size {batch_size}: must be between 1 and {}",
        config::MAX_RETENTION_BATCH
    );
    let (pool, server) = open_database(&args.database).await?;
    let result = async {
        require_schema(&pool).await?;
        // The daemon's bounds on every statement and lock wait.
        let limited = db::connect_limited(&pool, &config.daemon.session_limits()).await?;
        let result = prune(&limited, &config, horizon, batch_size, &args).await;
        limited.close().await;
        result
    }
    .await;
    pool.close().await;
    if let Some(server) = server {
        server.stop().await?;
    }
    result
}

async fn prune(
    db: &sqlx::PgPool,
    config: &Config,
    horizon: Duration,
    batch_size: usize,
    args: &PruneArgs,
) -> anyhow::Result<()> {
    let cutoff = retention::cutoff(db, horizon, None).await?;
    let queues = if args.queue.is_empty() {
        retention::queues_with_history(db).await?
    } else {
        for queue in &args.queue {
            crate::db::queues::check_known_queue(db, queue).await??;
        }
        args.queue.clone()
    };
    // A queue the config does not list (retired, or served by another config) keeps as
    // much as the deepest configured queue: it may come back.
    let deepest = config
        .queues
        .values()
        .map(|q| q.history_matches())
        .max()
        .unwrap_or(1);
    println!(
        "{} history that ended before {} (horizon {}), batches of {batch_size}; \
         each player's last matches per queue are kept",
        if args.dry_run {
            "Dry run (nothing is deleted): would prune"
        } else {
            "Pruning"
        },
        cutoff.format("%Y-%m-%d %H:%M:%S UTC"),
        config::format_horizon(horizon),
    );
    println!(
        "{:<20} {:>11} {:>8} {:>9} {:>14} {:>9} {:>9} {:>8}",
        "queue",
        "keep/player",
        "rounds",
        "matches",
        "match players",
        "entries",
        "backfills",
        "batches"
    );
    let mut total = retention::Pruned::default();
    for queue in &queues {
        let keep = config
            .queues
            .get(queue)
            .map(|q| q.history_matches())
            .unwrap_or(deepest);
        let mut pruner = retention::QueuePruner::new(queue, cutoff, keep, batch_size);
        let pruned = if args.dry_run {
            retention::dry_run_queue(db, &mut pruner).await?
        } else {
            retention::prune_queue(
                db,
                &mut pruner,
                crate::daemon::retention::BATCH_PAUSE,
                || async { true },
            )
            .await?
        };
        println!(
            "{:<20} {:>11} {:>8} {:>9} {:>14} {:>9} {:>9} {:>8}",
            queue,
            keep,
            pruned.rounds,
            pruned.matches,
            pruned.match_players,
            pruned.entries,
            pruned.backfill_requests,
            pruned.batches
        );
        total.add(pruned);
    }
    println!(
        "{:<20} {:>11} {:>8} {:>9} {:>14} {:>9} {:>9} {:>8}",
        "total",
        "",
        total.rounds,
        total.matches,
        total.match_players,
        total.entries,
        total.backfill_requests,
        total.batches
    );
    Ok(())
}
