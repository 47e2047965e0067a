//! The input of one round: the queued players, their parties and their recent history.
//!
//! These are plain data, as they arrive from JSON (`matchmaker optimize`) or from the
//! database snapshot. Validation turns them into the solver's internal form.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One queued player, as enqueued by a client. Only `id` and `skill` are required.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Player {
    pub id: String,
    /// Premade group: players sharing a party id always play on one team (AccelByte's rebalance guide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub party: Option<String>,
    pub skill: f64,
    /// Rating uncertainty (TrueSkill / Weng-Lin sigma), for the predicted-fairness factor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_sigma: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enqueued_at: Option<DateTime<Utc>>,
    /// Round-trip time in ms to each region / relay / datacenter.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub latencies: BTreeMap<String, f64>,
    /// Measured round-trip time in ms to other players, by player id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub peer_pings: BTreeMap<String, f64>,
    /// Roles this player accepts (role-restricted queues, Alman and McKay). Empty: any role.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// Side preference in [0, 1] (the mutual-information balancing note): 0 prefers the first team, 1 the second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<f64>,
    /// What the queue's filters read (`[queues.NAME.filters]`): game build, platform,
    /// crossplay opt-out, languages. Names and values are short strings.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, Attribute>,
    /// Pool ids of the players this player avoids: a hard rule, kept in the queue's
    /// `avoids.scope` (never in one match, or never on one team).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub avoids: Vec<String>,
}

/// One attribute of a player: a short string (`"build": "1.4.2"`) or a list of them
/// (`"language": ["en", "de"]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Attribute {
    One(String),
    Many(Vec<String>),
}

impl Attribute {
    /// The value or values, as a slice.
    pub fn values(&self) -> &[String] {
        match self {
            Attribute::One(v) => std::slice::from_ref(v),
            Attribute::Many(vs) => vs,
        }
    }
}

/// A past match, used for the opponent-variation factor (the Awesomenauts matchmaker post).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PastMatch {
    pub teams: Vec<Vec<String>>,
    pub at: DateTime<Utc>,
    /// The map it was played on (queues with maps), for `maps.repeat_depth`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<String>,
}

/// Everything one round needs to know about its players.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    /// Queue (game mode) name; chooses the queue model from the config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// The round's clock: waits are measured up to this instant. Defaults to the latest
    /// `enqueued_at` in the pool, so a pool file alone gives reproducible results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<DateTime<Utc>>,
    pub players: Vec<Player>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<PastMatch>,
}

/// A party that cannot be placed: its id, the member at fault and why.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokenParty {
    pub party: String,
    pub member: String,
    pub reason: String,
}

/// Take the members of broken parties out of `players` and return their rejections: a
/// party is placed whole or not at all (AccelByte's rebalance guide: a party plays on one team together), so
/// a member the round cannot use (a malformed row, a refused field) keeps it all out.
pub fn reject_parties(players: &mut Vec<Player>, broken: &[BrokenParty]) -> Vec<crate::Rejection> {
    let mut cause: std::collections::HashMap<&str, &BrokenParty> = std::collections::HashMap::new();
    for b in broken {
        cause.entry(b.party.as_str()).or_insert(b);
    }
    let mut mates = Vec::new();
    players.retain(|p| {
        let Some(b) = p.party.as_deref().and_then(|party| cause.get(party)) else {
            return true;
        };
        if p.id != b.member {
            mates.push(crate::Rejection {
                id: p.id.clone(),
                reason: format!("party member {} was rejected ({})", b.member, b.reason),
            });
        }
        false
    });
    mates
}
