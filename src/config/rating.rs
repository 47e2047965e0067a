//! `[queues.NAME.rating]`: the built-in rating of a ranked queue. A result reported for
//! one of its matches moves its players' ratings, and an enqueue with `skill => NULL`
//! plays at the player's rating.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use matchmaker_optimizer::rating::{RatingModel, RatingSystem};

/// One queue's rating: the system, the pool it shares with other queues, and the scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatingConfig {
    /// `weng_lin` (OpenSkill's Bradley-Terry model, the default), `trueskill` or
    /// `glicko2`.
    #[serde(default = "default_system")]
    pub system: RatingSystem,
    /// Queues with the same pool share one rating per player (ranked 3v3 in two
    /// regions, say); they must agree on the rest of this table. Default: the queue's
    /// name.
    #[serde(default)]
    pub pool: Option<String>,
    /// A new player's rating, on the queue's skill scale.
    #[serde(default = "default_initial")]
    pub initial: f64,
    /// A new player's uncertainty (the largest any player has), on the same scale.
    #[serde(default = "default_uncertainty")]
    pub initial_uncertainty: f64,
    /// Skill points a player needs over another to win about two in three. Default:
    /// half the initial uncertainty.
    #[serde(default)]
    pub beta: Option<f64>,
    /// TrueSkill's chance of a draw (the other systems read draws from the result).
    #[serde(default = "default_draw_probability")]
    pub draw_probability: f64,
    /// An idle player's uncertainty grows back to the initial one over this time.
    #[serde(with = "humantime_serde", default = "default_idle_to_initial")]
    pub idle_to_initial: Duration,
}

fn default_system() -> RatingSystem {
    RatingSystem::WengLin
}
fn default_initial() -> f64 {
    1500.0
}
fn default_uncertainty() -> f64 {
    350.0
}
fn default_draw_probability() -> f64 {
    0.1
}
fn default_idle_to_initial() -> Duration {
    Duration::from_secs(180 * 86_400)
}

impl RatingConfig {
    /// The pool's name: `pool`, or the queue's own name.
    pub fn pool_name<'a>(&'a self, queue: &'a str) -> &'a str {
        self.pool.as_deref().unwrap_or(queue)
    }

    /// The core's model of this rating.
    pub fn model(&self) -> RatingModel {
        RatingModel {
            system: self.system,
            initial: self.initial,
            initial_uncertainty: self.initial_uncertainty,
            beta: self.beta.unwrap_or(self.initial_uncertainty / 2.0),
            draw_probability: self.draw_probability,
        }
    }

    /// What makes two queues' ratings the same pool: everything but the pool's name.
    pub fn scale_of_pool(&self) -> RatingConfig {
        RatingConfig {
            pool: None,
            ..self.clone()
        }
    }

    /// Every rule: `key` names a key of the table.
    pub fn validate(&self, key: impl Fn(&str) -> String) -> Result<(), (String, String)> {
        let bad = |k: &str, problem: &str| Err((key(k), problem.to_string()));
        if let Some(pool) = &self.pool
            && (pool.is_empty() || pool.len() > 64 || pool.chars().any(char::is_control))
        {
            return bad("pool", "must be 1-64 characters without control characters");
        }
        if !(self.initial.is_finite() && self.initial.abs() <= 1e6) {
            return bad("initial", "must be a finite number in [-1000000, 1000000]");
        }
        if !(self.initial_uncertainty.is_finite()
            && self.initial_uncertainty > 0.0
            && self.initial_uncertainty <= 1e6)
        {
            return bad("initial_uncertainty", "must be a number in (0, 1000000]");
        }
        if let Some(beta) = self.beta
            && !(beta.is_finite() && beta > 0.0 && beta <= 1e6)
        {
            return bad("beta", "must be a number in (0, 1000000]");
        }
        if !(self.draw_probability >= 0.0 && self.draw_probability < 1.0) {
            return bad("draw_probability", "must be in [0, 1)");
        }
        if self.idle_to_initial < Duration::from_secs(3600) {
            return bad("idle_to_initial", "must be at least 1h");
        }
        Ok(())
    }
}
