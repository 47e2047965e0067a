//! The lab's tests, one binary: the simulator against a running daemon, the demo, a
//! database failover and the other database failures on a real formation, replicas cut
//! off by a network partition, the peak evening, `bench`, README's local trial and the
//! binary's command line.

mod bench;
mod cli;
mod failover;
mod failure_modes;
mod partition;
mod peak;
mod servers;
mod sim;
mod sim_demo;
mod trial;

// The test kit (a PostgreSQL per run, a database per test, client logins).
use matchmaker_testkit as support;

use std::path::PathBuf;
use std::sync::OnceLock;

/// The product binary `matchmaker` the replicas of `peak` run, built by cargo into this
/// profile's directory (a dependency's binaries are not built for this crate's tests).
/// Built as `cargo test --workspace` builds it, so that after that command it is up to
/// date and nothing is compiled again (a build of the `matchmaker` package alone unifies
/// other features and rebuilds the dependencies).
pub fn product_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let test = std::env::current_exe().expect("the test binary's path");
            let profile_dir = test
                .parent()
                .and_then(|deps| deps.parent())
                .expect("the test binary is in <target>/<profile>/deps");
            let exe = profile_dir.join(format!("matchmaker{}", std::env::consts::EXE_SUFFIX));
            let mut build = std::process::Command::new(env!("CARGO"));
            build.args(["test", "--no-run", "--workspace", "--quiet"]);
            if !cfg!(debug_assertions) {
                build.arg("--release");
            }
            let status = build
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("run cargo build");
            assert!(status.success(), "cargo test --no-run --workspace failed");
            assert!(
                exe.is_file(),
                "{} is missing after the build",
                exe.display()
            );
            exe
        })
        .clone()
}
