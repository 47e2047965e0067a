//! `matchmaker-lab failure-modes`: the database failures other than a lost primary, on a
//! real pg_auto_failover formation ([`crate::formation`]) under the load of
//! `matchmaker-lab failover` (two daemon replicas on the formation's multi-host URL, the
//! `ready` and `duel` queues, simulated clients enqueueing, polling, answering ready
//! checks and reporting results, each call repeated while the database is unavailable).
//!
//! Six failures, one after the other, on one formation:
//!
//! 1. **The monitor is lost**: its `pg_autoctl run` and its postmaster SIGKILLed. The run
//!    counts the rounds and matches committed and the client calls made while it is away,
//!    checks that the primary takes writes throughout, then starts the monitor again and
//!    times until both keepers report to it as primary and secondary again.
//! 2. **The standby lags**: replay paused on the standby (`pg_wal_replay_pause()`). The
//!    run times commits on the primary before and during the pause (a synchronous commit
//!    waits for the standby's flush, not its replay), counts the rounds committed, reads
//!    how stale the standby is, resumes replay and times until the standby caught up.
//! 3. **The standby stops flushing**: its WAL receiver stopped, then its whole machine
//!    ([`crate::standby_freeze`]); the run times how long commits on the primary wait and
//!    whether the monitor drops the standby from the quorum.
//! 4. **The primary is lost while its standby is behind**: the standby dropped from the
//!    quorum, the primary writes more, then is lost ([`crate::standby_behind`]); no node
//!    takes writes until it is back, and nothing committed is lost.
//! 5. **Both data nodes are lost**: both machines (keeper, postmaster, backends) SIGKILLed,
//!    then both started again. The run times the first write, the first round and the
//!    replicas' LISTEN sessions after the restart, and checks that every round committed
//!    before the loss is still there.
//!
//! At the end it audits the database ([`matchmaker_testkit::audit`]) and checks what the
//! clients were told against it, as `failover` does. Then the command runs the network
//! partition ([`crate::partition`]), which needs no formation, on a server of its own.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use sqlx::{Connection, PgConnection, PgPool};

use matchmaker::db;
use matchmaker_testkit::audit;
use matchmaker_testkit::fleet::Replica;

use crate::failover::{self, CLIENT_LOGIN, Clients, Ledger, Shared, check_ledger, fmt_secs};
use crate::formation::{self, Formation, Freeze, Timeouts};
use crate::partition::{self, PartitionOptions};
use crate::standby_behind::{StandbyBehind, lose_primary_ahead_of_standby};
use crate::standby_freeze::{StandbyFreeze, freeze_standby};

/// How long the formation may take to report a primary and a secondary again after the
/// monitor or the nodes come back.
pub const HEALTHY_BOUND: Duration = Duration::from_secs(120);

/// How long after both nodes are started again every client may wait for an answer: the
/// clients' pool waits 30 s for a connection, then the call is repeated.
pub const CLIENTS_BACK_BOUND: Duration = Duration::from_secs(60);

/// How long the first round may take after the first write on a restarted primary: a
/// lease TTL (5 s in the run's config), a round and the watcher's probes.
pub const ROUND_AFTER_WRITE_BOUND: Duration = Duration::from_secs(15);

#[derive(Debug, Clone)]
pub struct FailureModesOptions {
    /// Client load and answers before the first failure.
    pub warmup: Duration,
    /// How long the monitor stays lost.
    pub monitor_outage: Duration,
    /// How long replay stays paused on the standby.
    pub standby_pause: Duration,
    /// How long the standby's WAL receiver, then its whole machine, stay stopped.
    pub receiver_freeze: Duration,
    pub machine_freeze: Duration,
    /// The WAL receiver is stopped a second time, as long as the first, and this long
    /// after the stop the operator takes the way out: the standby dropped from the
    /// synchronous quorum (`pg_autoctl set node replication-quorum false`).
    pub way_out_after: Duration,
    /// The primary lost while its standby is out of the quorum ([`crate::standby_behind`]):
    /// how long it stays lost, and the WAL (MB) it writes beforehand that the standby
    /// lacks.
    pub behind_outage: Duration,
    pub ballast_mb: u32,
    /// How long both data nodes stay lost.
    pub nodes_outage: Duration,
    /// Load after each failure before the next one.
    pub settle: Duration,
    /// Daemon replicas.
    pub replicas: u64,
    /// Concurrent clients (each keeps a dozen players waiting).
    pub clients: usize,
    pub seed: u64,
    /// How long one replica's route to the database stays cut, then every replica's
    /// ([`crate::partition`]).
    pub cut: Duration,
    pub cut_all: Duration,
    /// Run only the formation's failures, or only the partition.
    pub only: Option<Failures>,
    /// Keep the formation, the replicas' logs and the config here (the partition's in
    /// its `partition` directory); default: a temporary directory, removed after a clean
    /// run. The `postgres` user must be able to enter it when running as root.
    pub log_dir: Option<PathBuf>,
}

/// The failures of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failures {
    /// The monitor lost, the standby paused, both data nodes lost: on a formation.
    Formation,
    /// Replicas cut off from a healthy database ([`crate::partition`]).
    Partition,
}

