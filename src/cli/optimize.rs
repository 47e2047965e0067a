//! `matchmaker optimize`: one round from a JSON pool file, result as JSON on stdout.
//!
//! ```text
//! matchmaker optimize --pool POOL.json [--config FILE] [--queue NAME] [--budget 2s]
//!                     [--seed N] [--strategy default|awesomenauts|chunk|greedy]
//!                     [--restarts N] [--threads N]
//! ```
//! The queue is `--queue`, else the pool's `queue`, else the config's `default_queue`
//! (`ranked_3v3`, Awesomenauts 3v3 peer-to-peer). Budget, seed, strategy and threads
//! default to the queue's `[queues.NAME.round]` values.
//! Malformed input exits non-zero with a message naming the player and field;
//! `MATCHMAKER_CHECK_DELTA=1` checks every move's delta score against a full re-score.

use std::path::PathBuf;
use std::time::Duration;

use crate::ops::optimize::{OptimizeOptions, optimize};
use matchmaker_optimizer::Strategy;

#[derive(Debug, clap::Args)]
pub struct OptimizeArgs {
    /// Pool file (JSON): players, optional queue, now and history.
    #[arg(long)]
    pub pool: PathBuf,
    /// Config file (TOML, see `config/matchmaker.toml`); default: `MATCHMAKER_CONFIG`,
    /// `./config/matchmaker.toml`, else the built-in default config.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Queue name (overrides the pool's `queue`).
    #[arg(long)]
    pub queue: Option<String>,
    /// Wall-clock budget (humantime: 100ms, 2s); default: the queue's `round.budget`.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub budget: Option<Duration>,
    /// Seed for every random choice; default: the queue's `round.seed`, else 0.
    #[arg(long)]
    pub seed: Option<u64>,
    /// default, awesomenauts, chunk or greedy; default: the queue's `round.strategy`.
    #[arg(long)]
    pub strategy: Option<Strategy>,
    /// Run exactly this many restarts instead of a time budget (same result on any
    /// number of threads).
    #[arg(long)]
    pub restarts: Option<u64>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Steps of one annealing restart (default: the whole time budget, or 2,000 per
    /// unit with --restarts).
    #[arg(long)]
    pub moves_per_restart: Option<u64>,
}

impl OptimizeArgs {
    /// The library's options; `MATCHMAKER_CHECK_DELTA=1` turns on the delta check.
    pub fn options(&self) -> OptimizeOptions {
        OptimizeOptions {
            pool: self.pool.clone(),
            config: self.config.clone(),
            queue: self.queue.clone(),
            budget: self.budget,
            seed: self.seed,
            strategy: self.strategy,
            restarts: self.restarts,
            threads: self.threads,
            moves_per_restart: self.moves_per_restart,
            check_delta: std::env::var("MATCHMAKER_CHECK_DELTA").is_ok_and(|v| v == "1"),
        }
    }
}

pub fn run(args: OptimizeArgs) -> anyhow::Result<()> {
    let outcome = optimize(&args.options())?;
    println!("{}", serde_json::to_string_pretty(&outcome)?);
    Ok(())
}
