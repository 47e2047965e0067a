//! A pg_auto_failover formation on this machine, for `matchmaker-lab failover` and its
//! test: a monitor, a primary and a synchronous standby, each a `pg_autoctl run` process
//! with its own data directory and port on 127.0.0.1, trust authentication and no TLS.
//!
//! A node's whole machine can be lost ([`Formation::lose_machine`]: its keeper, its
//! postmaster and every backend stopped at once, then SIGKILLed) and brought back
//! ([`Formation::start_node`]: the keeper rejoins it as a standby, rewinding it if it has
//! to), or frozen and thawed ([`Formation::freeze`]: the machine or only its WAL receiver
//! stopped, answering nothing while its connections stay open); the monitor performs a
//! controlled switchover ([`Formation::switchover`]).
//!
//! PostgreSQL refuses to run as root, so as root every command runs as the `postgres`
//! system user (`runuser`), as [`matchmaker::db::local_pg`] does, in a directory that user
//! owns. `pg_autoctl` keeps its config and state under `XDG_CONFIG_HOME` and
//! `XDG_DATA_HOME`, pointed into the formation's directory, so formations never share them.

use std::fs::OpenOptions;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

/// The Debian/Ubuntu package that holds `pg_autoctl` and the monitor's extension.
pub const PACKAGE_HINT: &str = "install pg_auto_failover: apt-get install -y \
     postgresql-15-auto-failover (or the package for the local PostgreSQL major version)";

/// pg_auto_failover's timeouts that make up a failover's time. The defaults are
/// pg_auto_failover's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// The monitor's `pgautofailover.node_considered_unhealthy_timeout`: a node whose
    /// keeper has not reported for this long (and that fails its health checks) is
    /// unhealthy, and a primary's standby is promoted.
    pub unhealthy: Duration,
    /// The monitor's `pgautofailover.primary_demote_timeout`: how long the promoted
    /// standby waits for the lost primary to have demoted itself before it takes writes.
    pub demote: Duration,
    /// The keepers' `timeout.network_partition_timeout`: a primary that reaches neither
    /// the monitor nor its standby for this long demotes itself.
    pub network_partition: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            unhealthy: Duration::from_secs(20),
            demote: Duration::from_secs(30),
            network_partition: Duration::from_secs(20),
        }
    }
}

impl Timeouts {
    /// The new primary must not take writes before an isolated old one has stopped.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.demote > self.network_partition,
            "the demote timeout ({:?}) must be longer than the keepers' network partition \
             timeout ({:?}), or an old primary cut off from the monitor may still take writes \
             once the standby is promoted",
            self.demote,
            self.network_partition
        );
        anyhow::ensure!(
            self.unhealthy >= Duration::from_secs(1)
                && self.network_partition >= Duration::from_secs(1),
            "pg_auto_failover's timeouts are at least 1 s"
        );
        Ok(())
    }
}

/// What of a node [`Formation::freeze`] stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freeze {
    /// Only its WAL receiver: a standby that receives and flushes nothing more, its
    /// server answering otherwise (a stalled disk or network under the receiver).
    WalReceiver,
    /// Its keeper, postmaster and every backend: a machine that answers nothing.
    Machine,
}

/// One PostgreSQL node of the formation (or the monitor).
#[derive(Debug)]
pub struct Node {
    pub name: String,
    pub port: u16,
    pgdata: PathBuf,
    /// `pg_autoctl run` (through `runuser` as root); None while its machine is lost.
    run: Option<Child>,
    log: PathBuf,
}

impl Node {
    /// `postgres://<user>@127.0.0.1:<port>/<database>`: this node alone.
    pub fn url(&self, user: &str, database: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/{database}", self.port)
    }

    pub fn log_path(&self) -> &Path {
        &self.log
    }

    pub fn is_running(&self) -> bool {
        self.run.is_some()
    }
}

/// A running formation; dropping it stops every node (and removes its directory unless
/// it is kept).
#[derive(Debug)]
pub struct Formation {
    dir: PathBuf,
    keep: bool,
    pg_autoctl: PathBuf,
    pg_ctl: PathBuf,
    as_postgres: bool,
    pub monitor: Node,
    /// The data nodes, `node1` and `node2`; `node1` is the first primary.
    pub nodes: Vec<Node>,
}

/// The database the formation's nodes serve (`pg_autoctl create postgres --dbname`).
pub const DATABASE: &str = "matchmaker";

