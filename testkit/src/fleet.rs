//! A fleet of daemon replicas as child processes (`matchmaker run`, killed when dropped)
//! and what the database says of them: leases, terms, committed rounds. The soak and the
//! peak evening run on it, and so do the daemon's fault tests (`tests/it/faults.rs`).

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::PgPool;

use matchmaker::db::DbError;

/// How to start one replica: `exe run --no-migrate --config .. --database-url ..
/// --holder <name>.<incarnation> [--clock-skew ..]`, its stderr appended to
/// `<log_dir>/<name>.log`.
#[derive(Debug, Clone)]
pub struct ReplicaSpec {
    /// The `matchmaker` binary ([`super::product_binary`], or cargo's
    /// `CARGO_BIN_EXE_matchmaker` in tests).
    pub exe: PathBuf,
    pub database_url: String,
    pub config: PathBuf,
    pub name: String,
    /// `--clock-skew` (e.g. "20s").
    pub clock_skew: Option<String>,
    pub log_dir: PathBuf,
}

/// A daemon replica running as a child process. Dropping it kills the process (SIGKILL),
/// so a failing test leaves nothing running.
#[derive(Debug)]
pub struct Replica {
    spec: ReplicaSpec,
    /// The network namespace it runs in (`ip netns exec`), if not the lab's own.
    netns: Option<String>,
    incarnation: u32,
    child: Option<Child>,
    /// Exits we did not cause (a crash), seen by [`Replica::check_alive`].
    pub unexpected_exits: u32,
}

impl Replica {
    /// Start the first incarnation.
    pub fn start(spec: ReplicaSpec) -> std::io::Result<Replica> {
        Replica::start_with(spec, None)
    }

    /// Start the first incarnation inside the network namespace `netns` (`ip netns exec`,
    /// which execs the binary: the child's pid is the daemon's), and every restart there.
    /// The lab cuts such a replica's route to the database without touching the others'.
    pub fn start_in_netns(spec: ReplicaSpec, netns: &str) -> std::io::Result<Replica> {
        Replica::start_with(spec, Some(netns.to_string()))
    }

