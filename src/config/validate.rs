//! The rules a config must satisfy beyond its types: the daemon's timings, each queue's
//! tables, rating pools shared by queues. Every refusal names the queue and the key.

use std::collections::BTreeMap;
use std::time::Duration;

use matchmaker_optimizer::QueueModel;
use matchmaker_optimizer::model::Network;

use super::{Config, ConfigError, QueueConfig, RatingConfig, invalid};

impl Config {
    /// Every rule a config must satisfy; the error names the queue and key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.queues.is_empty() {
            return Err(invalid("queues", "at least one queue is required"));
        }
        if !self.queues.contains_key(&self.default_queue) {
            return Err(invalid(
                "default_queue",
                format!("no queue named {:?} is configured", self.default_queue),
            ));
        }
        let d = &self.daemon;
        if d.poll_interval.is_zero() {
            return Err(invalid("daemon.poll_interval", "must be greater than 0"));
        }
        if d.lease_renew.is_zero() || d.lease_renew >= d.lease_ttl {
            return Err(invalid(
                "daemon.lease_renew",
                "must be greater than 0 and less than daemon.lease_ttl",
            ));
        }
        if d.lock_timeout < Duration::from_millis(10) || d.lock_timeout >= d.lease_ttl {
            return Err(invalid(
                "daemon.lock_timeout",
                "must be at least 10ms and less than daemon.lease_ttl",
            ));
        }
        if d.statement_timeout < Duration::from_secs(1) {
            return Err(invalid("daemon.statement_timeout", "must be at least 1s"));
        }
        if d.step_timeout.is_some_and(|t| t < Duration::from_secs(1)) {
            return Err(invalid("daemon.step_timeout", "must be at least 1s"));
        }
        if d.solver_threads == Some(0) {
            return Err(invalid("daemon.solver_threads", "must be at least 1"));
        }
        for (name, queue) in &self.queues {
            queue.validate(name)?;
        }
        self.validate_rating_pools()?;
        self.retention.validate()
    }
}

