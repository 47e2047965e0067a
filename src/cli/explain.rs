//! `matchmaker explain PLAYER`: a player's last rounds and why ([`ops::explain`]).

use crate::cli::run::DatabaseArgs;
use crate::ops::explain::{ExplainOptions, explain, render};
use crate::ops::shell;

#[derive(Debug, Clone, clap::Args)]
pub struct ExplainArgs {
    /// The database (default: the private PostgreSQL of a local `matchmaker run`).
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// The player id.
    pub player: String,
    /// How many of the player's rounds to show.
    #[arg(long, default_value_t = 10)]
    pub rounds: i64,
    /// Print JSON instead of lines.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ExplainArgs) -> anyhow::Result<()> {
    let options = ExplainOptions {
        player: args.player.clone(),
        rounds: args.rounds,
    };
    let explanation = shell::run_on_database(&(&args.database).into(), async |db| {
        explain(db, &options).await
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&explanation)?);
    } else {
        print!("{}", render(&explanation));
    }
    Ok(())
}
