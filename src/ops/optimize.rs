//! `matchmaker optimize`: one round from a JSON pool file, with a queue of the config.
//!
//! The queue is the one asked for, else the pool's `queue`, else the config's
//! `default_queue`. Budget, seed, strategy and threads default to the queue's
//! `[queues.NAME.round]` values.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::config::{self, Config};
use matchmaker_optimizer::{self as optimizer, Budget, Pool, RoundOutcome, SolveOptions, Strategy};

/// One solve of a pool file; `None` takes the queue's value.
#[derive(Debug, Clone, Default)]
pub struct OptimizeOptions {
    /// The pool file (JSON): players, optional queue, now and history.
    pub pool: PathBuf,
    /// The config file; `None`: `MATCHMAKER_CONFIG`, `./config/matchmaker.toml`, else the
    /// built-in default.
    pub config: Option<PathBuf>,
    pub queue: Option<String>,
    pub budget: Option<Duration>,
    pub seed: Option<u64>,
    pub strategy: Option<Strategy>,
    /// Exactly this many restarts instead of a time budget.
    pub restarts: Option<u64>,
    pub threads: Option<usize>,
    pub moves_per_restart: Option<u64>,
    /// Check every move's delta score against a full re-score.
    pub check_delta: bool,
}

/// Solves the pool file's round.
pub fn optimize(o: &OptimizeOptions) -> anyhow::Result<RoundOutcome> {
    let text = std::fs::read_to_string(&o.pool)
        .with_context(|| format!("reading pool file {}", o.pool.display()))?;
    let pool: Pool = serde_json::from_str(&text)
        .with_context(|| format!("parsing pool file {}", o.pool.display()))?;
    let config = match config::resolve_path(o.config.clone()) {
        Some(path) => Config::load(&path)?,
        None => Config::embedded_default(),
    };
    let name = o
        .queue
        .clone()
        .or_else(|| pool.queue.clone())
        .unwrap_or_else(|| config.default_queue.clone());
    let Some(queue) = config.queues.get(&name) else {
        let known: Vec<&String> = config.queues.keys().collect();
        bail!("unknown queue {name:?} (configured: {known:?})");
    };
    let round = &queue.round;
    let options = SolveOptions {
        strategy: o.strategy.unwrap_or(round.strategy),
        budget: match o.restarts {
            Some(n) => Budget::Restarts(n),
            None => Budget::Time(o.budget.unwrap_or(round.budget)),
        },
        seed: o.seed.or(round.seed).unwrap_or(0),
        threads: o.threads.or(round.threads),
        moves_per_restart: o.moves_per_restart,
        check_delta: o.check_delta,
    };
    Ok(optimizer::solve(&pool, &queue.model, &options)?)
}
