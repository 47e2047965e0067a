//! `matchmaker optimize`: one round from a JSON pool file, result as JSON on stdout.
//!
//! ```text
//! matchmaker optimize --pool POOL.json [--config FILE] [--queue NAME] [--budget 2s]
//!                     [--seed N] [--strategy default|awesomenauts|chunk|greedy]
//!                     [--restarts N] [--threads N]
//! ```
//! The queue is `--queue`, else the pool's `queue`, else the config's default queue.
//! Malformed input exits non-zero with a message naming the player and field;
//! `MATCHMAKER_CHECK_DELTA=1` checks every move's delta score against a full re-score.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};

use crate::core::{self, Budget, Pool, QueueModel, SolveOptions, Strategy};

#[derive(Debug, clap::Args)]
pub struct OptimizeArgs {
    /// Pool file (JSON): players, optional queue, now and history.
    #[arg(long)]
    pub pool: PathBuf,
    /// Config file (TOML) with `[queues.NAME]` tables; default: the built-in queue.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Queue name (overrides the pool's `queue`).
    #[arg(long)]
    pub queue: Option<String>,
    /// Wall-clock budget (humantime: 100ms, 2s).
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub budget: Duration,
    /// Seed for every random choice.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, default_value = "default")]
    pub strategy: Strategy,
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

pub fn run(args: OptimizeArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.pool)
        .with_context(|| format!("reading pool file {}", args.pool.display()))?;
    let pool: Pool = serde_json::from_str(&text)
        .with_context(|| format!("parsing pool file {}", args.pool.display()))?;
    let queue = args.queue.clone().or_else(|| pool.queue.clone());
    let model = match &args.config {
        Some(path) => load_queue_model(path, queue.as_deref())?,
        None => QueueModel::default(),
    };
    let options = SolveOptions {
        strategy: args.strategy,
        budget: match args.restarts {
            Some(n) => Budget::Restarts(n),
            None => Budget::Time(args.budget),
        },
        seed: args.seed,
        threads: args.threads,
        moves_per_restart: args.moves_per_restart,
        check_delta: std::env::var("MATCHMAKER_CHECK_DELTA").is_ok_and(|v| v == "1"),
    };
    let outcome = core::solve(&pool, &model, &options)?;
    println!("{}", serde_json::to_string_pretty(&outcome)?);
    Ok(())
}

/// The `[queues.NAME]` table of a config file as a queue model (its `round` sub-table
/// belongs to the daemon and is ignored here).
pub fn load_queue_model(path: &Path, queue: Option<&str>) -> anyhow::Result<QueueModel> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading config file {}", path.display()))?;
    queue_model_from_toml(&text, queue).with_context(|| format!("config file {}", path.display()))
}

pub fn queue_model_from_toml(text: &str, queue: Option<&str>) -> anyhow::Result<QueueModel> {
    let doc: toml::Table = toml::from_str(text)?;
    let Some(queues) = doc.get("queues").and_then(|q| q.as_table()) else {
        bail!("no [queues.NAME] table");
    };
    let name = match queue {
        Some(q) => q.to_string(),
        None => match doc.get("default_queue").and_then(|v| v.as_str()) {
            Some(q) => q.to_string(),
            None if queues.len() == 1 => queues.keys().next().unwrap().clone(),
            None if queues.contains_key("ranked_3v3") => "ranked_3v3".to_string(),
            None => bail!("several queues and no default_queue: pass --queue"),
        },
    };
    let Some(table) = queues.get(&name).and_then(|t| t.as_table()) else {
        let known: Vec<&String> = queues.keys().collect();
        bail!("unknown queue {name:?} (known: {known:?})");
    };
    let mut table = table.clone();
    table.remove("round");
    let model: QueueModel = toml::Value::Table(table)
        .try_into()
        .with_context(|| format!("queue {name:?}"))?;
    model
        .validate()
        .with_context(|| format!("queue {name:?}"))?;
    Ok(model)
}
