//! The pure compute core: players, parties, matches, score factors, team split, local
//! search and the solver. No I/O, no async, no clock except the `Deadline` it is handed;
//! deterministic for a seed.

pub mod deadline;
pub mod error;
pub mod model;
pub mod pool;
pub mod round;
pub mod solver;

pub use deadline::{Budget, Deadline, StopReason};
pub use error::PoolError;
pub use model::{Network, QueueModel, RoleMode, Weights};
pub use pool::{PastMatch, Player, Pool};
pub use round::{MatchOutcome, Rejection, RoundOutcome, SolveStats};
pub use solver::{SolveOptions, Strategy, solve};
