//! The lab: a demo (`demo`), a load generator playing the simulated population
//! (`simulate`, `sim`), fault injection (`soak`), a database failover and the other
//! database failures (the monitor lost, a standby behind, both nodes lost) on a real
//! pg_auto_failover formation (`failover`, `failure_modes`, `formation`), replicas cut
//! off from the database by a network partition (`partition`, `route`), a measured peak
//! evening (`peak`) and benchmarks (`bench`, `bench_db`), behind the `matchmaker-lab` binary. Each command
//! takes plain options. It is built on the daemon's crate (`matchmaker`), which never
//! imports it, and on the pure population (`matchmaker-population`); `fleet` (daemon
//! replicas as processes) and `load` (the client load) are its building blocks.

pub mod bench;
pub mod bench_db;
pub mod bench_lobby;
pub mod demo;
pub mod failover;
pub mod failure_modes;
pub mod formation;
pub mod partition;
pub mod peak;
pub mod route;
pub mod sim;
pub mod simulate;
pub mod soak;
pub mod standby_behind;
pub mod standby_freeze;

use std::future::Future;
use std::path::PathBuf;

use anyhow::Context;
use matchmaker::ops::shell::{self, Signals};

/// Run a command that starts daemon replicas (soak, peak, failover) to its end in the
/// product's command shell: a stop signal drops the command, and with it the replicas,
/// servers and directories it started. The replicas log to their files; the lab's own
/// log only warns (RUST_LOG overrides), and sqlx's lines stay out: a restart's
/// connection errors are expected.
pub(crate) fn run_beside_replicas(
    command: impl Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,sqlx=error"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(matchmaker::ops::term::stderr_colors())
        .try_init();
    shell::run(Signals::All, async |stop| stop.cancel(command).await)
}

/// The product binary `matchmaker` beside the running lab binary: soak and peak run the
/// daemon replicas as the binary operators deploy, not as the lab.
pub fn product_binary() -> anyhow::Result<PathBuf> {
    let lab = std::env::current_exe().context("locating this binary")?;
    let exe = lab.with_file_name(format!("matchmaker{}", std::env::consts::EXE_SUFFIX));
    anyhow::ensure!(
        exe.is_file(),
        "{} is missing: the replicas run the product binary (cargo build --release --bin matchmaker)",
        exe.display()
    );
    Ok(exe)
}
