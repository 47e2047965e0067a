//! `matchmaker status`: a live terminal view of a running deployment, read from the
//! database only; the view itself is [`ops::status`].

use std::time::Duration;

use anyhow::Context;
use sqlx::PgPool;

use crate::cli::run::{DatabaseArgs, open_database};
use crate::ops::status::{read_status, render_for};
use crate::ops::{require_schema, term::Output};

#[derive(Debug, Clone, clap::Args)]
pub struct StatusArgs {
    /// The database (default: the private PostgreSQL of a local `matchmaker run`).
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Show only this queue.
    #[arg(long)]
    pub queue: Option<String>,
    /// How many recent rounds to show.
    #[arg(long, default_value_t = 8)]
    pub rounds: i64,
    /// Refresh period.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub interval: Duration,
    /// Print the view once, without clearing the screen, and exit.
    #[arg(long)]
    pub once: bool,
}

pub fn run(args: StatusArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let (db, server) = open_database(&args.database).await?;
        let shown = show(&db, &args).await;
        db.close().await;
        if let Some(server) = server {
            server.stop().await?;
        }
        shown
    })
}

async fn show(db: &PgPool, args: &StatusArgs) -> anyhow::Result<()> {
    crate::ops::access::require_ops_login(db, "status").await?;
    require_schema(db).await?;
    if let Some(queue) = &args.queue {
        crate::db::queues::check_known_queue(db, queue).await??;
    }
    let out = Output::stdout();
    let (_, dim, reset) = out.styles();
    loop {
        let view = read_status(db, args.queue.as_deref(), args.rounds).await?;
        if args.once {
            print!("{}", render_for(&view, &out));
            return Ok(());
        }
        // Piped (a log, `| tee`), each frame follows the last, plain: no screen codes.
        let gap = if out.live { "" } else { "\n" };
        print!("{}{gap}{}", out.clear(), render_for(&view, &out));
        println!(
            "{dim}refresh every {}; Ctrl-C quits{reset}",
            humantime::format_duration(args.interval)
        );
        tokio::select! {
            _ = tokio::time::sleep(args.interval) => {}
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}