impl FailureModesOptions {
    /// The partition's share of the options.
    pub fn partition(&self) -> PartitionOptions {
        PartitionOptions {
            warmup: self.warmup,
            cut: self.cut,
            cut_all: self.cut_all,
            settle: self.settle,
            clients: self.clients,
            seed: self.seed,
            log_dir: self.log_dir.as_ref().map(|dir| dir.join("partition")),
        }
    }
}

impl Default for FailureModesOptions {
    fn default() -> Self {
        FailureModesOptions {
            warmup: Duration::from_secs(20),
            // Longer than the keepers' network_partition_timeout (20 s), after which a
            // primary that reaches no monitor asks whether its standby is still there.
            monitor_outage: Duration::from_secs(30),
            standby_pause: Duration::from_secs(20),
            receiver_freeze: Duration::from_secs(20),
            // Longer than the monitor's node_considered_unhealthy_timeout (20 s).
            machine_freeze: Duration::from_secs(40),
            way_out_after: Duration::from_secs(5),
            behind_outage: Duration::from_secs(30),
            ballast_mb: 32,
            nodes_outage: Duration::from_secs(20),
            settle: Duration::from_secs(15),
            replicas: 2,
            clients: 4,
            seed: 1,
            cut: PartitionOptions::default().cut,
            cut_all: PartitionOptions::default().cut_all,
            only: None,
            log_dir: None,
        }
    }
}

pub fn run(options: FailureModesOptions) -> anyhow::Result<()> {
    let exe = crate::product_binary()?;
    // The lab's own pools follow the formation: their "no database host fits" while both
    // nodes are lost is the expected part, kept out of the figures (RUST_LOG overrides).
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("warn,sqlx=error,matchmaker::db::target=error")
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    crate::run_beside_replicas(async move {
        let mut failed = Vec::new();
        if options.only != Some(Failures::Partition) {
            let report = failure_modes(&options, &exe, |line| println!("{line}")).await?;
            report.print();
            if report.violation_count() > 0 {
                failed.push((report.violation_count(), report.logs));
            }
        }
        if options.only != Some(Failures::Formation) {
            let say = |line| println!("{line}");
            let report = partition::partition(&options.partition(), &exe, say).await?;
            report.print();
            if report.violation_count() > 0 {
                failed.push((report.violation_count(), report.logs));
            }
        }
        let violations: i64 = failed.iter().map(|(n, _)| n).sum();
        let logs: Vec<String> = failed
            .iter()
            .map(|(_, l)| l.display().to_string())
            .collect();
        anyhow::ensure!(
            violations == 0,
            "{violations} violations (logs: {})",
            logs.join(", ")
        );
        Ok(())
    })
}

// ---- What each failure did ---------------------------------------------------------------

/// The clients' calls over a window: made, failed attempts (repeated), unresolved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Calls {
    pub calls: u64,
    pub retried_calls: u64,
    pub failed_attempts: u64,
    pub unresolved: u64,
}

impl Calls {
    fn of(ledger: &Ledger) -> Calls {
        Calls {
            calls: ledger.calls,
            retried_calls: ledger.retried_calls,
            failed_attempts: ledger.failed_attempts,
            unresolved: ledger.unresolved,
        }
    }

    pub(crate) fn since(self, before: Calls) -> Calls {
        Calls {
            calls: self.calls - before.calls,
            retried_calls: self.retried_calls - before.retried_calls,
            failed_attempts: self.failed_attempts - before.failed_attempts,
            unresolved: self.unresolved - before.unresolved,
        }
    }
}

pub(crate) fn calls_now(ledger: &Shared) -> Calls {
    Calls::of(&ledger.lock().unwrap())
}

/// The monitor lost, then started again.
#[derive(Debug, Clone)]
pub struct MonitorLoss {
    pub primary: String,
    pub at: DateTime<Utc>,
    pub outage: Duration,
    /// Committed on the primary while the monitor was away.
    pub rounds: i64,
    pub matches: i64,
    pub calls: Calls,
    /// Probes of the primary while the monitor was away, and those it refused a write.
    pub write_probes: u32,
    pub write_probes_refused: u32,
    /// The monitor started again until both keepers reported to it, as primary and
    /// secondary, with their nodes healthy.
    pub healthy: Option<Duration>,
    /// The primary the monitor reports then.
    pub primary_after: Option<String>,
}

/// Replay paused on the standby, then resumed.
#[derive(Debug, Clone)]
pub struct StandbyPause {
    pub standby: String,
    pub paused_for: Duration,
    /// Committed on the primary in as long a window before the pause, and during it.
    pub rounds_before: i64,
    pub rounds: i64,
    pub matches: i64,
    pub calls: Calls,
    /// Median and longest of 20 commits (an insert each) on the primary before the pause
    /// and at its end.
    pub commit_before: (Duration, Duration),
    pub commit_during: (Duration, Duration),
    /// At the end of the pause: the primary's newest round against the standby's, in time
    /// (committed_at) and in rounds; the WAL received but not replayed; the age of the
    /// standby's last replayed commit.
    pub stale_by: Duration,
    pub rounds_behind: i64,
    pub unreplayed_bytes: i64,
    pub last_replay_age: Duration,
    /// Replay resumed until the standby replayed what the primary had written then.
    pub caught_up: Option<Duration>,
}

