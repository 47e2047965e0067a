//! The queue model: what a match looks like in one queue (format, network, roles) and how
//! its quality is scored (weights and factor parameters). Pure, validated data; it is the
//! `[queues.NAME]` table of `config/matchmaker.toml` minus the daemon's `round` table.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Match format and scoring of one queue. `Default` is the Awesomenauts format of seed
/// 003: two teams of three, peer-to-peer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueueModel {
    /// Number of teams per match (>= 2).
    pub teams: usize,
    /// Players per team (>= 1).
    pub team_size: usize,
    pub network: Network,
    /// Role-restricted queue (seed 001): each team fills every role listed here, once.
    /// Empty: no roles.
    pub roles: Vec<String>,
    /// `strict`: a team must fill every role (hard constraint); `soft`: scored by the
    /// roles factor.
    pub role_mode: RoleMode,
    /// A player waiting longer than this must be placed whenever any valid match can
    /// include them (seed 003's max-wait fallback).
    #[serde(with = "humantime_serde")]
    pub max_wait: Duration,
    /// Seed 001's time-sensitive priority g = f + beta * wait: score credit per minute
    /// of wait for including a player in a match rather than leaving them unmatched.
    pub wait_priority_per_minute: f64,
    pub weights: Weights,
    // The core helper adds the factor parameter tables here (skill cap, curves, p, q,
    // KL prior, premade table, ping curve, history depth/decay, host threshold, ...).
}

impl Default for QueueModel {
    fn default() -> Self {
        QueueModel {
            teams: 2,
            team_size: 3,
            network: Network::PeerToPeer,
            roles: Vec::new(),
            role_mode: RoleMode::Strict,
            max_wait: Duration::from_secs(10 * 60),
            wait_priority_per_minute: 0.002,
            weights: Weights::default(),
        }
    }
}

impl QueueModel {
    pub fn players_per_match(&self) -> usize {
        self.teams * self.team_size
    }
}

/// How players connect: peer-to-peer (one player hosts, seed 003) or dedicated servers
/// in regions (the match is placed in the region that minimises the worst latency).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    #[default]
    PeerToPeer,
    Dedicated,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleMode {
    #[default]
    Strict,
    Soft,
}

/// Weights of the match-score factors (seed 003's weighted average). A weight of 0
/// disables the factor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Weights {
    pub equal_teams: f64,
    pub equal_players: f64,
    pub indistinguishable_teams: f64,
    pub premades: f64,
    pub enemy_ping: f64,
    pub opponent_variation: f64,
    pub two_hosts: f64,
    pub side_preference: f64,
    pub roles: f64,
    pub predicted_fairness: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            equal_teams: 4.0,
            equal_players: 2.0,
            indistinguishable_teams: 0.0,
            premades: 1.0,
            enemy_ping: 3.0,
            opponent_variation: 0.5,
            two_hosts: 1.0,
            side_preference: 0.0,
            roles: 0.0,
            predicted_fairness: 0.0,
        }
    }
}
