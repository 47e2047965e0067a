//! Who fails the ready check pays for it, not the players they were matched with.
//!
//! Two rules, applied to a round's pool before the solve (`round::prepare`), from what
//! the ready check's resolution recorded (`db::ready_check`):
//!
//! - a login whose players keep failing their ready checks (declining, or not answering)
//!   has its players matched among themselves: they carry the login as an attribute the
//!   round adds to the queue's `same` filter, so its failures cancel only its own
//!   matches. A fresh player id resets nothing: the record is the login's.
//! - a player queued again because another login's player failed their match is treated
//!   as past `max_wait`: the next rounds place them whenever any valid match can.

use std::collections::HashSet;
use std::sync::Arc;

use crate::config::QueueConfig;
use crate::db::Snapshot;
use matchmaker_optimizer::{Attribute, Pool};

/// The attribute that keeps a failing login's players among themselves.
pub const LOGIN_ATTRIBUTE: &str = "matchmaker:login";

/// Apply both rules to `pool`. Returns the queue's config with the login filter added
/// when a login of the pool is failing (the round solves and records with it), None
/// when the config stands.
pub fn apply(
    config: &QueueConfig,
    snapshot: &Snapshot,
    pool: &mut Pool,
    failing: &[String],
) -> Option<Arc<QueueConfig>> {
    let bounced: HashSet<&str> = snapshot
        .entries
        .iter()
        .filter(|e| e.bounced)
        .map(|e| e.player_id.as_str())
        .collect();
    let failing: HashSet<&str> = failing.iter().map(String::as_str).collect();
    let owner_of: std::collections::HashMap<&str, &str> = snapshot
        .entries
        .iter()
        .filter(|e| failing.contains(e.owner.as_str()))
        .map(|e| (e.player_id.as_str(), e.owner.as_str()))
        .collect();
    if let Some(now) = pool.now {
        let overdue_at =
            now - chrono::Duration::from_std(config.model.max_wait).unwrap_or_default();
        for p in pool
            .players
            .iter_mut()
            .filter(|p| bounced.contains(p.id.as_str()))
        {
            p.enqueued_at = Some(p.enqueued_at.map_or(overdue_at, |at| at.min(overdue_at)));
        }
    }
    if owner_of.is_empty() {
        return None;
    }
    for p in &mut pool.players {
        if let Some(owner) = owner_of.get(p.id.as_str()) {
            p.attributes.insert(
                LOGIN_ATTRIBUTE.to_string(),
                Attribute::One(owner.to_string()),
            );
        }
    }
    let mut isolated = config.clone();
    if !isolated
        .model
        .filters
        .same
        .iter()
        .any(|a| a == LOGIN_ATTRIBUTE)
    {
        isolated
            .model
            .filters
            .same
            .push(LOGIN_ATTRIBUTE.to_string());
    }
    Some(Arc::new(isolated))
}
