//! One queue's config: the core's model and the daemon's tables beside it, as the JSON
//! and TOML stored with every round, and its version hash.

use serde::Serialize;

use matchmaker_optimizer::QueueModel;

use super::{
    BackfillConfig, LimitsConfig, RatingConfig, ReadyCheckConfig, RoundConfig, ServersConfig,
    TicketConfig,
};

/// One queue: the core's model (`[queues.NAME]`), when / how its rounds run
/// (`[queues.NAME.round]`) and what clients may enqueue (`[queues.NAME.tickets]`).
#[derive(Debug, Clone, PartialEq)]
pub struct QueueConfig {
    pub model: QueueModel,
    pub round: RoundConfig,
    pub tickets: TicketConfig,
    pub backfill: BackfillConfig,
    pub limits: LimitsConfig,
    /// `[queues.NAME.ready_check]`; None (no table): a round's matches are final.
    pub ready_check: Option<ReadyCheckConfig>,
    /// `[queues.NAME.rating]`; None (no table): skill is the client's to give, and
    /// results move no rating.
    pub rating: Option<RatingConfig>,
    /// `[queues.NAME.servers]`; None (no table): a dedicated match names its region and
    /// the game backend finds it a server.
    pub servers: Option<ServersConfig>,
}

impl QueueConfig {
    /// `min_pool`, defaulting to one match worth of players of the smallest format (a
    /// flexible queue's round can form a smaller match; waiting for a full one would hold
    /// back the very players the smaller formats are for).
    pub fn min_pool(&self) -> usize {
        self.round
            .min_pool
            .unwrap_or_else(|| self.model.min_players_per_match())
    }

    /// Recent matches per player the snapshot reads (see `round.history_matches`).
    pub fn history_matches(&self) -> usize {
        let mut depth = self.model.opponent_variation.depth;
        if !self.model.maps.is_absent() {
            depth = depth.max(self.model.maps.repeat_depth);
        }
        self.round.history_matches.unwrap_or(depth).max(depth)
    }

    /// The effective config as JSON: the `[queues.NAME]` table with its `round` table,
    /// every default filled in. Stored with each round.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(&self.model).expect("queue model serializes");
        let round = serde_json::to_value(&self.round).expect("round config serializes");
        let tickets = serde_json::to_value(&self.tickets).expect("ticket config serializes");
        if let serde_json::Value::Object(map) = &mut value {
            map.insert("round".into(), round);
            map.insert("tickets".into(), tickets);
            // Only when set: the stored config (and hash) of a queue without it is
            // unchanged.
            if self.backfill != BackfillConfig::default() {
                let backfill =
                    serde_json::to_value(&self.backfill).expect("backfill config serializes");
                map.insert("backfill".into(), backfill);
            }
            if self.limits != LimitsConfig::default() {
                let limits = serde_json::to_value(&self.limits).expect("limits serialize");
                map.insert("limits".into(), limits);
            }
            if let Some(ready_check) = &self.ready_check {
                let ready_check =
                    serde_json::to_value(ready_check).expect("ready check config serializes");
                map.insert("ready_check".into(), ready_check);
            }
            if let Some(rating) = &self.rating {
                let rating = serde_json::to_value(rating).expect("rating config serializes");
                map.insert("rating".into(), rating);
            }
            if let Some(servers) = &self.servers {
                let servers = serde_json::to_value(servers).expect("servers config serializes");
                map.insert("servers".into(), servers);
            }
        }
        value
    }

    /// The effective config as a config file that holds this queue only (named `name`,
    /// every default written out), which `Config::from_toml_str`, `optimize --config` and
    /// `replay --config` read back to the same [`QueueConfig`] (and the same hash).
    pub fn to_toml(&self, name: &str) -> String {
        let mut queue = without_nulls(self.to_json());
        // The round table last: TOML writes plain keys before sub-tables either way, but
        // a reader finds the scoring keys first.
        if let serde_json::Value::Object(map) = &mut queue
            && let Some(round) = map.remove("round")
        {
            map.insert("round".into(), round);
        }
        let file = serde_json::json!({
            "default_queue": name,
            "queues": { name: queue },
        });
        let text = toml::to_string(&file).expect("a queue config is representable in TOML");
        format!(
            "# The effective config of queue {name} as a round used it (every default \
             written out).\n{text}"
        )
    }

    /// A short version tag of the effective config: FNV-1a 64 of its JSON (hex). Stable
    /// across builds (unlike std's hasher), which is all a version tag needs.
    pub fn hash(&self) -> String {
        let json = self.to_json().to_string();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in json.bytes() {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{h:016x}")
    }
}

/// TOML has no null: optional keys that are unset are left out.
fn without_nulls(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => map
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k, without_nulls(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        serde_json::Value::Array(items) => items.into_iter().map(without_nulls).collect(),
        other => other,
    }
}

impl Serialize for QueueConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn a_queue_config_reads_back_from_its_toml() {
        let config = Config::embedded_default();
        for (name, queue) in &config.queues {
            let mut queue = queue.clone();
            queue.round.restarts = Some(4);
            queue.model.equal_teams.p = matchmaker_optimizer::model::Exponent::INFINITE;
            let text = queue.to_toml(name);
            let back = Config::from_toml_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(back.default_queue, *name);
            assert_eq!(back.queues[name], queue, "{text}");
            assert_eq!(back.queues[name].hash(), queue.hash());
        }
    }
}