impl Config {
    /// Queues that share a rating pool rate it one way: the same system and scale.
    fn validate_rating_pools(&self) -> Result<(), ConfigError> {
        let mut pools: BTreeMap<&str, (&str, RatingConfig)> = BTreeMap::new();
        for (name, queue) in &self.queues {
            let Some(rating) = &queue.rating else {
                continue;
            };
            let scale = rating.scale_of_pool();
            match pools.get(rating.pool_name(name)) {
                Some((first, theirs)) if *theirs != scale => {
                    return Err(invalid(
                        format!("queues.{name}.rating"),
                        format!(
                            "shares pool {:?} with queue {first}, whose rating table differs \
                             (queues of one pool need the same system, scale and settings)",
                            rating.pool_name(name)
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    pools.insert(rating.pool_name(name), (name, scale));
                }
            }
        }
        Ok(())
    }
}

/// The longest queue name: its notification channel, `matchmaker:` and the name, stays
/// within PostgreSQL's 63-byte identifiers unhashed, and every payload
/// that carries it stays far below the 8000-byte limit.
pub const MAX_QUEUE_NAME: usize = 52;

impl QueueConfig {
    /// Validate one queue named `name`.
    pub fn validate(&self, name: &str) -> Result<(), ConfigError> {
        let key = |k: &str| format!("queues.{name}.{k}");
        if name.is_empty()
            || name.len() > MAX_QUEUE_NAME
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(invalid(
                format!("queues.{name:?}"),
                format!("queue names are 1-{MAX_QUEUE_NAME} letters, digits, '_' and '-'"),
            ));
        }
        validate_model(&self.model)
            .map_err(|problem| invalid(format!("queues.{name}"), problem))?;
        self.validate_round(key)?;
        self.validate_tickets(key)?;
        self.validate_backfill(key)?;
        self.validate_limits(key)?;
        self.validate_ready_check(key)?;
        if let Some(rating) = &self.rating {
            rating
                .validate(|k| key(&format!("rating.{k}")))
                .map_err(|(k, problem)| invalid(k, problem))?;
        }
        if let Some(servers) = &self.servers {
            servers
                .validate(self.model.network == matchmaker_optimizer::Network::Dedicated)
                .map_err(|(k, problem)| invalid(key(&format!("servers.{k}")), problem))?;
        }
        self.validate_roles(key)?;
        Ok(())
    }

    /// The round's schedule, sizes and search budget.
    fn validate_round(&self, key: impl Fn(&str) -> String) -> Result<(), ConfigError> {
        let r = &self.round;
        r.schedule().map_err(|p| {
            let k = if r.cron.is_some() && r.every.is_none() {
                "round.cron"
            } else {
                "round.every"
            };
            invalid(key(k), p)
        })?;
        if r.every.is_some_and(|e| e < Duration::from_secs(1)) {
            return Err(invalid(key("round.every"), "must be at least 1s"));
        }
        let per_match = self.model.players_per_match();
        if r.max_round_size < per_match {
            return Err(invalid(
                key("round.max_round_size"),
                format!("must be at least one match ({per_match} players)"),
            ));
        }
        if let Some(min) = r.min_pool {
            let smallest = self.model.min_players_per_match();
            if min < smallest {
                let what = if self.model.is_flexible() {
                    format!("the smallest format the alliance allows ({smallest} players)")
                } else {
                    format!("one match ({smallest} players)")
                };
                return Err(invalid(
                    key("round.min_pool"),
                    format!("must be at least {what}"),
                ));
            }
            if min > r.max_round_size {
                return Err(invalid(
                    key("round.min_pool"),
                    "must not exceed round.max_round_size",
                ));
            }
        }
        if let Some(target) = r.target_pool
            && target < self.min_pool()
        {
            return Err(invalid(
                key("round.target_pool"),
                format!("must be at least round.min_pool ({})", self.min_pool()),
            ));
        }
        if r.budget.is_zero() {
            return Err(invalid(key("round.budget"), "must be greater than 0"));
        }
        if r.restarts == Some(0) {
            return Err(invalid(key("round.restarts"), "must be at least 1"));
        }
        if r.moves_per_restart == Some(0) {
            return Err(invalid(
                key("round.moves_per_restart"),
                "must be at least 1",
            ));
        }
        if r.threads == Some(0) {
            return Err(invalid(key("round.threads"), "must be at least 1"));
        }
        Ok(())
    }

    /// Ticket lifetime and the regions a ticket may name.
    fn validate_tickets(&self, key: impl Fn(&str) -> String) -> Result<(), ConfigError> {
        let t = &self.tickets;
        if t.ttl < Duration::from_secs(3) {
            return Err(invalid(key("tickets.ttl"), "must be at least 3s"));
        }
        if let Some([lo, hi]) = t.skill_range
            && !(lo.is_finite() && hi.is_finite() && lo < hi && lo >= -1e6 && hi <= 1e6)
        {
            return Err(invalid(
                key("tickets.skill_range"),
                "must be [min, max], finite, min below max, within [-1000000, 1000000]",
            ));
        }
        if t.regions.len() > 256 {
            return Err(invalid(key("tickets.regions"), "at most 256 regions"));
        }
        for region in &t.regions {
            if region.is_empty()
                || region.chars().count() > 64
                || region.chars().any(char::is_control)
            {
                return Err(invalid(
                    key("tickets.regions"),
                    format!(
                        "{region:?}: a region name has 1-64 characters, none a control character"
                    ),
                ));
            }
        }
        // A dedicated-server match is played in one of the queue's regions: with none
        // listed, any name a client sends ("mars") would be a region to place it in.
        if self.model.network == Network::Dedicated && t.regions.is_empty() {
            return Err(invalid(
                key("tickets.regions"),
                "a dedicated-server queue must list its regions (the datacenters a match may \
                 be placed in; latencies may name only these)",
            ));
        }
        Ok(())
    }

    /// When backfill runs and what it accepts.
    fn validate_backfill(&self, key: impl Fn(&str) -> String) -> Result<(), ConfigError> {
        let b = &self.backfill;
        if b.delay < Duration::from_millis(100) || b.delay > Duration::from_secs(60) {
            return Err(invalid(
                key("backfill.delay"),
                "must be between 100ms and 60s",
            ));
        }
        if !(0.0..=1.0).contains(&b.min_score) {
            return Err(invalid(key("backfill.min_score"), "must be in [0, 1]"));
        }
        if b.spacing > Duration::from_secs(60) {
            return Err(invalid(key("backfill.spacing"), "must be at most 60s"));
        }
        Ok(())
    }

    /// What one login may do.
    fn validate_limits(&self, key: impl Fn(&str) -> String) -> Result<(), ConfigError> {
        let l = &self.limits;
        if !(1..=1_000_000).contains(&l.max_queued_per_login) {
            return Err(invalid(
                key("limits.max_queued_per_login"),
                "must be between 1 and 1000000",
            ));
        }
        if !(1..=100_000).contains(&l.max_backfill_requests_per_login) {
            return Err(invalid(
                key("limits.max_backfill_requests_per_login"),
                "must be between 1 and 100000",
            ));
        }
        if !(l.enqueue_rate.is_finite() && l.enqueue_rate > 0.0 && l.enqueue_rate <= 1e6) {
            return Err(invalid(
                key("limits.enqueue_rate"),
                "must be a number of players per second in (0, 1000000]",
            ));
        }
        let party = self.model.team_size as f64;
        if !(l.enqueue_burst.is_finite() && l.enqueue_burst >= party && l.enqueue_burst <= 1e7) {
            return Err(invalid(
                key("limits.enqueue_burst"),
                format!("must be between the largest party ({party}) and 10000000"),
            ));
        }
        if !(1..=1_000_000).contains(&l.max_avoids_per_login) {
            return Err(invalid(
                key("limits.max_avoids_per_login"),
                "must be between 1 and 1000000",
            ));
        }
        if !(1..=1000).contains(&l.sit_out_after) {
            return Err(invalid(
                key("limits.sit_out_after"),
                "must be between 1 and 1000 rounds",
            ));
        }
        if !(l.max_fill_share > 0.0 && l.max_fill_share <= 1.0) {
            return Err(invalid(key("limits.max_fill_share"), "must be in (0, 1]"));
        }
        Ok(())
    }

    /// The ready check's timeout and decline cooldown.
    fn validate_ready_check(&self, key: impl Fn(&str) -> String) -> Result<(), ConfigError> {
        if let Some(rc) = &self.ready_check {
            if rc.timeout < Duration::from_secs(1) || rc.timeout > Duration::from_secs(600) {
                return Err(invalid(
                    key("ready_check.timeout"),
                    "must be between 1s and 10m",
                ));
            }
            if rc.decline_cooldown > Duration::from_secs(24 * 3600) {
                return Err(invalid(
                    key("ready_check.decline_cooldown"),
                    "must be at most 24h (0s: no cooldown)",
                ));
            }
            if !(rc.isolate_share > 0.0 && rc.isolate_share <= 1.0) {
                return Err(invalid(
                    key("ready_check.isolate_share"),
                    "must be above 0 and at most 1",
                ));
            }
            if rc.isolate_half_life < Duration::from_secs(60)
                || rc.isolate_half_life > Duration::from_secs(24 * 3600)
            {
                return Err(invalid(
                    key("ready_check.isolate_half_life"),
                    "must be between 1m and 24h",
                ));
            }
        }
        Ok(())
    }

    /// Role names short enough to store.
    fn validate_roles(&self, key: impl Fn(&str) -> String) -> Result<(), ConfigError> {
        for role in &self.model.roles {
            if role.chars().count() > 64 {
                return Err(invalid(
                    key("roles"),
                    format!("{role:?}: longer than 64 characters"),
                ));
            }
        }
        Ok(())
    }
}

/// The model's own rules, checked by the core. The message starts with the key inside the
/// queue table.
fn validate_model(model: &QueueModel) -> Result<(), String> {
    model.validate().map_err(|e| match e {
        matchmaker_optimizer::PoolError::Model(message) => message,
        other => other.to_string(),
    })
}