/// Both data nodes lost, then both started again.
#[derive(Debug, Clone)]
pub struct NodesLoss {
    pub primary: String,
    pub at: DateTime<Utc>,
    pub outage: Duration,
    /// Rounds and matches committed before the loss, and how many of them are still there.
    pub rounds_before: i64,
    pub rounds_kept: i64,
    pub matches_before: i64,
    pub matches_kept: i64,
    /// From the restart: until a node took a write (and which), until the first round,
    /// until every replica LISTENs again, until the monitor reports a primary and a
    /// secondary.
    pub first_write: Option<Duration>,
    pub writes_on: Option<String>,
    pub first_round: Option<Duration>,
    pub listening: Option<Duration>,
    pub healthy: Option<Duration>,
    /// How long the monitor kept the primary in `wait_primary` (commits not waiting for a
    /// standby) after the restart, if it did.
    pub wait_primary: Option<Duration>,
    /// From the restart until every client had a call answered again.
    pub clients_back: Option<Duration>,
    /// From the loss until the formation was healthy and the clients answered again.
    pub calls: Calls,
    /// The longest client call of the run so far, repeats included.
    pub longest_call: Duration,
}

/// The run's figures and checks.
#[derive(Debug)]
pub struct FailureModesReport {
    pub monitor: MonitorLoss,
    pub pause: StandbyPause,
    pub receiver: StandbyFreeze,
    pub machine: StandbyFreeze,
    /// The receiver stopped again, and the standby dropped from the quorum.
    pub way_out: StandbyFreeze,
    pub behind: StandbyBehind,
    pub nodes: NodesLoss,
    pub elapsed: Duration,
    pub ledger: Ledger,
    pub audit: audit::Audit,
    /// Extra counts beside the audit's: (name, count), all must be 0.
    pub checks: Vec<(String, i64)>,
    /// The formation's replication settings when the run started.
    pub settings: Vec<(String, String)>,
    pub logs: PathBuf,
}

impl FailureModesReport {
    /// Every violation, named: the audit's and the run's.
    pub fn violations(&self) -> Vec<(String, i64)> {
        self.audit
            .violations()
            .into_iter()
            .map(|(n, c)| (n.to_string(), c))
            .chain(self.checks.iter().cloned())
            .collect()
    }

    pub fn violation_count(&self) -> i64 {
        self.violations().iter().map(|(_, n)| n).sum()
    }

    pub fn print(&self) {
        let row = |name: &str, value: String| println!("  {name:<62} {value:>12}");
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
        println!();
        for (name, value) in &self.settings {
            row(name, value.clone());
        }
        let m = &self.monitor;
        println!(
            "  monitor lost for {:.0} s (primary {}):",
            m.outage.as_secs_f64(),
            m.primary
        );
        row("  rounds committed while it was away", m.rounds.to_string());
        row("  matches created while it was away", m.matches.to_string());
        row(
            "  client calls while it was away",
            m.calls.calls.to_string(),
        );
        row(
            "    attempts that failed as unavailable",
            m.calls.failed_attempts.to_string(),
        );
        row("    calls unresolved", m.calls.unresolved.to_string());
        row(
            "  writes on the primary refused (of probes)",
            format!("{} of {}", m.write_probes_refused, m.write_probes),
        );
        row(
            "  monitor back -> keepers report primary + secondary",
            fmt_secs(m.healthy),
        );
        row(
            "  primary then",
            m.primary_after.clone().unwrap_or_else(|| "?".into()),
        );
        let p = &self.pause;
        println!(
            "  replay paused on the standby {} for {:.0} s:",
            p.standby,
            p.paused_for.as_secs_f64()
        );
        row(
            "  rounds committed before (as long a window) / during",
            format!("{} / {}", p.rounds_before, p.rounds),
        );
        row("  matches created during", p.matches.to_string());
        row(
            "  commit on the primary, median (max), before",
            format!("{} ({})", ms(p.commit_before.0), ms(p.commit_before.1)),
        );
        row(
            "  commit on the primary, median (max), during",
            format!("{} ({})", ms(p.commit_during.0), ms(p.commit_during.1)),
        );
        row(
            "  standby's newest round behind the primary's",
            format!(
                "{:.1} s, {} rounds",
                p.stale_by.as_secs_f64(),
                p.rounds_behind
            ),
        );
        row(
            "  standby's last replayed commit, age",
            format!("{:.1} s", p.last_replay_age.as_secs_f64()),
        );
        row(
            "  WAL received, not replayed",
            format!("{} kB", p.unreplayed_bytes / 1024),
        );
        row(
            "  client calls / failed attempts",
            format!("{} / {}", p.calls.calls, p.calls.failed_attempts),
        );
        row(
            "  replay resumed -> standby caught up",
            p.caught_up.map_or("never".into(), ms),
        );
        self.receiver.print(&row);
        self.machine.print(&row);
        self.way_out.print(&row);
        self.behind.print(&row);
        let n = &self.nodes;
        println!(
            "  both nodes lost for {:.0} s (primary {}), then started again:",
            n.outage.as_secs_f64(),
            n.primary
        );
        row(
            "  restart -> a node takes a write",
            format!(
                "{} on {}",
                fmt_secs(n.first_write),
                n.writes_on.as_deref().unwrap_or("?")
            ),
        );
        row("  restart -> first round", fmt_secs(n.first_round));
        row(
            "  restart -> every replica LISTENs again",
            fmt_secs(n.listening),
        );
        row(
            "  restart -> primary + secondary again",
            fmt_secs(n.healthy),
        );
        row(
            "  restart -> every client answered again",
            fmt_secs(n.clients_back),
        );
        row(
            "  primary in wait_primary (commits not waiting for a standby)",
            n.wait_primary.map_or("no".into(), |d| fmt_secs(Some(d))),
        );
        row(
            "  rounds committed before the loss, kept",
            format!("{} of {}", n.rounds_kept, n.rounds_before),
        );
        row(
            "  matches created before the loss, kept",
            format!("{} of {}", n.matches_kept, n.matches_before),
        );
        row(
            "  client calls / repeated / failed attempts",
            format!(
                "{} / {} / {}",
                n.calls.calls, n.calls.retried_calls, n.calls.failed_attempts
            ),
        );
        row(
            "  longest client call so far, repeats included",
            format!("{:.1} s", n.longest_call.as_secs_f64()),
        );
        self.print_totals();
    }

