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
use crate::ops::{self, require_schema};

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
    /// Serve /metrics (Prometheus), /healthz and /readyz on this address, e.g.
    /// 127.0.0.1:9310 (port 0: any free port; the bound address is logged). Overrides
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

/// Connect to `--database-url`, or start (or reuse) the private PostgreSQL.
pub async fn open_database(args: &DatabaseArgs) -> anyhow::Result<(PgPool, Option<LocalPostgres>)> {
    ops::open_database(&args.into()).await
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
    // SIGTERM / SIGINT, seen by the daemon, the schema wait and the endpoints alike.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|stop| *stop).await;
        }
    };
    let (pool, server) = open_database(&args.database).await?;
    let health = Arc::new(daemon::health::Health::default());
    let result = async {
        let metrics_addr = args.metrics_addr.or(config.daemon.metrics_addr);
        let endpoints = match metrics_addr {
            Some(addr) => Some(
                serve_endpoints(addr, pool.clone(), health.clone(), stopped()).await?,
            ),
            None => None,
        };
        if args.no_migrate {
            if endpoints.is_some() {
                let poll = config.daemon.poll_interval;
                if !wait_for_schema(&pool, &health, poll, stopped()).await? {
                    return Ok(());
                }
            } else {
                require_schema(&pool).await?;
            }
        } else {
            db::migrate(&pool).await?;
        }
        let mut options = DaemonOptions {
            holder: args.holder.unwrap_or_else(daemon::default_holder),
            config_path,
            health: health.clone(),
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
        let result = daemon::run(daemon_pool.clone(), config, options, stopped()).await;
        daemon_pool.close().await;
        if let Some(endpoints) = endpoints {
            // Stopped by the same signal; it answers until then.
            let _ = endpoints.await;
        }
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

/// Bind `addr` and serve the endpoints (and the metrics recorder, installed here) until
/// `shutdown`. Fails at once if the address cannot be bound.
async fn serve_endpoints(
    addr: std::net::SocketAddr,
    pool: PgPool,
    health: Arc<daemon::health::Health>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let handle = daemon::metrics::install_recorder()
        .context("installing the Prometheus metrics recorder")?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} for /metrics, /healthz, /readyz"))?;
    let bound = listener.local_addr()?;
    tracing::info!(addr = %bound, "serving /metrics, /healthz and /readyz");
    // Histograms are drained at each scrape too; this bounds their buffers between scrapes.
    let upkeep = handle.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            upkeep.run_upkeep();
        }
    });
    let endpoints = daemon::endpoints::Endpoints {
        metrics: Some(handle),
        health,
        db: pool,
    };
    Ok(tokio::spawn(async move {
        if let Err(e) = daemon::endpoints::serve(listener, endpoints, shutdown).await {
            tracing::error!(error = %e, "the /metrics endpoint stopped");
        }
    }))
}

/// `--no-migrate` with the endpoints served: wait (re-checking every `poll`) until the
/// schema has this binary's migrations, answering /readyz with 503 and the reason
/// meanwhile. `Ok(false)`: stopped while waiting. Errors other than a schema behind (the
/// database unreachable, a role that cannot read `_sqlx_migrations`) end the start.
async fn wait_for_schema(
    pool: &PgPool,
    health: &daemon::health::Health,
    poll: std::time::Duration,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<bool> {
    tokio::pin!(shutdown);
    let mut logged: Option<String> = None;
    loop {
        match require_schema(pool).await {
            Ok(()) => break,
            Err(e @ db::DbError::SchemaBehind { .. }) => {
                let reason = e.to_string();
                daemon::metrics::record_error(daemon::metrics::ErrorKind::Schema);
                // Once per distinct state, not every poll.
                if logged.as_ref() != Some(&reason) {
                    tracing::error!(error = %reason, "waiting for the schema; /readyz answers 503 until it is current");
                    logged = Some(reason.clone());
                }
                health.waiting_for_schema(true);
            }
            Err(e) => return Err(e.into()),
        }
        tokio::select! {
            _ = &mut shutdown => return Ok(false),
            _ = tokio::time::sleep(poll) => {}
        }
    }
    if logged.is_some() {
        tracing::info!("schema is current; starting the daemon");
    }
    health.waiting_for_schema(false);
    Ok(true)
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