impl Formation {
    /// `pg_autoctl` and the `pg_ctl` of the PostgreSQL it goes with, or an error that says
    /// what to install.
    pub fn find_binaries() -> anyhow::Result<(PathBuf, PathBuf)> {
        let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        let mut versioned: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
            .collect();
        versioned.sort();
        versioned.reverse();
        candidates.extend(versioned.iter().map(|(_, bin)| bin.clone()));
        let pg_autoctl = candidates
            .iter()
            .map(|dir| dir.join("pg_autoctl"))
            .find(|p| p.is_file())
            .with_context(|| format!("pg_autoctl is not installed: {PACKAGE_HINT}"))?;
        // The monitor needs the pgautofailover extension of the server it runs on.
        let pg_ctl = versioned
            .iter()
            .find(|(version, bin)| {
                bin.join("pg_ctl").is_file()
                    && Path::new(&format!(
                        "/usr/share/postgresql/{version}/extension/pgautofailover.control"
                    ))
                    .is_file()
            })
            .map(|(_, bin)| bin.join("pg_ctl"))
            .with_context(|| {
                format!(
                    "no PostgreSQL under /usr/lib/postgresql has the pgautofailover extension: \
                     {PACKAGE_HINT}"
                )
            })?;
        Ok((pg_autoctl, pg_ctl))
    }

    /// Create and start a formation in a new directory under `parent`: the monitor, then
    /// `node1` (the primary), then `node2` (its synchronous standby); returns once the
    /// monitor reports them primary and secondary. Blocking (about 15 s).
    pub fn start(parent: &Path, keep: bool) -> anyhow::Result<Formation> {
        Self::start_with(parent, keep, Timeouts::default())
    }

