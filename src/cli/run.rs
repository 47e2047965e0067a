//! `matchmaker run`: the round daemon. Also the shared wiring of the database commands
//! (where the database comes from) and the log setup.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, ValueEnum};
use sqlx::PgPool;

use crate::config::{self, Config};
use crate::daemon::{self, DaemonOptions};
use crate::db::{self, local_pg::LocalPostgres};

#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (for log shippers).
    Json,
}

/// Where the database comes from (shared by `run`, `migrate`, `bench-db`).
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
    /// Test aid (fault injection, `matchmaker soak`): run this replica's clock ahead by
    /// this long ("20s"; a leading `-` runs it behind). Round and countdown times shift;
    /// leases do not, they use the database's clock.
    #[arg(long, hide = true, value_parser = parse_skew, allow_hyphen_values = true)]
    pub clock_skew: Option<chrono::Duration>,
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

/// Install the tracing subscriber (RUST_LOG filters; default `info`). Text lines are
/// coloured only when stderr is a terminal and NO_COLOR is unset: the journal, a pipe
/// or a file gets plain lines. JSON is never coloured (one object a line).
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(crate::cli::term::stderr_colors())
            .try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    };
}

/// Connect to `--database-url`, or start (or reuse) the private PostgreSQL. The returned
/// server, if any, must be kept alive (and stopped) by the caller.
pub async fn open_database(args: &DatabaseArgs) -> anyhow::Result<(PgPool, Option<LocalPostgres>)> {
    match &args.database_url {
        Some(url) => Ok((db::connect(url).await?, None)),
        None => {
            let server = LocalPostgres::start_persistent(&args.local_pg_dir)
                .await
                .context("no DATABASE_URL given, and the private PostgreSQL did not start")?;
            tracing::info!(url = %db::redact(&server.url()), dir = %args.local_pg_dir.display(), "using the private PostgreSQL (no DATABASE_URL)");
            let pool = db::connect(&server.url()).await?;
            Ok((pool, Some(server)))
        }
    }
}

/// Refuse a database that lacks this binary's migrations (one line naming the fix, rather
/// than a query failing on a missing table every poll); a newer schema is fine.
pub async fn require_schema(pool: &PgPool) -> Result<(), db::DbError> {
    let check = db::check_schema(pool).await?;
    if !check.newer.is_empty() {
        tracing::info!(
            newer = ?check.newer,
            latest_known = check.latest,
            "database schema is newer than this binary (migrations only add: fine)"
        );
    }
    Ok(())
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    init_logging(args.log_format);
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(run_async(args))
}

async fn run_async(args: RunArgs) -> anyhow::Result<()> {
    let config_path = config::resolve_path(args.config.clone());
    let config = match &config_path {
        Some(path) => Config::load(path)?,
        None => Config::embedded_default(),
    };
    tracing::info!(config = %config_path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "built-in default".into()), "config loaded");
    let (pool, server) = open_database(&args.database).await?;
    let result = async {
        if args.no_migrate {
            require_schema(&pool).await?;
        } else {
            db::migrate(&pool).await?;
        }
        let mut options = DaemonOptions {
            holder: args.holder.unwrap_or_else(daemon::default_holder),
            config_path,
            ..DaemonOptions::default()
        };
        if let Some(offset) = args.clock_skew {
            tracing::warn!(
                skew_ms = offset.num_milliseconds(),
                "clock skew injected (--clock-skew): round times are off; leases use the database clock"
            );
            options.clock = Arc::new(daemon::clock::SkewedClock { offset });
        }
        // The daemon's own pool: every statement and lock wait bounded, so no client
        // call and no stuck statement holds a round, a lease renewal or a takeover.
        let limits = config.daemon.session_limits();
        let daemon_pool = db::connect_limited(&pool, &limits).await?;
        let result = daemon::run(daemon_pool.clone(), config, options, shutdown_signal()).await;
        daemon_pool.close().await;
        result
    }
    .await;
    pool.close().await;
    if let Some(server) = server {
        // Left running if another `matchmaker run` shares it.
        server.stop().await?;
    }
    result
}

/// SIGTERM or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received"),
        _ = term => tracing::info!("SIGTERM received"),
    }
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
