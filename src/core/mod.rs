//! The pure compute core: players, parties, matches, score factors, team split, local
//! search and the solver. No I/O, no async, no clock except the `Deadline` it is handed;
//! deterministic for a seed.

pub mod deadline;
pub mod error;
pub mod factors;
pub mod index;
pub mod model;
pub mod pool;
pub mod round;
pub mod score;
pub mod search;
pub mod solver;
pub mod split;

pub use deadline::{Budget, Deadline, StopReason};
pub use error::PoolError;
pub use model::{Network, QueueModel, RoleMode, Weights};
pub use pool::{PastMatch, Player, Pool};
pub use round::{MatchOutcome, Rejection, RoundOutcome, SolveStats};
pub use solver::{SolveOptions, Strategy, solve};
