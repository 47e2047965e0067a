//! `matchmaker prune`: delete the history past the retention horizon now
//! ([`crate::ops::prune`] does the work; this file parses and prints). With `--dry-run`
//! it prints what would go and changes nothing.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::run::{DatabaseArgs, init_logging};
use crate::config;
use crate::db::retention::Pruned;
use crate::ops::prune::{PruneOptions, PrunePlan, prune, prune_settings};
use crate::ops::shell;

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

impl PruneArgs {
    /// The library's options.
    pub fn options(&self) -> PruneOptions {
        PruneOptions {
            config: self.config.clone(),
            horizon: self.horizon,
            batch_size: self.batch_size,
            queues: self.queue.clone(),
            dry_run: self.dry_run,
        }
    }
}

pub fn run(args: PruneArgs) -> anyhow::Result<()> {
    init_logging(Default::default());
    // The config and the limits are refused before any database is opened.
    let settings = prune_settings(&args.options())?;
    let total = shell::run_on_database(&(&args.database).into(), async |db| {
        prune(db, &settings, print_plan, |q| {
            print_row(&q.queue, &q.keep.to_string(), &q.pruned)
        })
        .await
    })?;
    print_row("total", "", &total);
    Ok(())
}

fn print_plan(plan: &PrunePlan) {
    println!(
        "{} history that ended before {} (horizon {}), batches of {}; \
         each player's last matches per queue are kept",
        if plan.dry_run {
            "Dry run (nothing is deleted): would prune"
        } else {
            "Pruning"
        },
        plan.cutoff.format("%Y-%m-%d %H:%M:%S UTC"),
        config::format_horizon(plan.horizon),
        plan.batch_size,
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
}

fn print_row(queue: &str, keep: &str, pruned: &Pruned) {
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
}
