//! `matchmaker check-config`: load and validate a config file exactly as `run` does at
//! start-up (the same path resolution, the same refusals naming the queue and key),
//! without a database.

use std::path::PathBuf;

use crate::config::{self, Config};

/// A config that loads, and where it came from.
#[derive(Debug, Clone)]
pub struct CheckedConfig {
    /// The file read; `None`: the built-in default (no file given or found).
    pub path: Option<PathBuf>,
    pub config: Config,
}

/// Load the config `run` would load: `path`, else `MATCHMAKER_CONFIG`, else
/// `./config/matchmaker.toml`, else the built-in default.
pub fn load_config(path: Option<PathBuf>) -> Result<CheckedConfig, config::ConfigError> {
    let path = config::resolve_path(path);
    let config = match &path {
        Some(path) => Config::load(path)?,
        None => Config::embedded_default(),
    };
    Ok(CheckedConfig { path, config })
}

impl CheckedConfig {
    /// Where the config came from, as the logs and the summary name it.
    pub fn source(&self) -> String {
        self.path
            .as_ref()
            .map_or_else(|| "built-in default".into(), |p| p.display().to_string())
    }

    /// One line: the source, then each queue with its format and schedule, the default
    /// queue marked.
    pub fn summary(&self) -> String {
        let queues: Vec<String> = self
            .config
            .queues
            .iter()
            .map(|(name, queue)| {
                let model = &queue.model;
                let format = vec![model.team_size.to_string(); model.teams].join("v");
                let schedule = queue.round.schedule().map_or_else(|e| e, |s| s.to_string());
                let default = if *name == self.config.default_queue {
                    ", default"
                } else {
                    ""
                };
                format!("{name} ({format}, {schedule}{default})")
            })
            .collect();
        let n = queues.len();
        format!(
            "{}: valid; {n} queue{}: {}",
            self.source(),
            if n == 1 { "" } else { "s" },
            queues.join(", ")
        )
    }
}
