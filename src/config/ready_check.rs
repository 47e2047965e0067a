//! `[queues.NAME.ready_check]`: players accept a match before it is final.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `[queues.NAME.ready_check]`: every player of a match accepts it (`accept_match`)
/// before it is final. A match a round commits is pending until all accept (ready), or
/// someone declines or `timeout` passes (cancelled: the players who accepted are queued
/// again with their original enqueue time, the others end declined).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadyCheckConfig {
    /// How long players have to accept. 1s to 10m.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// A player who declined or did not answer may not enqueue in the queue again for
    /// this long (`enqueue` refuses with the time left). 0s (the default): no cooldown.
    /// At most 24h.
    #[serde(with = "humantime_serde", default)]
    pub decline_cooldown: Duration,
    /// A login whose players failed (declined, or did not answer) at least this many of
    /// their recent ready checks, and at least `isolate_share` of them, has its players
    /// matched among themselves: its failures cost nobody else. 0: never.
    #[serde(default = "default_isolate_after")]
    pub isolate_after: u32,
    /// The share of a login's recent ready-check seats that must have failed. (0, 1].
    #[serde(default = "default_isolate_share")]
    pub isolate_share: f64,
    /// How fast a login's record forgets: a failure counts half after this long. 1m to
    /// 24h.
    #[serde(with = "humantime_serde", default = "default_isolate_half_life")]
    pub isolate_half_life: Duration,
}

fn default_isolate_after() -> u32 {
    5
}

fn default_isolate_share() -> f64 {
    0.5
}

fn default_isolate_half_life() -> Duration {
    Duration::from_secs(10 * 60)
}
