//! The optimizer's tests, one binary: the input contract, each factor, the formats, who
//! may meet whom on realistic pools, and the search (oracle, brute-force optimum,
//! properties). Realistic pools come from `matchmaker-population`; nothing here builds
//! the daemon. Run them with debug assertions on (`cargo test -p matchmaker-optimizer`):
//! the solver then checks that no returned match breaks a hard rule.

mod contract;
mod factors;
mod formats;
mod lobby;
mod maps;
mod meet;
mod rating;
mod search;

use matchmaker_optimizer::QueueModel;

/// The keys of a `[queues.NAME]` table that are the daemon's, not the model's.
const DAEMON_TABLES: [&str; 6] = [
    "round",
    "tickets",
    "backfill",
    "limits",
    "ready_check",
    "rating",
];

/// A queue's model as the shipped config (`config/matchmaker.toml`) gives it: its
/// `[queues.NAME]` table without the daemon's sub-tables, as the daemon reads it.
pub fn shipped_model(queue: &str) -> QueueModel {
    let config: toml::Table = include_str!("../../../config/matchmaker.toml")
        .parse()
        .expect("the shipped config is TOML");
    let Some(toml::Value::Table(mut table)) = config["queues"].get(queue).cloned() else {
        panic!("no [queues.{queue}] in the shipped config");
    };
    for key in DAEMON_TABLES {
        table.remove(key);
    }
    table
        .try_into()
        .expect("the shipped queue is a valid model")
}
