//! `matchmaker check-config`: load and validate a config file as `run` would
//! ([`crate::ops::check_config`]), and print one line naming its queues. Touches no
//! database; exits non-zero on a file `run` would refuse, with the same message.

use std::path::PathBuf;

use clap::Args;

use crate::ops::check_config::load_config;

#[derive(Debug, Args)]
pub struct CheckConfigArgs {
    /// Config file (default: $MATCHMAKER_CONFIG, else ./config/matchmaker.toml if present,
    /// else the built-in default): the file `run` would load.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

pub fn run(args: CheckConfigArgs) -> anyhow::Result<()> {
    let checked = load_config(args.config)?;
    println!("{}", checked.summary());
    Ok(())
}