    /// The run's totals, the audit's and the violations.
    fn print_totals(&self) {
        let row = |name: &str, value: String| println!("  {name:<62} {value:>12}");
        let l = &self.ledger;
        row("time", format!("{:.1} s", self.elapsed.as_secs_f64()));
        row("client calls", l.calls.to_string());
        row(
            "entries enqueued (acknowledged)",
            l.enqueued.len().to_string(),
        );
        row("matches seen by clients", l.seen.len().to_string());
        row(
            "ready checks accepted (acknowledged)",
            l.accepted.len().to_string(),
        );
        row(
            "results recorded (acknowledged)",
            l.results.len().to_string(),
        );
        for (name, n) in self.audit.totals() {
            row(name, n.to_string());
        }
        println!("  violations (all must be 0):");
        for (name, n) in self.violations() {
            row(&name, n.to_string());
        }
        if let Some(e) = &l.last_error {
            println!("  last client error: {e}");
        }
        for call in &l.unresolved_calls {
            println!("  unresolved call: {call}");
        }
    }
}

/// The whole run: formation, schema, replicas, clients, the failures, the audit.
/// `say` gets a line per step.
pub async fn failure_modes(
    options: &FailureModesOptions,
    exe: &Path,
    say: impl Fn(String),
) -> anyhow::Result<FailureModesReport> {
    let started = Instant::now();
    let (work, keep) = failover::work_dir(options.log_dir.as_deref(), "failure-modes")?;
    let mut formation = failover::start_formation(&work, keep, Timeouts::default(), &say)?;
    let url = formation.url("postgres")?;
    let client_url = formation.url(CLIENT_LOGIN)?;
    let admin = db::connect_with(&url, 4).await?;
    failover::prepare_database(&admin, options.clients).await?;
    let settings = failover::replication_settings(&formation, &admin).await?;
    let mut replicas = failover::start_replicas(options.replicas, exe, &url, &work, &admin).await?;
    let clients = Clients::start(&client_url, options.clients, options.seed).await?;
    let ledger = clients.ledger.clone();
    say(format!(
        "{} replicas and {} clients running; warming up for {:?}",
        options.replicas, options.clients, options.warmup
    ));
    tokio::time::sleep(options.warmup).await;

    let monitor = lose_monitor(&mut formation, &admin, &ledger, options.monitor_outage).await?;
    say(format!(
        "monitor lost for {:.0} s: {} rounds and {} matches committed, {} client calls, {} \
         failed attempts; back to primary + secondary after {}",
        monitor.outage.as_secs_f64(),
        monitor.rounds,
        monitor.matches,
        monitor.calls.calls,
        monitor.calls.failed_attempts,
        fmt_secs(monitor.healthy)
    ));
    tokio::time::sleep(options.settle).await;
    failover::restart_exited(&mut replicas, &say);

    let pause = pause_standby(&formation, &admin, &ledger, options.standby_pause).await?;
    say(format!(
        "replay paused on {} for {:.0} s: {} rounds committed (as long before: {}), commit \
         median {:.1} ms (before {:.1} ms); the standby's newest round {:.1} s behind; caught \
         up {} after resuming",
        pause.standby,
        pause.paused_for.as_secs_f64(),
        pause.rounds,
        pause.rounds_before,
        pause.commit_during.0.as_secs_f64() * 1000.0,
        pause.commit_before.0.as_secs_f64() * 1000.0,
        pause.stale_by.as_secs_f64(),
        fmt_secs(pause.caught_up)
    ));
    tokio::time::sleep(options.settle).await;
    failover::restart_exited(&mut replicas, &say);

    let (receiver, machine, way_out) =
        freeze_standbys(options, &formation, &admin, &mut replicas, &ledger, &say).await?;

    let behind = lose_primary_ahead_of_standby(
        &mut formation,
        &admin,
        options.ballast_mb,
        options.behind_outage,
    )
    .await?;
    say(format!(
        "primary lost for {:.0} s with the standby out of the quorum, {:.1} MB behind: \
         writes elsewhere {}; after its restart first round {}; {} of {} rounds kept",
        behind.outage.as_secs_f64(),
        behind.behind_bytes as f64 / 1_048_576.0,
        behind
            .writes_during
            .map_or("never".into(), |d| fmt_secs(Some(d))),
        fmt_secs(behind.first_round),
        behind.rounds_kept,
        behind.rounds_before
    ));
    tokio::time::sleep(options.settle).await;
    failover::restart_exited(&mut replicas, &say);

    let nodes = lose_both_nodes(
        &mut formation,
        &admin,
        &ledger,
        options.nodes_outage,
        options.replicas,
        options.clients,
    )
    .await?;
    say(format!(
        "both nodes lost for {:.0} s: after the restart, writes on {} after {}, first round \
         after {}, primary + secondary after {}; {} of {} rounds kept",
        nodes.outage.as_secs_f64(),
        nodes.writes_on.as_deref().unwrap_or("?"),
        fmt_secs(nodes.first_write),
        fmt_secs(nodes.first_round),
        fmt_secs(nodes.healthy),
        nodes.rounds_kept,
        nodes.rounds_before
    ));
    tokio::time::sleep(options.settle).await;
    failover::restart_exited(&mut replicas, &say);

    let (ledger, unexpected_exits) = clients.stop_with(&mut replicas).await?;
    let cancelled: Vec<String> = Vec::new();
    let audit = audit::audit(
        &admin,
        audit::Expected {
            entries: &ledger.enqueued,
            cancelled_players: &cancelled,
        },
    )
    .await?;
    let mut checks = check_ledger(&admin, &ledger).await?;
    checks.extend(check_failures(&monitor, &pause, &nodes));
    checks.extend(receiver.checks());
    checks.extend(machine.checks());
    checks.extend(way_out.checks());
    checks.extend(behind.checks());
    checks.extend([
        (
            "replica exits we did not cause".into(),
            i64::from(unexpected_exits),
        ),
        ("client calls unresolved".into(), ledger.unresolved as i64),
    ]);
    admin.close().await;
    let report = FailureModesReport {
        monitor,
        pause,
        receiver,
        machine,
        way_out,
        behind,
        nodes,
        elapsed: started.elapsed(),
        ledger,
        audit,
        checks,
        settings,
        logs: work.clone(),
    };
    let clean = report.violation_count() == 0;
    drop(formation);
    if clean && !keep {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(report)
}

/// The checks of the monitor, pause and nodes failures: (name, count), all must be 0.
fn check_failures(
    monitor: &MonitorLoss,
    pause: &StandbyPause,
    nodes: &NodesLoss,
) -> Vec<(String, i64)> {
    vec![
        (
            "monitor lost: no round committed".to_string(),
            i64::from(monitor.rounds == 0),
        ),
        (
            "monitor lost: no match created".into(),
            i64::from(monitor.matches == 0),
        ),
        (
            "monitor lost: client attempts failed".into(),
            monitor.calls.failed_attempts as i64,
        ),
        (
            "monitor lost: writes refused on the primary".into(),
            i64::from(monitor.write_probes_refused),
        ),
        (
            format!(
                "monitor back: not primary + secondary within {} s",
                HEALTHY_BOUND.as_secs()
            ),
            i64::from(monitor.healthy.is_none()),
        ),
        (
            "monitor back: the primary moved".into(),
            i64::from(monitor.primary_after.as_ref() != Some(&monitor.primary)),
        ),
        (
            "standby paused: no round committed".into(),
            i64::from(pause.rounds == 0),
        ),
        (
            "standby paused: client attempts failed".into(),
            pause.calls.failed_attempts as i64,
        ),
        (
            "standby resumed: not caught up within 60 s".into(),
            i64::from(pause.caught_up.is_none()),
        ),
        (
            "both nodes lost: rounds committed before, gone".into(),
            nodes.rounds_before - nodes.rounds_kept,
        ),
        (
            "both nodes lost: matches created before, gone".into(),
            nodes.matches_before - nodes.matches_kept,
        ),
        (
            format!(
                "both nodes back: no round within {} s of the first write",
                ROUND_AFTER_WRITE_BOUND.as_secs()
            ),
            i64::from(match (nodes.first_write, nodes.first_round) {
                (Some(w), Some(r)) => r > w + ROUND_AFTER_WRITE_BOUND,
                _ => true,
            }),
        ),
        (
            "both nodes back: replicas not LISTENing again within 60 s".into(),
            i64::from(nodes.listening.is_none()),
        ),
        (
            format!(
                "both nodes back: not primary + secondary within {} s",
                HEALTHY_BOUND.as_secs()
            ),
            i64::from(nodes.healthy.is_none()),
        ),
        (
            format!(
                "both nodes back: clients not answered within {} s",
                CLIENTS_BACK_BOUND.as_secs()
            ),
            i64::from(nodes.clients_back.is_none()),
        ),
    ]
}

// ---- 1. The monitor lost -------------------------------------------------------------------

/// The standby stops flushing, three times ([`crate::standby_freeze`]): its WAL receiver,
/// its machine, its WAL receiver again with the way out taken.
async fn freeze_standbys(
    options: &FailureModesOptions,
    formation: &Formation,
    admin: &PgPool,
    replicas: &mut [Replica],
    ledger: &Shared,
    say: &impl Fn(String),
) -> anyhow::Result<(StandbyFreeze, StandbyFreeze, StandbyFreeze)> {
    let mut frozen = Vec::new();
    for (part, freeze, way_out) in [
        (Freeze::WalReceiver, options.receiver_freeze, None),
        (Freeze::Machine, options.machine_freeze, None),
        (
            Freeze::WalReceiver,
            options.receiver_freeze,
            Some(options.way_out_after),
        ),
    ] {
        let report =
            freeze_standby(formation, admin, replicas, ledger, part, freeze, way_out).await?;
        say(format!(
            "{} stopped for {:.0} s: a commit waited {}, wait_primary after {}, {} rounds \
             (as long before: {}); first round {} after the thaw",
            report.what(),
            report.frozen_for.as_secs_f64(),
            fmt_secs(report.commit_waited),
            report
                .wait_primary
                .map_or("never".into(), |d| fmt_secs(Some(d))),
            report.rounds,
            report.rounds_before,
            fmt_secs(report.first_round)
        ));
        frozen.push(report);
        tokio::time::sleep(options.settle).await;
        failover::restart_exited(replicas, say);
    }
    Ok((frozen.remove(0), frozen.remove(0), frozen.remove(0)))
}

/// Lose the monitor's machine for `outage` while the load runs, probing the primary for a
/// write every second; then start the monitor again and wait for the keepers to report.
async fn lose_monitor(
    formation: &mut Formation,
    admin: &PgPool,
    ledger: &Shared,
    outage: Duration,
) -> anyhow::Result<MonitorLoss> {
    let primary = tokio::task::block_in_place(|| formation.writable_node())
        .context("no node of the formation takes writes")?;
    let primary_url = formation.nodes[primary].url("postgres", formation::DATABASE);
    let calls_before = calls_now(ledger);
    let at = Utc::now();
    let lost = Instant::now();
    tokio::task::block_in_place(|| formation.lose_monitor());
    let (mut write_probes, mut write_probes_refused) = (0, 0);
    while lost.elapsed() < outage {
        tokio::time::sleep(Duration::from_secs(1)).await;
        write_probes += 1;
        if probe_write(&primary_url).await.is_err() {
            write_probes_refused += 1;
        }
    }
    let until = Utc::now();
    let away = lost.elapsed();
    let calls = calls_now(ledger).since(calls_before);
    let (rounds, matches) = committed_between(admin, at, until).await?;

    let back_at = Utc::now();
    let back = Instant::now();
    tokio::task::block_in_place(|| formation.restart_monitor())
        .context("starting the monitor again")?;
    let healthy = wait_for_healthy(&formation.monitor_url(), back_at, HEALTHY_BOUND)
        .await
        .map(|_| back.elapsed());
    let primary_after = tokio::task::block_in_place(|| formation.states())
        .ok()
        .and_then(|states| {
            states
                .into_iter()
                .find(|(_, reported, _)| reported == "primary")
                .map(|(name, _, _)| name)
        });
    Ok(MonitorLoss {
        primary: formation.nodes[primary].name.clone(),
        at,
        outage: away,
        rounds,
        matches,
        calls,
        write_probes,
        write_probes_refused,
        healthy,
        primary_after,
    })
}

/// One insert into `failover_probe` on `url`'s node, within 3 s.
pub(crate) async fn probe_write(url: &str) -> anyhow::Result<Duration> {
    let attempt = async {
        let mut conn = PgConnection::connect(url).await?;
        let started = Instant::now();
        sqlx::query("INSERT INTO failover_probe DEFAULT VALUES")
            .execute(&mut conn)
            .await?;
        let took = started.elapsed();
        conn.close().await?;
        Ok::<_, sqlx::Error>(took)
    };
    Ok(tokio::time::timeout(Duration::from_secs(3), attempt).await??)
}

/// Rounds committed and matches created in (from, until], by the database's clock.
/// The rounds and matches committed at a moment (how many, the newest ids), to count
/// after a failure how many of them are still there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Committed {
    pub rounds: i64,
    pub matches: i64,
    last_round: i64,
    last_match: i64,
}

