//! `matchmaker explain PLAYER`: a player's last rounds and why ([`ops::explain`]).

use anyhow::Context;

use crate::cli::run::{DatabaseArgs, open_database};
use crate::ops::explain::{explain_player, render};
use crate::ops::require_schema;

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
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let (db, server) = open_database(&args.database).await?;
        let result = async {
            crate::ops::access::require_ops_login(&db, "explain").await?;
            require_schema(&db).await?;
            let e = explain_player(&db, &args.player, args.rounds).await?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&e)?);
            } else {
                print!("{}", render(&e));
            }
            anyhow::Ok(())
        }
        .await;
        db.close().await;
        if let Some(server) = server {
            server.stop().await?;
        }
        result
    })
}
