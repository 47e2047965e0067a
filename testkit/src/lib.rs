//! What the matchmaker's tests and its lab share, by actor:
//!
//! * [`postgres`]: the private PostgreSQL for tests and a fresh migrated database per test,
//!   logins in the product's roles;
//! * [`client`]: a game backend's calls (`enqueue`, `enqueue_party`, `cancel`,
//!   `keep_alive`, `player_status`, ready-check answers), one helper per call;
//! * [`command_line`]: the binaries run as a user runs them, with a time limit;
//! * [`server`]: a game server's backfill requests;
//! * [`daemon`]: queues published from a config, workers and single rounds on a manual
//!   clock;
//! * [`invariants`]: what every database test may assert, and a fingerprint of the tables;
//! * [`audit`]: the contract's invariants as counts, after crashes and races (the soak's);
//! * [`fleet`] and [`load`]: daemon replicas as child processes, and a client load whose
//!   every answer is logged for the audit (the soak's and the fault tests');
//! * [`stall`]: a writer stopped inside its transaction, for the fault tests to kill.
//!
//! Tests `use matchmaker_testkit::*`; the modules' items are re-exported here.

pub mod audit;
pub mod client;
pub mod command_line;
pub mod daemon;
pub mod fleet;
pub mod invariants;
pub mod load;
pub mod postgres;
pub mod server;
pub mod stall;
pub mod time_limit;

pub use client::*;
pub use daemon::*;
pub use invariants::*;
pub use postgres::*;
pub use server::*;
pub use stall::*;

/// Keeps timed tests apart from load. Tests that assert wall-clock bounds (lease
/// takeovers, solve budgets, a peak evening's lateness, windows timed on the database
/// clock) take it exclusively (`TIMING.write()`), so no other timed test and no
/// load-generating test runs beside them; tests that generate load (daemon replicas,
/// the demo, building the example client, hundreds of solves) take it shared
/// (`TIMING.read()`), so they still run beside each other and beside the untimed tests.
/// On a 2-core CI machine a hand-over timed while other replicas keep both cores busy
/// measures the machine, not the daemon.
pub static TIMING: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());
