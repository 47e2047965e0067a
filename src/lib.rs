//! A round-based matchmaker: players queue in PostgreSQL, a daemon matches the whole pool
//! at once every few minutes (the Awesomenauts matchmaker post), and writes the matches
//! back.
//!
//! The optimization itself is the `matchmaker-optimizer` crate (`optimizer/`), pure and
//! free of I/O. This crate is the product around it, its layers depending inward only:
//! `config` (typed, validated settings) and `db` (PostgreSQL: snapshot, commit, leases)
//! under `daemon` (rounds, leadership, reload, metrics) under `cli` (the subcommands).
//! `docs/` describes each for its reader.

pub mod cli;
pub mod config;
pub mod daemon;
pub mod db;
pub mod report;
pub mod sim;
