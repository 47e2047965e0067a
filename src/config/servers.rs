//! `[queues.NAME.servers]`: matches of a dedicated-server queue are placed on game servers
//! that announced themselves (`server_ready`), and a round never forms a match it cannot
//! place.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One queue's server placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServersConfig {
    /// Every match the round commits is allocated one ready server of its region, in the
    /// same transaction; a match that cannot have one is not formed (its players stay
    /// queued, left over as `no_server`). false: the table is inert (a way to stage it).
    #[serde(default = "default_required")]
    pub required: bool,
    /// A ready server whose last announcement is older than this is not used until it
    /// announces again: a crashed fleet leaves no phantom capacity. 5s to 1h; servers
    /// announce well within it.
    #[serde(with = "humantime_serde", default = "default_ttl")]
    pub ttl: Duration,
}

fn default_required() -> bool {
    true
}

fn default_ttl() -> Duration {
    Duration::from_secs(30)
}

impl ServersConfig {
    /// Refuses what cannot work, with the key at fault (relative to the table).
    pub fn validate(&self, dedicated: bool) -> Result<(), (&'static str, String)> {
        if self.required && !dedicated {
            return Err((
                "required",
                "needs network = \"dedicated\": peer-to-peer matches are hosted by a player".into(),
            ));
        }
        if self.ttl < Duration::from_secs(5) || self.ttl > Duration::from_secs(3600) {
            return Err(("ttl", "must be between 5s and 1h".into()));
        }
        Ok(())
    }
}
