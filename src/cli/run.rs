//! `matchmaker run`: the round daemon ([`crate::ops::run`] runs it in the
//! [`shell`](crate::ops::shell); this file parses its arguments). Also the shared
//! arguments of the database commands (where the database comes from) and the log setup.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::ops;
use crate::ops::run::{RunOptions, load_daemon_config, run_daemon};
use crate::ops::shell::{self, Signals};

#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (for log shippers).
    Json,
}

/// Where the database comes from (shared by every command that opens one, and the lab).
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// PostgreSQL URL. Without it, a private PostgreSQL is started from the local binaries
    /// with its data in --local-pg-dir (kept across runs; for a local trial).
    // hide_env_values: `--help` would print the URL, password included.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Data directory of the private PostgreSQL used when no URL is given.
    #[arg(long, default_value = ".local-pg")]
    pub local_pg_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Config file (default: $MATCHMAKER_CONFIG, else ./config/matchmaker.toml if present,
    /// else the built-in default). Reloaded on change and on SIGHUP.
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Do not apply pending migrations at start-up.
    #[arg(long)]
    pub no_migrate: bool,
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// This replica's name in the leases table (default: hostname-pid).
    #[arg(long)]
    pub holder: Option<String>,
    /// Test aid (fault injection, `matchmaker-lab soak`): run this replica's clock ahead by
    /// this long ("20s"; a leading `-` runs it behind). Round and countdown times shift;
    /// leases do not, they use the database's clock.
    #[arg(long, hide = true, value_parser = parse_skew, allow_hyphen_values = true)]
    pub clock_skew: Option<chrono::Duration>,
    /// Serve /metrics (Prometheus), /healthz, /readyz and the operators' console
    /// (/console, read-only) on this address, e.g. 127.0.0.1:9310 (port 0: any free
    /// port; the bound address is logged). No authentication: loopback or a private
    /// network. Overrides
    /// `[daemon] metrics_addr`. With it, `--no-migrate` on a database that lacks
    /// migrations waits for them (/readyz answers 503) instead of exiting.
    #[arg(long, env = "MATCHMAKER_METRICS_ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
}

/// `20s`, `1m 5s`, `-20s`: a signed humantime duration.
pub fn parse_skew(text: &str) -> Result<chrono::Duration, String> {
    let (sign, magnitude) = match text.trim().strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text.trim()),
    };
    let d = humantime::parse_duration(magnitude.trim()).map_err(|e| e.to_string())?;
    let d = chrono::Duration::from_std(d).map_err(|e| e.to_string())?;
    Ok(d * sign)
}

/// Install the tracing subscriber in `format` (see [`ops::init_logging`]).
pub fn init_logging(format: LogFormat) {
    ops::init_logging(matches!(format, LogFormat::Json));
}

impl From<&DatabaseArgs> for ops::Database {
    fn from(args: &DatabaseArgs) -> Self {
        ops::Database {
            database_url: args.database_url.clone(),
            local_pg_dir: args.local_pg_dir.clone(),
        }
    }
}

impl RunArgs {
    /// The library's options.
    pub fn options(&self) -> RunOptions {
        RunOptions {
            no_migrate: self.no_migrate,
            holder: self.holder.clone(),
            clock_skew: self.clock_skew,
            metrics_addr: self.metrics_addr,
        }
    }
}

/// SIGTERM or SIGINT stops the daemon after the rounds in flight; SIGHUP re-reads the
/// config.
pub fn run(args: RunArgs) -> anyhow::Result<()> {
    init_logging(args.log_format);
    let config = load_daemon_config(args.config.clone())?;
    let options = args.options();
    shell::run_on_database_until_stopped(
        &(&args.database).into(),
        Signals::ReloadOnHangup,
        async |db, stop| run_daemon(db, config, &options, stop).await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_skew_parses_signed_durations() {
        assert_eq!(parse_skew("20s"), Ok(chrono::Duration::seconds(20)));
        assert_eq!(parse_skew("-1m 5s"), Ok(chrono::Duration::seconds(-65)));
        assert!(parse_skew("soon").is_err());
    }
}
