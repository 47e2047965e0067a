//! What a refused config says: the file could not be read, is not TOML, or a key's value
//! breaks a rule (named by its full dotted path).

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config is not valid TOML: {0}")]
    Toml(String),
    /// A value is refused; `key` is the full dotted path, e.g. `queues.ranked_3v3.round.min_pool`.
    #[error("config key `{key}`: {problem}")]
    Invalid { key: String, problem: String },
}

pub(super) fn invalid(key: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        problem: problem.into(),
    }
}

/// The table at `key` as a `T`; a refusal names the key at fault inside it (e.g.
/// `queues.ranked_3v3.round.every`, or an unknown `queues.ranked_3v3.round.evry`), found
/// by the path the deserializer had reached.
pub(super) fn typed<T: serde::de::DeserializeOwned>(
    key: &str,
    value: toml::Value,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let problem = e.into_inner().message().to_string();
        let full = if path.is_empty() || path == "." {
            key.to_string()
        } else {
            format!("{key}.{path}")
        };
        invalid(full, problem)
    })
}
