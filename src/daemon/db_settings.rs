//! The config as the database layer takes it: the daemon's session limits and a queue's
//! published row. Here, above both, so that `config` knows no database and `db` no config.

use crate::config::{DaemonConfig, QueueConfig};
use crate::db::SessionLimits;
use crate::db::queues::{QueuePublication, RatingPublication};

impl DaemonConfig {
    /// The session settings of the daemon's connections.
    pub fn session_limits(&self) -> SessionLimits {
        SessionLimits {
            lock_timeout: self.lock_timeout,
            statement_timeout: self.statement_timeout,
            // A leader frozen inside a commit (SIGSTOP, a paused VM) gives its row locks
            // back after this, so standbys and clients' cancels wait no longer.
            idle_in_transaction_timeout: crate::db::IDLE_IN_TRANSACTION_TIMEOUT,
        }
    }
}

impl<'a> From<&'a QueueConfig> for QueuePublication<'a> {
    fn from(config: &'a QueueConfig) -> Self {
        QueuePublication {
            model: &config.model,
            regions: &config.tickets.regions,
            skill_range: config.tickets.skill_range,
            ticket_ttl: config.tickets.ttl,
            config_hash: config.hash(),
            quotas: (
                config.limits.max_queued_per_login,
                config.limits.max_backfill_requests_per_login,
                config.limits.enqueue_rate,
                config.limits.enqueue_burst,
                config.limits.max_avoids_per_login,
            ),
            ready_timeout: config.ready_check.as_ref().map(|r| r.timeout),
            decline_cooldown: config
                .ready_check
                .as_ref()
                .map(|r| r.decline_cooldown)
                .filter(|d| !d.is_zero()),
            server_ttl: config
                .servers
                .as_ref()
                .filter(|s| s.required)
                .map(|s| s.ttl),
            rating: config.rating.as_ref().map(|r| RatingPublication {
                pool: r.pool.clone(),
                system: r.system.as_str(),
                initial: r.initial,
                initial_uncertainty: r.initial_uncertainty,
                idle_to_initial: r.idle_to_initial,
                config: serde_json::to_value(r.scale_of_pool()).expect("rating config serializes"),
            }),
        }
    }
}
