//! A round-based matchmaker: players queue in PostgreSQL, a daemon matches the whole pool
//! at once every few minutes (seed 003, Awesomenauts), and writes the matches back.
//!
//! Layers, dependencies pointing inward only (see `../shared/guide/ARCHITECTURE.md`):
//! `core` (pure optimization) <- `db` (PostgreSQL) <- `daemon` (rounds, leases, config
//! reload) <- `cli` (subcommands).

pub mod cli;
pub mod config;
pub mod core;
pub mod daemon;
pub mod db;
pub mod report;
pub mod sim;
