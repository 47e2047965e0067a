//! `matchmaker run`: the round daemon, wired to its database, its endpoints and the stop
//! signals of the [`shell`](crate::ops::shell).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use sqlx::PgPool;

use crate::daemon::{self, DaemonOptions};
use crate::db;
use crate::ops::check_config::{CheckedConfig, load_config};
use crate::ops::console;
use crate::ops::require_schema;
use crate::ops::shell::Stop;

/// How to run the daemon; `None` takes the config's value or the default.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Apply no pending migration at start-up.
    pub no_migrate: bool,
    /// This replica's name in the leases table (default: hostname-pid).
    pub holder: Option<String>,
    /// Run this replica's clock ahead (behind, if negative) by this long: a test aid.
    pub clock_skew: Option<chrono::Duration>,
    /// Serve /metrics, /healthz, /readyz and the console here; overrides
    /// `[daemon] metrics_addr`.
    pub metrics_addr: Option<std::net::SocketAddr>,
}

/// The daemon's config: `path`, else `MATCHMAKER_CONFIG`, else
/// `./config/matchmaker.toml`, else the built-in default; loaded before any database is
/// opened, so a bad file starts nothing.
pub fn load_daemon_config(path: Option<PathBuf>) -> anyhow::Result<CheckedConfig> {
    let checked = load_config(path)?;
    tracing::info!(config = %checked.source(), "config loaded");
    Ok(checked)
}

/// Runs the daemon on `pool` until `stop`: serves the endpoints if asked, migrates (or
/// checks, or waits for, the schema), and runs the queues' rounds on a pool whose
/// statements and lock waits are bounded. The config file is watched for reloads.
pub async fn run_daemon(
    pool: &PgPool,
    checked: CheckedConfig,
    options: &RunOptions,
    stop: &Stop,
) -> anyhow::Result<()> {
    let CheckedConfig {
        path: config_path,
        config,
    } = checked;
    let stopped = || {
        let stop = stop.clone();
        async move {
            stop.wait().await;
        }
    };
    let metrics_addr = options.metrics_addr.or(config.daemon.metrics_addr);
    // Before anything is served or written: a refusal leaves the database as it was.
    check_login_limits(
        pool,
        daemon_connections(pool, metrics_addr.is_some()),
        config.daemon.check_login_limits,
    )
    .await?;
    let health = Arc::new(daemon::health::Health::default());
    let endpoints = match metrics_addr {
        Some(addr) => Some(serve_endpoints(addr, pool.clone(), health.clone(), stopped()).await?),
        None => None,
    };
    if options.no_migrate {
        if endpoints.is_some() {
            let poll = config.daemon.poll_interval;
            if !wait_for_schema(pool, &health, poll, stopped()).await? {
                return Ok(());
            }
        } else {
            require_schema(pool).await?;
        }
    } else {
        db::migrate(pool).await?;
    }
    let mut daemon_options = DaemonOptions {
        holder: options
            .holder
            .clone()
            .unwrap_or_else(daemon::default_holder),
        config_path,
        health: health.clone(),
        ..DaemonOptions::default()
    };
    if let Some(offset) = options.clock_skew {
        tracing::warn!(
            skew_ms = offset.num_milliseconds(),
            "clock skew injected (--clock-skew): round times are off; leases use the database clock"
        );
        daemon_options.clock = Arc::new(daemon::clock::SkewedClock { offset });
    }
    // The daemon's own pool: every statement and lock wait bounded, so no client
    // call and no stuck statement holds a round, a lease renewal or a takeover.
    let limits = config.daemon.session_limits();
    let daemon_pool = db::connect_limited(pool, &limits).await?;
    let result = daemon::run(daemon_pool.clone(), config, daemon_options, stopped()).await;
    daemon_pool.close().await;
    if let Some(endpoints) = endpoints {
        // Stopped by the same signal; it answers until then.
        let _ = endpoints.await;
    }
    result
}

/// The most connections the daemon opens: the pool it was handed (the endpoints' and
/// the schema's), its rounds' pool, the LISTEN session, and the console's read-only
/// pool when the endpoints are served.
fn daemon_connections(pool: &PgPool, endpoints: bool) -> u32 {
    let console = if endpoints {
        console::read_only::MAX_CONNECTIONS
    } else {
        0
    };
    pool.options().get_max_connections()
        + db::LIMITED_POOL_CONNECTIONS
        + daemon::LISTEN_CONNECTIONS
        + console
}

/// Refuse to start when the client and server logins can take the slots the daemon
/// needs ([`db::login_limits`]); with the check turned off, log the same facts as a
/// warning and go on.
async fn check_login_limits(pool: &PgPool, daemon_needs: u32, enforce: bool) -> anyhow::Result<()> {
    let slots = db::login_limits::read_connection_slots(pool, daemon_needs).await?;
    match slots.check() {
        Ok(kept) => {
            tracing::info!(
                logins = slots.logins.len(),
                limits_sum = slots.limits_sum(),
                daemon_needs,
                max_connections = slots.max_connections,
                by = ?kept,
                "client and server logins leave the daemon its connections"
            );
            Ok(())
        }
        Err(shortfall) if enforce => Err(shortfall.into()),
        Err(shortfall) => {
            tracing::warn!(
                "{} Starting anyway: [daemon] check_login_limits = false.",
                shortfall.facts()
            );
            Ok(())
        }
    }
}

/// Bind `addr` and serve the endpoints (and the metrics recorder, installed here) and the
/// operators' console until `shutdown`. Fails at once if the address cannot be bound.
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
    tracing::info!(url = %format!("http://{bound}/console"), "serving the operators' console (read-only, no authentication)");
    // Histograms are drained at each scrape too; this bounds their buffers between scrapes.
    let upkeep = handle.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            upkeep.run_upkeep();
        }
    });
    let console = console::Console::new(&pool, health.clone());
    let endpoints = daemon::endpoints::Endpoints {
        metrics: Some(handle),
        health,
        db: pool,
    };
    let app = daemon::endpoints::router(endpoints).merge(console::router(console));
    Ok(tokio::spawn(async move {
        if let Err(e) = daemon::endpoints::serve(listener, app, shutdown).await {
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
