//! The search: constructions, moves, delta scoring and the strategies.

pub mod anneal;
pub mod awesomenauts;
pub mod baselines;
pub mod construct;
pub mod moves;
pub mod neighbours;
pub mod short;
pub mod state;
pub mod threshold;
