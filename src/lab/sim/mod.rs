//! Simulation: a realistic player population (pure: cities with real latencies, skills,
//! parties, time of day) and, on top of it, a load generator that plays those players
//! against a running matchmaker through its database.

pub mod peak;
pub mod peak_figures;
pub mod population;
pub mod shown_countdown;
pub mod simulator;
pub mod world;
