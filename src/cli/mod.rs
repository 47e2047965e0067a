//! Subcommands, one file each. Wiring and telemetry live here; the work lives in `core`,
//! `db` and `daemon`.

pub mod bench;
pub mod bench_db;
pub mod demo;
pub mod migrate;
pub mod optimize;
pub mod run;
pub mod simulate;
pub mod status;
