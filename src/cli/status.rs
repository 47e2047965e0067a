//! `matchmaker status`: a live terminal view of a running deployment, read from the
//! database only; the view itself is [`ops::status`].

use std::time::Duration;

use crate::cli::run::DatabaseArgs;
use crate::ops::shell::{self, Signals};
use crate::ops::status::{StatusOptions, StatusView, render_for, watch_status};
use crate::ops::term::Output;

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

impl StatusArgs {
    /// The library's options.
    pub fn options(&self) -> StatusOptions {
        StatusOptions {
            queue: self.queue.clone(),
            rounds: self.rounds,
            interval: self.interval,
            once: self.once,
        }
    }
}

/// Ctrl-C (or SIGTERM, SIGHUP) ends the view with exit status 0.
pub fn run(args: StatusArgs) -> anyhow::Result<()> {
    let options = args.options();
    let out = Output::stdout();
    shell::run_on_database_until_stopped(
        &(&args.database).into(),
        Signals::All,
        async |db, stop| watch_status(db, &options, stop, |view| draw(view, &options, &out)).await,
    )
}

/// One frame: plain with `--once`; else the screen cleared first on a terminal (piped,
/// a log or `| tee`, each frame follows the last, plain: no screen codes), and the
/// refresh line under it.
fn draw(view: &StatusView, options: &StatusOptions, out: &Output) {
    if options.once {
        print!("{}", render_for(view, out));
        return;
    }
    let (_, dim, reset) = out.styles();
    let gap = if out.live { "" } else { "\n" };
    print!("{}{gap}{}", out.clear(), render_for(view, out));
    println!(
        "{dim}refresh every {}; Ctrl-C quits{reset}",
        humantime::format_duration(options.interval)
    );
}
