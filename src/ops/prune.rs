//! `matchmaker prune`: delete the history past the retention horizon now, the same way
//! the daemon's queue leaders do on their timer (`db::retention`): every queue in the
//! database (or the ones asked for), in batches of short transactions, each player's last
//! matches kept. A dry run counts what would go and changes nothing.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::config::{self, Config};
use crate::db;
use crate::db::retention::{self, Pruned};
use crate::ops::check_config::load_config;
use crate::ops::require_schema;

/// What to prune; `None` takes the config's value.
#[derive(Debug, Clone)]
pub struct PruneOptions {
    /// The config file (`[retention]`, each queue's history depth, the daemon's lock and
    /// statement timeouts); `None`: `MATCHMAKER_CONFIG`, `./config/matchmaker.toml`, else
    /// the built-in default.
    pub config: Option<PathBuf>,
    /// Delete what ended longer ago than this.
    pub horizon: Option<Duration>,
    /// Rows of each kind per transaction.
    pub batch_size: Option<usize>,
    /// Only these queues; empty: every queue with history.
    pub queues: Vec<String>,
    /// Count what would be deleted; change nothing.
    pub dry_run: bool,
}

/// What a prune covers, known before it deletes anything.
#[derive(Debug, Clone, PartialEq)]
pub struct PrunePlan {
    /// History that ended before this goes.
    pub cutoff: DateTime<Utc>,
    pub horizon: Duration,
    pub batch_size: usize,
    pub dry_run: bool,
}

/// One queue pruned (or counted, in a dry run).
#[derive(Debug, Clone, PartialEq)]
pub struct QueuePruned {
    pub queue: String,
    /// The matches kept per player.
    pub keep: usize,
    pub pruned: Pruned,
}

/// What a prune works with, settled before any database is opened: the config and the
/// limits, checked.
#[derive(Debug, Clone)]
pub struct PruneSettings {
    pub config: Config,
    pub horizon: Duration,
    pub batch_size: usize,
    pub queues: Vec<String>,
    pub dry_run: bool,
}

/// Load the config and settle the horizon and batch size (the options over the
/// config's `[retention]`), refusing what no prune could run with.
pub fn prune_settings(options: &PruneOptions) -> anyhow::Result<PruneSettings> {
    let config = load_config(options.config.clone())?.config;
    let horizon = options.horizon.or(config.retention.horizon).context(
        "no retention horizon: set [retention] horizon in the config, or pass --horizon 30d",
    )?;
    let batch_size = options.batch_size.unwrap_or(config.retention.batch_size);
    anyhow::ensure!(
        (1..=config::MAX_RETENTION_BATCH).contains(&batch_size),
        "--batch-size {batch_size}: must be between 1 and {}",
        config::MAX_RETENTION_BATCH
    );
    Ok(PruneSettings {
        config,
        horizon,
        batch_size,
        queues: options.queues.clone(),
        dry_run: options.dry_run,
    })
}

/// Prunes (or counts) every queue asked for, under the daemon's bounds on every
/// statement and lock wait; `on_plan` hears the plan before the first deletion,
/// `on_queue` each queue once done. Returns the totals.
pub async fn prune(
    db: &PgPool,
    settings: &PruneSettings,
    on_plan: impl FnOnce(&PrunePlan),
    on_queue: impl FnMut(&QueuePruned),
) -> anyhow::Result<Pruned> {
    require_schema(db).await?;
    crate::ops::access::require_daemon_login(db, "prune").await?;
    let limited = db::connect_limited(db, &settings.config.daemon.session_limits()).await?;
    let result = prune_queues(&limited, settings, on_plan, on_queue).await;
    limited.close().await;
    result
}

async fn prune_queues(
    db: &PgPool,
    settings: &PruneSettings,
    on_plan: impl FnOnce(&PrunePlan),
    mut on_queue: impl FnMut(&QueuePruned),
) -> anyhow::Result<Pruned> {
    let PruneSettings {
        config,
        horizon,
        batch_size,
        ..
    } = settings;
    let (horizon, batch_size) = (*horizon, *batch_size);
    let cutoff = retention::cutoff(db, horizon, None).await?;
    let queues = if settings.queues.is_empty() {
        retention::queues_with_history(db).await?
    } else {
        for queue in &settings.queues {
            crate::db::queues::check_known_queue(db, queue).await??;
        }
        settings.queues.clone()
    };
    // A queue the config does not list (retired, or served by another config) keeps as
    // much as the deepest configured queue: it may come back.
    let deepest = config
        .queues
        .values()
        .map(|q| q.history_matches())
        .max()
        .unwrap_or(1);
    on_plan(&PrunePlan {
        cutoff,
        horizon,
        batch_size,
        dry_run: settings.dry_run,
    });
    let mut total = Pruned::default();
    for queue in &queues {
        let keep = config
            .queues
            .get(queue)
            .map(|q| q.history_matches())
            .unwrap_or(deepest);
        let mut pruner = retention::QueuePruner::new(queue, cutoff, keep, batch_size);
        let pruned = if settings.dry_run {
            retention::dry_run_queue(db, &mut pruner).await?
        } else {
            retention::prune_queue(
                db,
                &mut pruner,
                crate::daemon::retention::BATCH_PAUSE,
                config.daemon.prune_batch_limit(),
                || async { true },
            )
            .await?
        };
        on_queue(&QueuePruned {
            queue: queue.clone(),
            keep,
            pruned,
        });
        total.add(pruned);
    }
    Ok(total)
}
