//! `[retention]`: how long past rounds, matches and entries are kept.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

/// `[retention]`: bounded history. Each queue's leader deletes what ended before the
/// horizon (rounds, matches, match players, entries that are no longer queued), in
/// batches of short transactions, every `interval`; `matchmaker prune` does the same on
/// demand. Each player's last `history_matches` matches in a queue are kept whatever their
/// age: the next round's opponent-variation history reads them (src/db/retention.rs).
/// Read again at every pass, so a reload applies from the next one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    /// Keep this long. Absent: keep all history (a pass deletes only the enqueue buckets
    /// that have refilled, which hold nothing).
    #[serde(
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub horizon: Option<Duration>,
    /// At most this many matches (with their players and entries), entries or rounds per
    /// transaction.
    pub batch_size: usize,
    /// Time between two pruning passes of a queue's leader.
    #[serde(with = "humantime_serde")]
    pub interval: Duration,
}

/// The shortest horizon a config may set: a typo such as `"30m"` for thirty days must
/// not wipe the history, and operators read the last hour's rounds at the very least.
pub const MIN_RETENTION_HORIZON: Duration = Duration::from_secs(3600);
/// The largest batch: a batch is one transaction, which must stay short.
pub const MAX_RETENTION_BATCH: usize = 10_000;

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            horizon: None,
            batch_size: 500,
            interval: Duration::from_secs(600),
        }
    }
}

impl RetentionConfig {
    /// The rules of `[retention]`; the error names the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(horizon) = self.horizon {
            check_retention_horizon(horizon).map_err(|p| invalid("retention.horizon", p))?;
        }
        if self.batch_size == 0 || self.batch_size > MAX_RETENTION_BATCH {
            return Err(invalid(
                "retention.batch_size",
                format!("must be between 1 and {MAX_RETENTION_BATCH}"),
            ));
        }
        if self.interval < Duration::from_secs(1) {
            return Err(invalid("retention.interval", "must be at least 1s"));
        }
        Ok(())
    }
}

/// A horizon as an operator writes it: whole days as `30d` (humantime would print
/// `1month 9days 13h 26m 24s` for 40 days), anything else in humantime's format.
pub fn format_horizon(horizon: Duration) -> String {
    let secs = horizon.as_secs();
    if secs > 0 && secs.is_multiple_of(86_400) && horizon.subsec_nanos() == 0 {
        format!("{}d", secs / 86_400)
    } else {
        humantime::format_duration(horizon).to_string()
    }
}

/// A retention horizon is at least [`MIN_RETENTION_HORIZON`] (also `prune --horizon`).
pub fn check_retention_horizon(horizon: Duration) -> Result<(), String> {
    if horizon < MIN_RETENTION_HORIZON {
        return Err(format!(
            "{} is shorter than the minimum of 1h (a horizon of days is usual: \"30d\")",
            format_horizon(horizon)
        ));
    }
    Ok(())
}
