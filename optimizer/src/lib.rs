//! The pure compute core: players, parties, matches, score factors, team split, local
//! search and the solver. No I/O, no async, no clock except the `Deadline` it is handed;
//! deterministic for a seed.
//!
//! One round flows through these files, in order:
//! - `pool` (input) -> `index` (validation, `PoolError` / `Rejection`, indexed arrays);
//! - `model` (the queue's format, weights and factor parameters, validated);
//! - `split` (every team split of every party shape, enumerated once per queue);
//! - `factors` (the thirteen factors, one file each) and `score` (a match's best split, the
//!   lexicographic round objective: overdue players placed, matches, quality; `score::rules`:
//!   the hard rules of who may meet whom, hosts, relay and the quality floors);
//! - `search` (constructions, exchange moves, delta scoring with a from-scratch oracle,
//!   the `default` annealer, `awesomenauts`, `chunk`, `greedy`);
//! - `lobby` (big formats, up to 100 players per match: lobby formation, squads, the
//!   two-team split search, the first-come baseline);
//! - `solver` (`solve`: the pool cut by the `same` filter, restarts on rayon threads, per-restart Xoshiro256PlusPlus
//!   streams, best so far with the stop reason) -> `round` (output).

pub mod backfill;
pub mod deadline;
pub mod error;
pub mod factors;
pub mod index;
pub mod left_over;
pub mod lobby;
pub mod maps;
pub mod model;
pub mod pool;
pub mod rating;
pub mod rebalance;
pub mod round;
pub mod score;
pub mod search;
pub mod servers;
pub mod solver;
pub mod split;

pub use deadline::{Budget, Deadline, StopReason};
pub use error::PoolError;
pub use left_over::{LeftOver, LeftOverKind, explain_left_over};
pub use model::{
    AvoidParams, AvoidScope, FilterParams, FloorStep, Network, QueueModel, RoleMode, Weights,
};
pub use pool::{Attribute, BrokenParty, PastMatch, Player, Pool, reject_parties};
pub use round::{MatchOutcome, Rejection, RoundOutcome, SolveStats};
pub use solver::{SolveOptions, Strategy, solve};
