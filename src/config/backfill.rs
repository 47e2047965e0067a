//! `[queues.NAME.backfill]`: filling the open slots of running sessions.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `[queues.NAME.backfill]`: backfill requests of running sessions (`request_backfill`).
/// Every round fills the open requests before it forms new matches;
/// these keys add the immediate backfill round, so that a session does not wait for the
/// schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BackfillConfig {
    /// Fill backfill requests at all (rounds and immediate rounds). false: requests stay
    /// open until they expire.
    pub enabled: bool,
    /// A new request gets an immediate backfill round as soon as the leader wakes (its
    /// NOTIFY), so well within this; a request still open is tried again every `delay`
    /// while players are queued. 100ms to 60s.
    #[serde(with = "humantime_serde")]
    pub delay: Duration,
    /// A fill whose completed session scores below this (the match score, 0 to 1) is not
    /// made; the request stays open with that reason.
    pub min_score: f64,
    /// Immediate backfill rounds of the queue start at most once per this, however many
    /// requests arrive: a login re-requesting fake sessions cannot make the leader run a
    /// round (and store its snapshot) per request. 0s to 60s.
    #[serde(with = "humantime_serde")]
    pub spacing: Duration,
}

impl Default for BackfillConfig {
    fn default() -> Self {
        BackfillConfig {
            enabled: true,
            delay: Duration::from_secs(5),
            min_score: 0.0,
            spacing: Duration::from_secs(1),
        }
    }
}
