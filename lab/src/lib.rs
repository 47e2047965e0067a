//! The lab: a simulated player population and load generator, fault injection (`soak`),
//! a measured peak evening (`peak`) and benchmarks (`bench`, `bench_db`), behind the
//! `matchmaker-lab` binary. Each command takes plain options; the daemon and the
//! operators' commands never import this module.

pub mod bench;
pub mod bench_db;
pub mod demo;
pub mod fleet;
pub mod load;
pub mod peak;
pub mod sim;
pub mod simulate;
pub mod soak;

use std::path::PathBuf;

use anyhow::Context;

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