impl Committed {
    pub(crate) async fn now(db: &PgPool) -> anyhow::Result<Committed> {
        let (rounds, last_round, matches, last_match) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM rounds), (SELECT coalesce(max(round_id), 0) FROM rounds),
                    (SELECT count(*) FROM matches), (SELECT coalesce(max(match_id), 0) FROM matches)",
        )
        .fetch_one(db)
        .await?;
        Ok(Committed {
            rounds,
            matches,
            last_round,
            last_match,
        })
    }

    /// How many of those rounds and matches are there now.
    pub(crate) async fn kept(&self, db: &PgPool) -> anyhow::Result<(i64, i64)> {
        Ok(sqlx::query_as(
            "SELECT (SELECT count(*) FROM rounds WHERE round_id <= $1),
                    (SELECT count(*) FROM matches WHERE match_id <= $2)",
        )
        .bind(self.last_round)
        .bind(self.last_match)
        .fetch_one(db)
        .await?)
    }
}

pub(crate) async fn committed_between(
    db: &PgPool,
    from: DateTime<Utc>,
    until: DateTime<Utc>,
) -> anyhow::Result<(i64, i64)> {
    Ok(sqlx::query_as(
        "SELECT (SELECT count(*) FROM rounds WHERE committed_at > $1 AND committed_at <= $2),
                (SELECT count(*) FROM matches WHERE created_at > $1 AND created_at <= $2)",
    )
    .bind(from)
    .bind(until)
    .fetch_one(db)
    .await?)
}

