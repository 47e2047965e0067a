//! A realistic simulated player population (pure, no I/O): the world players live in
//! ([`world`]: cities, measured round-trip times, datacenter regions, from the files in
//! `data/`), the players and pools drawn from it ([`population`]), their map choices
//! ([`map_choices`]), and what a player is shown while queued ([`shown_countdown`], the
//! measure of a countdown).
//!
//! The lab plays these players against a running matchmaker; the optimizer's tests and
//! bench, and the daemon's tests, draw realistic pools from it without building the
//! daemon.

pub mod map_choices;
pub mod population;
pub mod shown_countdown;
pub mod world;

pub use population::{Population, PopulationSpec};
