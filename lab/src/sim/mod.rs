//! Simulation: a realistic player population (pure, the `matchmaker-population` crate:
//! cities with real latencies, skills, parties, time of day) and, on top of it, a load
//! generator that plays those players against a running matchmaker through its database.

pub use matchmaker_population::{population, shown_countdown, world};

pub mod game_servers;
pub mod peak;
pub mod peak_figures;
pub mod rating_figures;
pub mod simulator;
