//! `matchmaker optimize`: one round from a JSON pool file, result as JSON on stdout.

use std::path::PathBuf;

use anyhow::Context;

use crate::core::{self, Pool, QueueModel, SolveOptions};

#[derive(Debug, clap::Args)]
pub struct OptimizeArgs {
    /// Pool file (JSON): players, optional queue, now and history.
    #[arg(long)]
    pub pool: PathBuf,
}

pub fn run(args: OptimizeArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.pool)
        .with_context(|| format!("reading pool file {}", args.pool.display()))?;
    let pool: Pool = serde_json::from_str(&text)
        .with_context(|| format!("parsing pool file {}", args.pool.display()))?;
    let outcome = core::solve(&pool, &QueueModel::default(), &SolveOptions::default())?;
    println!("{}", serde_json::to_string_pretty(&outcome)?);
    Ok(())
}
