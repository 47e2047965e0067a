//! The thirteen match-score factors, one file each. Every factor maps a match (and its team
//! split) to a score in [0, 1], 1 being perfect. The match score is the weighted average
//! of the enabled factors (weights in `[queues.NAME.weights]`, the Awesomenauts matchmaker post); factors that do
//! not apply to a queue (hosts on dedicated servers, roles in a queue without roles) are
//! left out of the average.
//!
//! | factor (`weights.*`) | formula | keys | seed |
//! |---|---|---|---|
//! | `equal_teams` | curve(max team skill - min team skill) | `equal_teams.*`, `skill.*` | 003, 001 |
//! | `equal_players` | curve(mean pairwise diff or v_q) | `equal_players.*`, `skill.*` | 003, 001 |
//! | `indistinguishable_teams` | exp(-sum KL(team \|\| match) / scale) | `indistinguishable_teams.*` | 000 |
//! | `premades` | table(relative difference of premade bonds) | `premades.table` | 003 |
//! | `enemy_ping` | mean perceived score over opponent pairs (dedicated: over players at the region) | `ping.*` | 003 |
//! | `opponent_variation` | 1 - mean repeat cost over all pairs | `opponent_variation.*` | 003 |
//! | `two_hosts` | 1 / `one_host_score` / 0 for >= 2 / 1 / 0 possible hosts | `hosts.*` | 003 |
//! | `side_preference` | I(side; team) / H(side) | — | 000 |
//! | `roles` | filled role slots / all role slots | `roles`, `role_mode` | 001 |
//! | `predicted_fairness` | 1 - \|P(win) - P(lose)\| (Weng-Lin) | `predicted_fairness.*` | — |
//! | `member_count_difference` | 1 - (largest - smallest team) / largest team; flexible queues only | `alliance.*` | 002 |
//! | `language` | teammate pairs sharing a language / teammate pairs with known languages; with `filters.language` only | `filters.language` | 003 |
//! | `maps` | mean over players of (prefers the map + not played lately) / 2, on the best map nobody vetoed; with `maps.pool` only | `maps.*` | — |
//!
//! See each file for the exact formula.

pub mod enemy_ping;
pub mod equal_players;
pub mod equal_teams;
pub mod hosts;
pub mod indistinguishable;
pub mod language;
pub mod maps;
pub mod member_count_difference;
pub mod opponent_variation;
pub mod predicted_fairness;
pub mod premades;
pub mod roles;
pub mod side_preference;

/// Factor order used in arrays and output.
pub const NAMES: [&str; 13] = [
    "equal_teams",
    "equal_players",
    "indistinguishable_teams",
    "premades",
    "enemy_ping",
    "opponent_variation",
    "two_hosts",
    "side_preference",
    "roles",
    "predicted_fairness",
    "member_count_difference",
    "language",
    "maps",
];

pub const EQUAL_TEAMS: usize = 0;
pub const EQUAL_PLAYERS: usize = 1;
pub const INDISTINGUISHABLE: usize = 2;
pub const PREMADES: usize = 3;
pub const ENEMY_PING: usize = 4;
pub const OPPONENT_VARIATION: usize = 5;
pub const TWO_HOSTS: usize = 6;
pub const SIDE_PREFERENCE: usize = 7;
pub const ROLES: usize = 8;
pub const PREDICTED_FAIRNESS: usize = 9;
pub const MEMBER_COUNT_DIFFERENCE: usize = 10;
pub const LANGUAGE: usize = 11;
pub const MAPS: usize = 12;
/// Number of factors.
pub const COUNT: usize = 13;
