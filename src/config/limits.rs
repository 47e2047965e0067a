//! `[queues.NAME.limits]`: what one client login may take of a queue.

use serde::{Deserialize, Serialize};

/// `[queues.NAME.limits]`: what one client login may take of the queue, so that no login
/// crowds out another's players. The daemon publishes the quotas in the `queues` table,
/// where the client functions read them; the daemon and operators are exempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Entries one login may have queued in this queue at once; more are refused.
    pub max_queued_per_login: u32,
    /// Open backfill requests one login may have in this queue at once.
    pub max_backfill_requests_per_login: u32,
    /// Players one client connection may enqueue per second (a token bucket), after a
    /// burst of `enqueue_burst`. A login's rate is this times its connection limit.
    pub enqueue_rate: f64,
    pub enqueue_burst: f64,
    /// Unexpired avoids one login may hold; `avoid` refuses a new one past it (a renewal
    /// still works). Avoids belong to no queue: `avoid` takes the largest of the active
    /// queues'.
    pub max_avoids_per_login: u32,
    /// An entry left over as no_host or no_valid_match for this many rounds in a row waits
    /// behind every other entry when the pool exceeds `round.max_round_size`; a round with
    /// room still tries it.
    pub sit_out_after: u32,
    /// The most a round's backfills may take of its pool (0 to 1): the requests a round
    /// tries have at most this share of the pool in open slots, taken from each login in
    /// turn.
    pub max_fill_share: f64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_queued_per_login: 2000,
            max_backfill_requests_per_login: 20,
            enqueue_rate: 200.0,
            enqueue_burst: 1000.0,
            max_avoids_per_login: 100_000,
            sit_out_after: 3,
            max_fill_share: 0.5,
        }
    }
}
