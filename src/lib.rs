//! A round-based matchmaker: players queue in PostgreSQL, a daemon matches the whole pool
//! at once every few minutes (the Awesomenauts matchmaker post), and writes the matches
//! back.
//!
//! The optimization itself is the `matchmaker-optimizer` crate (`optimizer/`), pure and
//! free of I/O. This crate is the product around it, its layers depending inward only:
//! `db` (PostgreSQL: snapshot, commit, leases) and `config` (typed, validated settings),
//! neither knowing the other, under `daemon` (rounds, leadership, reload, metrics),
//! `report` and `ops` (the operators' commands as functions) under `cli` (the
//! subcommands' arguments and rendering); `docs/development.md` says why, and the crate
//! graph holds what may depend on what (`testkit/tests/crate_graph.rs`).
//! The lab (simulator, soak, peak, benchmarks) is the `matchmaker-lab` crate (`lab/`),
//! built on this one; nothing here imports it. `docs/` describes each for its reader.

pub mod cli;
pub mod config;
pub mod daemon;
pub mod db;
pub mod ops;
pub mod report;
