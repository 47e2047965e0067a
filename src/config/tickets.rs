//! `[queues.NAME.tickets]`: what clients may enqueue.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `[queues.NAME.tickets]`: the entry rules the daemon publishes in the `queues` table,
/// which the enqueue functions enforce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TicketConfig {
    /// A queued entry that is not kept alive (`keep_alive()`) for this long expires and is
    /// never matched; clients refresh every `ttl / 3`.
    #[serde(with = "humantime_serde")]
    pub ttl: Duration,
    /// The names a latency map may use (datacenter regions or relays). Empty: any name
    /// (at most 32 per player either way).
    pub regions: Vec<String>,
    /// The skills the queue accepts, `[min, max]`: a skill outside is refused (class 22),
    /// so no entry far off the scale can ride the max-wait fallback into honest players'
    /// matches. None: any skill within the input rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill_range: Option<[f64; 2]>,
}

impl Default for TicketConfig {
    fn default() -> Self {
        TicketConfig {
            ttl: Duration::from_secs(5 * 60),
            regions: Vec::new(),
            skill_range: None,
        }
    }
}
