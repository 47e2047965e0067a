//! The daemon's configuration (`config/matchmaker.toml`): typed, validated before use.
//!
//! ```toml
//! default_queue = "ranked_3v3"
//! [daemon]               # poll interval, lease TTL / renewal
//! [queues.ranked_3v3]    # the core's QueueModel: format, network, weights, factors
//! [queues.ranked_3v3.round]  # this daemon's RoundConfig: schedule, sizes, budget, seed
//! [queues.ranked_3v3.tickets]  # what clients may enqueue: ticket TTL, known regions
//! [retention]            # how long past rounds, matches and entries are kept
//! ```
//!
//! [`Config::load`] / [`Config::from_toml_str`] refuse a bad file with a message naming
//! the queue and the key; the daemon's hot reload keeps the old config in that case. Each
//! queue's effective config has a [`QueueConfig::hash`] stored with every round, so a past
//! round can be traced to the exact settings that produced it.

mod backfill;
mod daemon;
mod error;
mod limits;
mod queue;
pub mod rating;
mod ready_check;
mod retention;
mod round;
pub mod schedule;
pub mod servers;
mod tickets;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use matchmaker_optimizer::QueueModel;

pub use backfill::BackfillConfig;
pub use daemon::DaemonConfig;
pub use error::ConfigError;
use error::{invalid, typed};
pub use limits::LimitsConfig;
pub use queue::QueueConfig;
pub use rating::RatingConfig;
pub use ready_check::ReadyCheckConfig;
pub use retention::{
    MAX_RETENTION_BATCH, MIN_RETENTION_HORIZON, RetentionConfig, check_retention_horizon,
    format_horizon,
};
pub use round::RoundConfig;
pub use schedule::Schedule;
pub use servers::ServersConfig;
pub use tickets::TicketConfig;
pub use validate::MAX_QUEUE_NAME;

/// The embedded default configuration (`config/matchmaker.toml`).
pub const DEFAULT_TOML: &str = include_str!("../../config/matchmaker.toml");

/// The schedule of a queue that sets neither `every` nor `cron`.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(120);

/// Environment variable naming the config file.
pub const CONFIG_ENV: &str = "MATCHMAKER_CONFIG";

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// The queue clients use when they do not name one (and the simulator's default).
    pub default_queue: String,
    pub daemon: DaemonConfig,
    pub queues: BTreeMap<String, QueueConfig>,
    pub retention: RetentionConfig,
}

impl Config {
    /// Read and validate a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::from_toml_str(&text)
    }

    /// The embedded default (`config/matchmaker.toml` as built into the binary).
    pub fn embedded_default() -> Config {
        Config::from_toml_str(DEFAULT_TOML).expect("the embedded default config is valid")
    }

    /// Parse and validate.
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        let mut table: toml::Table =
            toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string()))?;

        let default_queue = match table.remove("default_queue") {
            None => None,
            Some(toml::Value::String(s)) => Some(s),
            Some(_) => return Err(invalid("default_queue", "must be a string")),
        };
        let daemon: DaemonConfig = match table.remove("daemon") {
            None => DaemonConfig::default(),
            Some(v) => typed("daemon", v)?,
        };
        let retention: RetentionConfig = match table.remove("retention") {
            None => RetentionConfig::default(),
            Some(v) => typed("retention", v)?,
        };
        let queues_value = table
            .remove("queues")
            .ok_or_else(|| invalid("queues", "at least one [queues.NAME] table is required"))?;
        if let Some(key) = table.keys().next() {
            return Err(invalid(
                key.clone(),
                "unknown key (expected default_queue, daemon, queues, retention)",
            ));
        }
        let toml::Value::Table(queue_tables) = queues_value else {
            return Err(invalid("queues", "must be a table of [queues.NAME] tables"));
        };

        let mut queues = BTreeMap::new();
        for (name, value) in queue_tables {
            let key = format!("queues.{name}");
            let toml::Value::Table(mut queue_table) = value else {
                return Err(invalid(key, "must be a table"));
            };
            let round: RoundConfig = match queue_table.remove("round") {
                None => RoundConfig::default(),
                Some(v) => typed(&format!("{key}.round"), v)?,
            };
            let tickets: TicketConfig = match queue_table.remove("tickets") {
                None => TicketConfig::default(),
                Some(v) => typed(&format!("{key}.tickets"), v)?,
            };
            let backfill: BackfillConfig = match queue_table.remove("backfill") {
                None => BackfillConfig::default(),
                Some(v) => typed(&format!("{key}.backfill"), v)?,
            };
            let limits: LimitsConfig = match queue_table.remove("limits") {
                None => LimitsConfig::default(),
                Some(v) => typed(&format!("{key}.limits"), v)?,
            };
            let ready_check: Option<ReadyCheckConfig> = match queue_table.remove("ready_check") {
                None => None,
                Some(v) => Some(typed(&format!("{key}.ready_check"), v)?),
            };
            let rating: Option<RatingConfig> = match queue_table.remove("rating") {
                None => None,
                Some(v) => Some(typed(&format!("{key}.rating"), v)?),
            };
            let servers: Option<ServersConfig> = match queue_table.remove("servers") {
                None => None,
                Some(v) => Some(typed(&format!("{key}.servers"), v)?),
            };
            let model: QueueModel = typed(&key, toml::Value::Table(queue_table))?;
            queues.insert(
                name,
                QueueConfig {
                    model,
                    round,
                    tickets,
                    backfill,
                    limits,
                    ready_check,
                    rating,
                    servers,
                },
            );
        }

        let default_queue = match default_queue {
            Some(q) => q,
            None if queues.len() == 1 => queues.keys().next().cloned().unwrap_or_default(),
            None => {
                return Err(invalid(
                    "default_queue",
                    "required when more than one queue is configured",
                ));
            }
        };
        let config = Config {
            default_queue,
            daemon,
            queues,
            retention,
        };
        config.validate()?;
        Ok(config)
    }
}

/// Where the config comes from: `--config`, else `MATCHMAKER_CONFIG`, else
/// `config/matchmaker.toml` if it exists, else the embedded default (None).
pub fn resolve_path(flag: Option<PathBuf>) -> Option<PathBuf> {
    flag.or_else(|| std::env::var_os(CONFIG_ENV).map(PathBuf::from))
        .or_else(|| {
            let local = PathBuf::from("config/matchmaker.toml");
            local.exists().then_some(local)
        })
}