    /// [`start`](Self::start), with `timeouts` set on the monitor and in each keeper's
    /// configuration before the keeper first runs.
    pub fn start_with(parent: &Path, keep: bool, timeouts: Timeouts) -> anyhow::Result<Formation> {
        timeouts.validate()?;
        let (pg_autoctl, pg_ctl) = Self::find_binaries()?;
        let as_postgres = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        let dir = parent.join(format!("formation-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        if as_postgres {
            let (uid, gid) = postgres_ids().context(
                "running as root, and PostgreSQL refuses to: the `postgres` system user is \
                 needed to run the formation",
            )?;
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .with_context(|| format!("chown {} to postgres", dir.display()))?;
        }
        let ports = free_ports(3)?;
        let node = |name: &str, port: u16| Node {
            name: name.to_string(),
            port,
            pgdata: dir.join(name),
            run: None,
            log: dir.join(format!("{name}.log")),
        };
        let mut formation = Formation {
            monitor: node("monitor", ports[0]),
            nodes: vec![node("node1", ports[1]), node("node2", ports[2])],
            dir,
            keep,
            pg_autoctl,
            pg_ctl,
            as_postgres,
        };
        let pg_ctl = formation.pg_ctl.display().to_string();
        let monitor_port = formation.monitor.port.to_string();
        formation.autoctl(
            "monitor",
            &[
                "create",
                "monitor",
                "--pgdata",
                &formation.monitor.pgdata.display().to_string(),
                "--pgport",
                &monitor_port,
                "--hostname",
                "127.0.0.1",
                "--auth",
                "trust",
                "--no-ssl",
                "--pgctl",
                &pg_ctl,
            ],
        )?;
        formation.run_monitor()?;
        formation.set_monitor_timeouts(timeouts)?;
        let monitor_uri = format!(
            "postgres://autoctl_node@127.0.0.1:{}/pg_auto_failover?sslmode=prefer",
            formation.monitor.port
        );
        for i in 0..2 {
            let (name, port, pgdata) = {
                let n = &formation.nodes[i];
                (
                    n.name.clone(),
                    n.port.to_string(),
                    n.pgdata.display().to_string(),
                )
            };
            formation.autoctl(
                &name,
                &[
                    "create",
                    "postgres",
                    "--pgdata",
                    &pgdata,
                    "--pgport",
                    &port,
                    "--hostname",
                    "127.0.0.1",
                    "--listen",
                    "127.0.0.1",
                    "--name",
                    &name,
                    "--dbname",
                    DATABASE,
                    "--auth",
                    "trust",
                    "--no-ssl",
                    "--pgctl",
                    &pg_ctl,
                    "--monitor",
                    &monitor_uri,
                ],
            )?;
            formation.autoctl(
                &name,
                &[
                    "config",
                    "set",
                    "--pgdata",
                    &pgdata,
                    "timeout.network_partition_timeout",
                    &timeouts.network_partition.as_secs().to_string(),
                ],
            )?;
            formation.start_node(i)?;
            if i == 0 {
                formation.wait_for_states(&[("node1", "single")], Duration::from_secs(60))?;
            }
        }
        formation.wait_for_states(
            &[("node1", "primary"), ("node2", "secondary")],
            Duration::from_secs(120),
        )?;
        Ok(formation)
    }

    /// `ALTER SYSTEM` on the monitor, then a reload (its settings are in milliseconds).
    fn set_monitor_timeouts(&self, timeouts: Timeouts) -> anyhow::Result<()> {
        for (name, value) in [
            ("node_considered_unhealthy_timeout", timeouts.unhealthy),
            ("primary_demote_timeout", timeouts.demote),
        ] {
            let sql = format!(
                "ALTER SYSTEM SET pgautofailover.{name} TO {}",
                value.as_millis()
            );
            self.psql(&self.monitor_url(), &sql)?;
        }
        self.psql(&self.monitor_url(), "SELECT pg_reload_conf()")?;
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The formation's multi-host URL (`pg_autoctl show uri --formation default`), as
    /// `user`: `postgres://user@127.0.0.1:p1,127.0.0.1:p2/matchmaker?target_session_attrs=read-write&sslmode=prefer`.
    pub fn url(&self, user: &str) -> anyhow::Result<String> {
        let out = self.autoctl_output(&[
            "show",
            "uri",
            "--pgdata",
            &self.monitor.pgdata.display().to_string(),
            "--formation",
            "default",
        ])?;
        let uri = out.trim();
        let rest = uri
            .strip_prefix("postgres://")
            .with_context(|| format!("pg_autoctl show uri printed {uri:?}"))?;
        // The formation's URI names no user: the client's own is used.
        let rest = rest.split_once('@').map_or(rest, |(_, hosts)| hosts);
        anyhow::ensure!(
            uri.contains("target_session_attrs=read-write"),
            "the formation's URI {uri} does not ask for a read-write session"
        );
        Ok(format!("postgres://{user}@{rest}"))
    }

    /// The monitor's database, as the `postgres` superuser.
    pub fn monitor_url(&self) -> String {
        self.monitor.url("postgres", "pg_auto_failover")
    }

    /// What the monitor says of each data node: (name, reported state, assigned state).
    pub fn states(&self) -> anyhow::Result<Vec<(String, String, String)>> {
        let out = self.psql(
            &self.monitor_url(),
            "SELECT nodename, reportedstate, goalstate FROM pgautofailover.node ORDER BY nodeid",
        )?;
        Ok(out
            .lines()
            .filter_map(|l| {
                let mut f = l.split('|');
                Some((
                    f.next()?.to_string(),
                    f.next()?.to_string(),
                    f.next()?.to_string(),
                ))
            })
            .collect())
    }

    /// Wait until each named node reports, and is assigned, its state.
    pub fn wait_for_states(&self, want: &[(&str, &str)], timeout: Duration) -> anyhow::Result<()> {
        let started = Instant::now();
        let mut last = Vec::new();
        while started.elapsed() < timeout {
            if let Ok(states) = self.states() {
                let reached = want.iter().all(|(name, state)| {
                    states
                        .iter()
                        .any(|(n, r, g)| n == name && r == state && g == state)
                });
                if reached {
                    return Ok(());
                }
                last = states;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        anyhow::bail!(
            "the formation did not reach {want:?} within {timeout:?}; the monitor says {last:?} \
             (logs in {})",
            self.dir.display()
        )
    }

    /// The index of the data node whose session takes writes now, if one does.
    pub fn writable_node(&self) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| {
            self.nodes[i].is_running()
                && self
                    .psql(
                        &self.nodes[i].url("postgres", DATABASE),
                        "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'",
                    )
                    .is_ok_and(|out| out.trim() == "t")
        })
    }

    /// A setting of a data node (`SHOW name`).
    pub fn setting(&self, node: usize, name: &str) -> anyhow::Result<String> {
        Ok(self
            .psql(
                &self.nodes[node].url("postgres", DATABASE),
                &format!("SELECT current_setting('{name}')"),
            )?
            .trim()
            .to_string())
    }

    /// `pg_autoctl show settings`: the formation's replication settings, as printed.
    pub fn show_settings(&self) -> anyhow::Result<String> {
        self.autoctl_output(&[
            "show",
            "settings",
            "--pgdata",
            &self.monitor.pgdata.display().to_string(),
        ])
    }

    /// Lose a node's machine: stop its keeper, its postmaster and every backend at once
    /// (SIGSTOP, so none of them reacts to the others' end), then SIGKILL them all.
    pub fn lose_machine(&mut self, node: usize) {
        let Some(mut child) = self.nodes[node].run.take() else {
            return;
        };
        let tree = process_tree(child.id());
        signal_all(&tree, "-STOP");
        signal_all(&tree, "-KILL");
        let _ = child.wait();
    }

    /// Stop (SIGSTOP) a node's whole machine, or only its WAL receiver: the processes
    /// stopped, for [`thaw`](Self::thaw). Its connections stay open and unanswered.
    pub fn freeze(&self, node: usize, part: Freeze) -> Vec<u32> {
        let Some(child) = &self.nodes[node].run else {
            return Vec::new();
        };
        let tree = process_tree(child.id());
        let stopped: Vec<u32> = match part {
            Freeze::Machine => tree,
            // Its process title: "postgres: <cluster>: walreceiver streaming <lsn>".
            Freeze::WalReceiver => tree
                .into_iter()
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains("walreceiver"))
                })
                .collect(),
        };
        signal_all(&stopped, "-STOP");
        stopped
    }

    /// Let processes stopped by [`freeze`](Self::freeze) run again.
    pub fn thaw(pids: &[u32]) {
        signal_all(pids, "-CONT");
    }

    /// Start a node's keeper (`pg_autoctl run`), which starts its PostgreSQL: a node whose
    /// machine was lost rejoins the formation as a standby.
    pub fn start_node(&mut self, node: usize) -> anyhow::Result<()> {
        let pgdata = self.nodes[node].pgdata.display().to_string();
        let log = self.nodes[node].log.clone();
        let child = self.spawn_autoctl(&["run", "--pgdata", &pgdata], &log)?;
        self.nodes[node].run = Some(child);
        Ok(())
    }

    fn run_monitor(&mut self) -> anyhow::Result<()> {
        let pgdata = self.monitor.pgdata.display().to_string();
        let log = self.monitor.log.clone();
        let child = self.spawn_autoctl(&["run", "--pgdata", &pgdata], &log)?;
        self.monitor.run = Some(child);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if self.psql(&self.monitor_url(), "SELECT 1").is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        anyhow::bail!(
            "the monitor did not answer within 30 s (log: {})",
            self.monitor.log.display()
        )
    }

    /// Lose the monitor's machine, as [`lose_machine`](Self::lose_machine) does a node's.
    pub fn lose_monitor(&mut self) {
        if let Some(mut child) = self.monitor.run.take() {
            let tree = process_tree(child.id());
            signal_all(&tree, "-STOP");
            signal_all(&tree, "-KILL");
            let _ = child.wait();
        }
    }

    /// Bring the monitor back after [`lose_monitor`](Self::lose_monitor).
    pub fn restart_monitor(&mut self) -> anyhow::Result<()> {
        self.run_monitor()
    }

    /// `pg_autoctl perform switchover`: the monitor promotes the standby and demotes the
    /// primary; returns when the formation has a primary again. Blocking.
    pub fn switchover(&self) -> anyhow::Result<()> {
        self.autoctl_output(&[
            "perform",
            "switchover",
            "--pgdata",
            &self.monitor.pgdata.display().to_string(),
            "--wait",
            "120",
        ])
        .map(|_| ())
    }

    /// `pg_autoctl set node replication-quorum` on node `i`: whether the primary's
    /// commits wait for it. Returns once the monitor has the new setting. Blocking.
    pub fn set_replication_quorum(&self, i: usize, quorum: bool) -> anyhow::Result<()> {
        self.autoctl_output(&[
            "set",
            "node",
            "replication-quorum",
            if quorum { "true" } else { "false" },
            "--pgdata",
            &self.nodes[i].pgdata.display().to_string(),
        ])
        .map(|_| ())
    }

    /// `pg_autoctl <args>` run to its end, its output appended to `<name>.log`.
    fn autoctl(&self, name: &str, args: &[&str]) -> anyhow::Result<()> {
        let log = self.dir.join(format!("{name}.log"));
        let status = self
            .command(&self.pg_autoctl, args, &log)?
            .status()
            .with_context(|| format!("running pg_autoctl {}", args.join(" ")))?;
        anyhow::ensure!(
            status.success(),
            "pg_autoctl {} failed ({status}); its output is in {}",
            args[..2].join(" "),
            log.display()
        );
        Ok(())
    }

    /// `pg_autoctl <args>`'s standard output.
    fn autoctl_output(&self, args: &[&str]) -> anyhow::Result<String> {
        let log = self.dir.join("commands.log");
        let output = self
            .command(&self.pg_autoctl, args, &log)?
            .stdout(Stdio::piped())
            .output()
            .with_context(|| format!("running pg_autoctl {}", args.join(" ")))?;
        anyhow::ensure!(
            output.status.success(),
            "pg_autoctl {} failed ({}); see {}",
            args.join(" "),
            output.status,
            log.display()
        );
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// One query through `psql` beside `pg_autoctl` (unaligned, tuples only).
    fn psql(&self, url: &str, sql: &str) -> anyhow::Result<String> {
        let psql = self.pg_ctl.with_file_name("psql");
        let output = Command::new(&psql)
            .args([
                "-X",
                "-A",
                "-t",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                url,
                "-c",
                sql,
            ])
            .env("PGCONNECT_TIMEOUT", "3")
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", psql.display()))?;
        anyhow::ensure!(
            output.status.success(),
            "psql: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    fn spawn_autoctl(&self, args: &[&str], log: &Path) -> anyhow::Result<Child> {
        self.command(&self.pg_autoctl, args, log)?
            .spawn()
            .with_context(|| format!("starting pg_autoctl {}", args.join(" ")))
    }

    /// `program args` as the `postgres` user when we are root, in the formation's
    /// directory, with pg_autoctl's config and state kept there; stderr (and stdout)
    /// appended to `log`.
    fn command(&self, program: &Path, args: &[&str], log: &Path) -> anyhow::Result<Command> {
        let open = || {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .with_context(|| format!("opening {}", log.display()))
        };
        let env = [
            ("XDG_CONFIG_HOME", self.dir.join("config")),
            ("XDG_DATA_HOME", self.dir.join("data")),
            ("XDG_RUNTIME_DIR", self.dir.join("run")),
        ];
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", "env"]);
            for (k, v) in &env {
                c.arg(format!("{k}={}", v.display()));
            }
            c.arg(program);
            c
        } else {
            let mut c = Command::new(program);
            c.envs(env.iter().map(|(k, v)| (k, v)));
            c
        };
        command
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(open()?))
            .stderr(Stdio::from(open()?));
        Ok(command)
    }

    /// Stop a keeper gracefully (SIGTERM: it stops its PostgreSQL), SIGKILL its whole
    /// process tree if it has not exited within `grace`.
    fn stop(child: &mut Child, grace: Duration) {
        let tree = process_tree(child.id());
        // A frozen process handles no SIGTERM until it runs again.
        signal_all(&tree, "-CONT");
        // runuser passes SIGTERM on to pg_autoctl; signal pg_autoctl too in case.
        signal_all(&tree[..tree.len().min(2)], "-TERM");
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                // The keeper is gone; PostgreSQL children it left behind go too.
                let rest: Vec<u32> = tree
                    .iter()
                    .copied()
                    .filter(|pid| Path::new(&format!("/proc/{pid}")).exists())
                    .collect();
                signal_all(&rest, "-KILL");
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        signal_all(&process_tree(child.id()), "-KILL");
        signal_all(&tree, "-KILL");
        let _ = child.wait();
    }
}

impl Drop for Formation {
    fn drop(&mut self) {
        for node in self
            .nodes
            .iter_mut()
            .chain(std::iter::once(&mut self.monitor))
        {
            if let Some(mut child) = node.run.take() {
                Self::stop(&mut child, Duration::from_secs(15));
            }
        }
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `pid` and all its descendants, parents before children (from `/proc/*/stat`).
pub fn process_tree(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if let Some(ppid) = after
            .split_whitespace()
            .nth(1)
            .and_then(|f| f.parse::<u32>().ok())
        {
            parents.push((p, ppid));
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    tree
}

fn signal_all(pids: &[u32], signal: &str) {
    if pids.is_empty() {
        return;
    }
    let _ = Command::new("kill")
        .arg(signal)
        .args(pids.iter().map(u32::to_string))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// (uid, gid) of the `postgres` system user.
fn postgres_ids() -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        (f.first() == Some(&"postgres") && f.len() > 3)
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
            .flatten()
    })
}

/// `n` distinct free TCP ports on 127.0.0.1 (held open together while chosen).
fn free_ports(n: usize) -> anyhow::Result<Vec<u16>> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()
        .context("finding free ports")?;
    Ok(listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()?)
}