    fn start_with(spec: ReplicaSpec, netns: Option<String>) -> std::io::Result<Replica> {
        let mut replica = Replica {
            spec,
            netns,
            incarnation: 0,
            child: None,
            unexpected_exits: 0,
        };
        replica.spawn()?;
        Ok(replica)
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn spec(&self) -> &ReplicaSpec {
        &self.spec
    }

    /// The holder name of the running incarnation (`<name>.<n>`), as in `leases.holder`.
    pub fn holder(&self) -> String {
        format!("{}.{}", self.spec.name, self.incarnation)
    }

    /// This replica (any incarnation) wrote `holder`.
    pub fn owns_holder(&self, holder: &str) -> bool {
        holder
            .rsplit_once('.')
            .is_some_and(|(name, n)| name == self.spec.name && n.parse::<u32>().is_ok())
    }

    pub fn log_path(&self) -> PathBuf {
        self.spec.log_dir.join(format!("{}.log", self.spec.name))
    }

    fn spawn(&mut self) -> std::io::Result<()> {
        self.incarnation += 1;
        let holder = self.holder();
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())?;
        writeln!(log, "==== {holder} ====")?;
        let mut command = match &self.netns {
            Some(netns) => {
                let mut ip = Command::new("ip");
                ip.args(["netns", "exec", netns]).arg(&self.spec.exe);
                ip
            }
            None => Command::new(&self.spec.exe),
        };
        command
            .arg("run")
            .arg("--no-migrate")
            .arg("--config")
            .arg(&self.spec.config)
            .arg("--database-url")
            .arg(&self.spec.database_url)
            .arg("--holder")
            .arg(&holder);
        if let Some(skew) = &self.spec.clock_skew {
            command.arg(format!("--clock-skew={skew}"));
        }
        command
            .env_remove("MATCHMAKER_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        self.child = Some(command.spawn()?);
        Ok(())
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL, and reap.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM (graceful: the round in flight finishes, leases are released); SIGKILL if
    /// still running after `grace`. True: it exited by itself within the grace time.
    pub fn terminate(&mut self, grace: Duration) -> bool {
        let Some(mut child) = self.child.take() else {
            return true;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        // A paused process would never see the SIGTERM.
        let _ = Command::new("kill")
            .args(["-CONT", &child.id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        false
    }

    /// SIGSTOP: the process freezes (a long GC pause, a frozen VM) with its connections
    /// and transactions open. [`resume`](Self::resume) lets it go on.
    pub fn pause(&mut self) {
        self.signal("-STOP");
    }

    /// SIGCONT after [`pause`](Self::pause).
    pub fn resume(&mut self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        if let Some(child) = &self.child {
            let _ = Command::new("kill")
                .args([signal, &child.id().to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }

    /// Start the next incarnation (killing the current one if it still runs).
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.kill();
        self.spawn()
    }

    /// Is it running? An exit we did not cause is counted in `unexpected_exits`, and the
    /// replica stays down until [`restart`](Self::restart).
    pub fn check_alive(&mut self) -> bool {
        let Some(child) = self.child.as_mut() else {
            return false;
        };
        match child.try_wait() {
            Ok(None) => true,
            _ => {
                self.child = None;
                self.unexpected_exits += 1;
                false
            }
        }
    }

    /// How many lines of this replica's log (all incarnations) contain `needle`.
    pub fn log_lines_containing(&self, needle: &str) -> usize {
        std::fs::read_to_string(self.log_path())
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains(needle))
            .count()
    }

    /// The last `lines` lines of this replica's log (all incarnations).
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Write `toml` to `<dir>/matchmaker.toml` (validated first); returns the path.
pub fn write_config(dir: &Path, toml: &str) -> anyhow::Result<PathBuf> {
    matchmaker::config::Config::from_toml_str(toml).context("the fault run's config")?;
    let path = dir.join("matchmaker.toml");
    std::fs::write(&path, toml).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

// ---- Leases and rounds, as seen from the database ---------------------------------------

/// The lease of `queue` now: (holder, term, live by the database's clock).
pub async fn lease_of(db: &PgPool, queue: &str) -> Result<Option<(String, i64, bool)>, DbError> {
    Ok(
        sqlx::query_as("SELECT holder, term, expires_at > now() FROM leases WHERE queue = $1")
            .bind(queue)
            .fetch_optional(db)
            .await?,
    )
}

/// Wait until `queue`'s lease is live under a term above `after_term`; returns the time
/// it took, the new holder and term. None: not within `timeout`. Database errors (a
/// restart in progress) count as "not yet".
pub async fn wait_for_new_term(
    db: &PgPool,
    queue: &str,
    after_term: i64,
    timeout: Duration,
) -> Option<(Duration, String, i64)> {
    let started = Instant::now();
    while started.elapsed() < timeout {
        if let Ok(Some((holder, term, true))) = lease_of(db, queue).await
            && term > after_term
        {
            return Some((started.elapsed(), holder, term));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    None
}

/// Sessions of other processes inside a round's commit on this database: the commit's
/// lease fence (`SELECT .. FROM leases .. FOR UPDATE`) holds ROW SHARE on `leases` until
/// its transaction ends, and nothing else of the daemon takes that mode there.
pub async fn committing_sessions(db: &PgPool) -> Result<i64, DbError> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks l
          WHERE l.relation = 'leases'::regclass AND l.mode = 'RowShareLock' AND l.granted
            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND l.pid <> pg_backend_pid()",
    )
    .fetch_one(db)
    .await?)
}

/// Wait until every queue in `queues` has a live lease. False: not within `timeout`.
pub async fn wait_for_leaders(db: &PgPool, queues: &[&str], timeout: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < timeout {
        let mut all = true;
        for queue in queues {
            all &= matches!(lease_of(db, queue).await, Ok(Some((_, _, true))));
        }
        if all {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Committed rounds so far (all queues); None if the database does not answer.
pub async fn round_count(db: &PgPool) -> Option<i64> {
    sqlx::query_scalar("SELECT count(*) FROM rounds")
        .fetch_one(db)
        .await
        .ok()
}

/// Wait until more than `than` rounds are committed. False: not within `timeout`.
pub async fn wait_for_rounds(db: &PgPool, than: i64, timeout: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < timeout {
        if round_count(db).await.is_some_and(|n| n > than) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Wait until the round count stays the same for `quiet` (the queues have nothing left
/// to do), at most `timeout`.
pub async fn wait_for_quiet(db: &PgPool, quiet: Duration, timeout: Duration) {
    let started = Instant::now();
    let mut last = round_count(db).await;
    let mut since = Instant::now();
    while started.elapsed() < timeout && since.elapsed() < quiet {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = round_count(db).await;
        if now != last {
            last = now;
            since = Instant::now();
        }
    }
}

/// How long a standby may take to lead after the leader is killed: the lease runs out
/// at most `lease_ttl` after the kill (the last renewal came before it), and standbys
/// look again when it runs out; one renew interval and a second of slack on top.
pub fn takeover_bound(ttl: Duration, renew: Duration) -> Duration {
    ttl + renew + Duration::from_secs(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_name_their_replica() {
        let spec = ReplicaSpec {
            exe: "true".into(),
            database_url: String::new(),
            config: PathBuf::new(),
            name: "r1".into(),
            clock_skew: None,
            log_dir: PathBuf::new(),
        };
        let replica = Replica {
            spec,
            netns: None,
            incarnation: 3,
            child: None,
            unexpected_exits: 0,
        };
        assert_eq!(replica.holder(), "r1.3");
        assert!(replica.owns_holder("r1.1"));
        assert!(!replica.owns_holder("r10.1"));
        assert!(!replica.owns_holder("skewed.1"));
    }
}