/// Until the monitor says both data nodes reported to it after `since`, one as primary
/// and one as secondary (reported and assigned), both healthy; None after `timeout`.
pub(crate) async fn wait_for_healthy(
    monitor_url: &str,
    since: DateTime<Utc>,
    timeout: Duration,
) -> Option<()> {
    let started = Instant::now();
    while started.elapsed() < timeout {
        let attempt = async {
            let mut conn = PgConnection::connect(monitor_url).await?;
            let healthy: bool = sqlx::query_scalar(
                "SELECT count(*) = 2
                        AND count(*) FILTER (WHERE reporttime > $1 AND health = 1
                                               AND reportedstate = goalstate) = 2
                        AND count(*) FILTER (WHERE reportedstate::text = 'primary') = 1
                        AND count(*) FILTER (WHERE reportedstate::text = 'secondary') = 1
                   FROM pgautofailover.node",
            )
            .bind(since)
            .fetch_one(&mut conn)
            .await?;
            conn.close().await?;
            Ok::<_, sqlx::Error>(healthy)
        };
        if let Ok(Ok(true)) = tokio::time::timeout(Duration::from_secs(3), attempt).await {
            return Some(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    None
}

// ---- 2. The standby paused ------------------------------------------------------------------

/// Pause replay on the standby for `pause` while the load runs; time commits on the
/// primary before and during, read how far behind the standby is, resume and time the
/// catch-up.
async fn pause_standby(
    formation: &Formation,
    admin: &PgPool,
    ledger: &Shared,
    pause: Duration,
) -> anyhow::Result<StandbyPause> {
    let primary = tokio::task::block_in_place(|| formation.writable_node())
        .context("no node of the formation takes writes")?;
    let standby = 1 - primary;
    let primary_url = formation.nodes[primary].url("postgres", formation::DATABASE);
    let standby_url = formation.nodes[standby].url("postgres", formation::DATABASE);
    let mut on_primary = PgConnection::connect(&primary_url).await?;
    let mut on_standby = PgConnection::connect(&standby_url).await?;
    let commit_before = commit_times(&mut on_primary).await?;

    let calls_before = calls_now(ledger);
    let at = Utc::now();
    let paused = Instant::now();
    let rounds_before = committed_between(admin, at - chrono::Duration::from_std(pause)?, at)
        .await?
        .0;
    sqlx::query("SELECT pg_wal_replay_pause()")
        .execute(&mut on_standby)
        .await?;
    tokio::time::sleep(pause.saturating_sub(Duration::from_secs(2))).await;
    let commit_during = commit_times(&mut on_primary).await?;
    let (primary_newest, primary_rounds): (Option<DateTime<Utc>>, i64) =
        sqlx::query_as("SELECT max(committed_at), count(*) FROM rounds")
            .fetch_one(&mut on_primary)
            .await?;
    let (standby_newest, standby_rounds, unreplayed_bytes, last_replay_age): (
        Option<DateTime<Utc>>,
        i64,
        i64,
        f64,
    ) = sqlx::query_as(
        "SELECT (SELECT max(committed_at) FROM rounds), (SELECT count(*) FROM rounds),
                pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::bigint,
                extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8",
    )
    .fetch_one(&mut on_standby)
    .await?;
    let until = Utc::now();
    let paused_for = paused.elapsed();
    let calls = calls_now(ledger).since(calls_before);
    let (rounds, matches) = committed_between(admin, at, until).await?;

    let target: String = sqlx::query_scalar("SELECT pg_current_wal_lsn()::text")
        .fetch_one(&mut on_primary)
        .await?;
    sqlx::query("SELECT pg_wal_replay_resume()")
        .execute(&mut on_standby)
        .await?;
    let resumed = Instant::now();
    let mut caught_up = None;
    while resumed.elapsed() < Duration::from_secs(60) {
        let done: bool = sqlx::query_scalar("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn")
            .bind(&target)
            .fetch_one(&mut on_standby)
            .await?;
        if done {
            caught_up = Some(resumed.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    on_primary.close().await?;
    on_standby.close().await?;
    let stale_by = match (primary_newest, standby_newest) {
        (Some(p), Some(s)) => (p - s).to_std().unwrap_or_default(),
        _ => Duration::ZERO,
    };
    Ok(StandbyPause {
        standby: formation.nodes[standby].name.clone(),
        paused_for,
        rounds_before,
        rounds,
        matches,
        calls,
        commit_before,
        commit_during,
        stale_by,
        rounds_behind: primary_rounds - standby_rounds,
        unreplayed_bytes,
        last_replay_age: Duration::from_secs_f64(last_replay_age.max(0.0)),
        caught_up,
    })
}

/// The median and the longest of 20 commits of an insert each on `conn`.
async fn commit_times(conn: &mut PgConnection) -> anyhow::Result<(Duration, Duration)> {
    let mut times = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        sqlx::query("INSERT INTO failover_probe DEFAULT VALUES")
            .execute(&mut *conn)
            .await?;
        times.push(started.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    times.sort();
    Ok((times[times.len() / 2], times[times.len() - 1]))
}

// ---- 3. Both nodes lost ---------------------------------------------------------------------

/// Lose both data nodes' machines (the primary's first), wait `outage`, start both again
/// (the primary's first); time the first write, the first round, the replicas' LISTEN
/// sessions and the formation's health from the restart; count what was kept.
async fn lose_both_nodes(
    formation: &mut Formation,
    admin: &PgPool,
    ledger: &Shared,
    outage: Duration,
    replicas: u64,
    clients: usize,
) -> anyhow::Result<NodesLoss> {
    let primary = tokio::task::block_in_place(|| formation.writable_node())
        .context("no node of the formation takes writes")?;
    let standby = 1 - primary;
    let before = Committed::now(admin).await?;
    let calls_before = calls_now(ledger);
    let at = Utc::now();
    let lost = Instant::now();
    formation.lose_machine(primary);
    formation.lose_machine(standby);
    tokio::time::sleep(outage.saturating_sub(lost.elapsed())).await;
    let outage = lost.elapsed();

    let back = Instant::now();
    let back_at = Utc::now();
    formation.start_node(primary)?;
    formation.start_node(standby)?;
    let urls: Vec<String> = formation
        .nodes
        .iter()
        .map(|n| n.url("postgres", formation::DATABASE))
        .collect();
    let first_write = first_write_any(&urls, back).await;
    let writes_on = first_write.map(|(i, _)| formation.nodes[i].name.clone());
    let first_write = first_write.map(|(_, d)| d);
    // Measured from the restart (the database's clock and ours are the same machine's).
    let first_round = failover::first_round_after(admin.clone(), back_at).await;
    let listening = failover::listeners_back(admin, replicas, back).await;
    let healthy = wait_for_healthy(&formation.monitor_url(), back_at, HEALTHY_BOUND)
        .await
        .map(|_| back.elapsed());
    let wait_primary = wait_primary_window(&formation.monitor_url(), at).await;
    let clients_back = answered_since(ledger, calls_before, clients as u64, back).await;
    let calls = calls_now(ledger).since(calls_before);
    let (rounds_kept, matches_kept) = before.kept(admin).await?;
    Ok(NodesLoss {
        primary: formation.nodes[primary].name.clone(),
        at,
        outage,
        rounds_before: before.rounds,
        rounds_kept,
        matches_before: before.matches,
        matches_kept,
        first_write,
        writes_on,
        first_round,
        listening,
        healthy,
        wait_primary,
        clients_back,
        calls,
        longest_call: ledger.lock().unwrap().longest_call,
    })
}

/// Until `n` client calls have been answered since `before` (each client's call in flight
/// when the nodes were lost, or its next one): the time since `since`; at most
/// [`CLIENTS_BACK_BOUND`].
async fn answered_since(
    ledger: &Shared,
    before: Calls,
    n: u64,
    since: Instant,
) -> Option<Duration> {
    while since.elapsed() < CLIENTS_BACK_BOUND {
        if calls_now(ledger).since(before).calls >= n {
            return Some(since.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// From the monitor's events since `since`: from when it first assigned a node
/// `wait_primary` until it next assigned `primary`.
async fn wait_primary_window(monitor_url: &str, since: DateTime<Utc>) -> Option<Duration> {
    let mut conn = PgConnection::connect(monitor_url).await.ok()?;
    let window: Option<f64> = sqlx::query_scalar(
        "WITH w AS (SELECT min(eventtime) AS t FROM pgautofailover.event
                     WHERE eventtime > $1 AND goalstate::text = 'wait_primary')
         SELECT extract(epoch FROM (SELECT min(e.eventtime) FROM pgautofailover.event e
                                     WHERE e.eventtime > w.t AND e.goalstate::text = 'primary')
                                   - w.t)::float8
           FROM w",
    )
    .bind(since)
    .fetch_one(&mut conn)
    .await
    .ok()?;
    let _ = conn.close().await;
    window.map(|s| Duration::from_secs_f64(s.max(0.0)))
}

/// Until one of `urls` takes a write: its index and the time since `since`; at most 3
/// minutes.
async fn first_write_any(urls: &[String], since: Instant) -> Option<(usize, Duration)> {
    while since.elapsed() < Duration::from_secs(180) {
        for (i, url) in urls.iter().enumerate() {
            if probe_write(url).await.is_ok() {
                return Some((i, since.elapsed()));
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_since_counts_the_window() {
        let before = Calls {
            calls: 10,
            retried_calls: 1,
            failed_attempts: 2,
            unresolved: 0,
        };
        let after = Calls {
            calls: 25,
            retried_calls: 3,
            failed_attempts: 7,
            unresolved: 1,
        };
        assert_eq!(
            after.since(before),
            Calls {
                calls: 15,
                retried_calls: 2,
                failed_attempts: 5,
                unresolved: 1,
            }
        );
    }
}
