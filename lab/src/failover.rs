//! `matchmaker-lab failover`: a database failover under load, on a real pg_auto_failover
//! formation ([`crate::formation`]): a monitor, a primary and a synchronous standby on this
//! machine. Two daemon replicas (`matchmaker run`) run on the formation's multi-host URL
//! (`target_session_attrs=read-write`) with two fast queues, `ready` (2v2 with a ready
//! check) and `duel` (1v1 with built-in ratings), while simulated clients enqueue, poll
//! `player_status`, accept their ready checks and report their duels' results through the
//! client functions, as a client login, repeating every call that fails because the
//! database is unavailable (SQLSTATE class 08, 25006, 40, 53, 57, or a lost connection).
//!
//! Then the primary's machine is lost: its keeper, its postmaster and every backend
//! SIGKILLed while a round of `ready` is in flight and ready checks are pending. The run
//! times the failover (the loss until the standby takes a write) and the first round
//! after it, brings the lost node back as the new standby, and later performs a
//! controlled switchover (`pg_autoctl perform switchover`), timed the same way. At the
//! end it audits the database ([`matchmaker_testkit::audit`]) and checks what the clients
//! were told against it: every match a client saw still exists with that client's player,
//! every acknowledged accept and result is kept, no result moved a rating twice, and the
//! first round after each event came within [`ROUND_BOUND`] of it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::json;
use sqlx::{Connection, PgConnection, PgPool};
use tokio::sync::watch;

use matchmaker::db;
use matchmaker_testkit::audit;
use matchmaker_testkit::fleet::*;

use crate::formation::{self, Formation, Timeouts};

/// The issue's bound: the first round on the new primary within a minute of the loss (a
/// lease TTL plus the formation's failover time, about 50 s with pg_auto_failover's
/// default timeouts).
pub const ROUND_BOUND: Duration = Duration::from_secs(60);

/// How long a client repeats a call the database could not take.
pub const RETRY_FOR: Duration = Duration::from_secs(120);

#[derive(Debug, Clone)]
pub struct FailoverOptions {
    /// Client load and answers before the primary is lost.
    pub warmup: Duration,
    /// Load after each event (the loss, the switchover) before the next step.
    pub settle: Duration,
    /// Daemon replicas.
    pub replicas: u64,
    /// Concurrent clients (each keeps a dozen players waiting).
    pub clients: usize,
    pub seed: u64,
    /// pg_auto_failover's timeouts for the formation.
    pub timeouts: Timeouts,
    /// Keep the formation, the replicas' logs and the config here; default: a temporary
    /// directory, removed after a clean run. The `postgres` user must be able to enter it
    /// when running as root.
    pub log_dir: Option<PathBuf>,
}

impl Default for FailoverOptions {
    fn default() -> Self {
        FailoverOptions {
            warmup: Duration::from_secs(20),
            settle: Duration::from_secs(20),
            replicas: 2,
            clients: 4,
            seed: 1,
            timeouts: Timeouts::default(),
            log_dir: None,
        }
    }
}

/// The queues: `ready` (2v2, ready check, a round every 3 s with a 1 s solve, so a kill
/// lands in a round in flight) and `duel` (1v1 on built-in ratings, results reported).
pub const FAILOVER_CONFIG: &str = r#"
default_queue = "ready"

[daemon]
poll_interval = "1s"
lease_ttl = "5s"
lease_renew = "1s"

[queues.ready]
teams = 2
team_size = 2
[queues.ready.round]
every = "3s"
budget = "1s"
threads = 1
[queues.ready.ready_check]
timeout = "20s"

[queues.duel]
teams = 2
team_size = 1
[queues.duel.round]
every = "2s"
budget = "200ms"
threads = 1
[queues.duel.rating]
system = "weng_lin"
"#;

pub(crate) const QUEUES: [&str; 2] = ["ready", "duel"];
pub(crate) const CLIENT_LOGIN: &str = "failover_client";

pub fn run(options: FailoverOptions) -> anyhow::Result<()> {
    let exe = crate::product_binary()?;
    // The lab's own pools follow the formation too: their "no database host fits"
    // during the failover is the expected part, kept out of the figures (RUST_LOG
    // overrides).
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("warn,sqlx=error,matchmaker::db::target=error")
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    crate::run_beside_replicas(async move {
        let report = failover(&options, &exe, |line| println!("{line}")).await?;
        report.print();
        let violations = report.violation_count();
        anyhow::ensure!(
            violations == 0,
            "{violations} violations (logs: {})",
            report.logs.display()
        );
        Ok(())
    })
}

// ---- What the clients were told ---------------------------------------------------------

/// A match a client read (`player_status`), with its player.
#[derive(Debug, Clone)]
pub struct SeenMatch {
    pub queue: String,
    pub players: Vec<String>,
    pub first_seen: Instant,
}

/// Everything the clients were told, and how their calls went.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Entry ids enqueue returned.
    pub enqueued: Vec<i64>,
    /// Matches read from player_status (pending or matched), by id.
    pub seen: BTreeMap<i64, SeenMatch>,
    /// (player, match, when) whose accept_match answered accepted.
    pub accepted: Vec<(String, i64, DateTime<Utc>)>,
    /// Matches whose report_result answered recorded.
    pub results: Vec<i64>,
    pub calls: u64,
    /// Calls that failed at least once as unavailable and were repeated.
    pub retried_calls: u64,
    /// Attempts that failed as unavailable.
    pub failed_attempts: u64,
    /// Calls still failing after [`RETRY_FOR`], or refused for another reason.
    pub unresolved: u64,
    /// What each unresolved call was, and its error.
    pub unresolved_calls: Vec<String>,
    pub last_error: Option<String>,
    /// The longest a call took to succeed, retries included.
    pub longest_call: Duration,
}

pub(crate) type Shared = Arc<Mutex<Ledger>>;

/// Whether a failed call may be repeated: the database was unavailable, so the call
/// either did nothing or its outcome is unknown (a lost connection at COMMIT). Classes
/// 08 (connection), 40 (rollback), 53 (resources), 57 (operator intervention: a shutdown),
/// 25006 (a read-only session: a host being demoted), and lost or refused connections.
pub fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(d) => d.code().is_some_and(|code| {
            ["08", "40", "53", "57"].iter().any(|c| code.starts_with(c)) || code == "25006"
        }),
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::WorkerCrashed => true,
        // A multi-host pool with no host that takes writes yet.
        sqlx::Error::Configuration(c) => c.to_string().contains("target_session_attrs"),
        _ => false,
    }
}

/// A call's answer: `Ok`, or the last error and whether any attempt failed as
/// unavailable (then a refusal may come from an earlier attempt that did commit).
struct Failed {
    error: sqlx::Error,
    retried: bool,
}

/// Run `f` until it succeeds, fails for another reason than unavailability, or
/// [`RETRY_FOR`] passes.
async fn call<T, F, Fut>(ledger: &Shared, mut f: F) -> Result<T, Failed>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, sqlx::Error>>,
{
    let started = Instant::now();
    let mut retried = false;
    loop {
        match f().await {
            Ok(v) => {
                let mut l = ledger.lock().unwrap();
                l.calls += 1;
                l.retried_calls += u64::from(retried);
                l.longest_call = l.longest_call.max(started.elapsed());
                return Ok(v);
            }
            Err(e) if is_unavailable(&e) && started.elapsed() < RETRY_FOR => {
                {
                    let mut l = ledger.lock().unwrap();
                    l.failed_attempts += 1;
                    l.last_error = Some(db::describe_sql_error(&e));
                }
                retried = true;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(error) => {
                let mut l = ledger.lock().unwrap();
                l.calls += 1;
                l.retried_calls += u64::from(retried);
                return Err(Failed { error, retried });
            }
        }
    }
}

fn unresolved(ledger: &Shared, what: &str, e: &sqlx::Error) {
    let mut l = ledger.lock().unwrap();
    l.unresolved += 1;
    let call = format!("{what}: {}", db::describe_sql_error(e));
    l.unresolved_calls.push(call.clone());
    l.last_error = Some(call);
}

/// One waiting player of a client.
struct Waiting {
    id: String,
    queue: &'static str,
    /// The match it is in, and what it will do about it.
    plan: Option<(i64, Plan, Instant)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Accept,
    Decline,
    /// Never answers: the ready check times out.
    Silent,
    /// A duel: report the result once (the player of team 0 does).
    Report,
    Done,
}

/// One client: keeps a dozen players waiting, polls them, answers and reports.
pub(crate) async fn client(
    pool: PgPool,
    ledger: Shared,
    index: usize,
    seed: u64,
    mut stop: watch::Receiver<bool>,
) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (index as u64).wrapping_mul(0x9e37));
    let mut players: Vec<Waiting> = Vec::new();
    let mut next = 0u64;
    let mut ticker = tokio::time::interval(Duration::from_millis(200));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.changed() => {}
            _ = ticker.tick() => {}
        }
        if *stop.borrow() {
            return;
        }
        // Keep 12 players waiting (a third of them in duel).
        while players.len() < 12 && !*stop.borrow() {
            next += 1;
            let queue = if rng.random_bool(1.0 / 3.0) {
                "duel"
            } else {
                "ready"
            };
            let id = format!("c{index}p{next}");
            let skill = (queue == "ready").then(|| rng.random_range(1000.0..2000.0_f64).round());
            if enqueue(&pool, &ledger, queue, &id, skill).await {
                players.push(Waiting {
                    id,
                    queue,
                    plan: None,
                });
            }
        }
        poll(&pool, &ledger, &mut players, &mut rng).await;
        act(&pool, &ledger, &mut players).await;
        players.retain(|p| !matches!(p.plan, Some((_, Plan::Done, _))));
    }
}

/// `enqueue()`; true when the player is queued. A repeat after an attempt whose outcome
/// was unknown may hear "already queued": the earlier attempt committed, and
/// player_status has its entry.
async fn enqueue(
    pool: &PgPool,
    ledger: &Shared,
    queue: &str,
    player: &str,
    skill: Option<f64>,
) -> bool {
    let latencies = json!({"eu": 30});
    let result = call(ledger, || {
        sqlx::query_scalar::<_, i64>(
            "SELECT enqueue(queue => $1, player_id => $2, skill => $3, latencies => $4)",
        )
        .bind(queue)
        .bind(player)
        .bind(skill)
        .bind(&latencies)
        .fetch_one(pool)
    })
    .await;
    let entry = match result {
        Ok(id) => Some(id),
        Err(Failed { error, retried })
            if retried && error.to_string().contains("already queued") =>
        {
            call(ledger, || {
                sqlx::query_scalar::<_, i64>(
                    "SELECT entry_id FROM player_status($2::text) WHERE queue = $1",
                )
                .bind(queue)
                .bind(player)
                .fetch_optional(pool)
            })
            .await
            .ok()
            .flatten()
        }
        Err(Failed { error, .. }) => {
            unresolved(ledger, &format!("enqueue {player}"), &error);
            None
        }
    };
    if let Some(id) = entry {
        ledger.lock().unwrap().enqueued.push(id);
    }
    entry.is_some()
}

/// Read the players' rows in player_status: record the matches seen, plan the answers.
async fn poll(
    pool: &PgPool,
    ledger: &Shared,
    players: &mut [Waiting],
    rng: &mut Xoshiro256PlusPlus,
) {
    if players.is_empty() {
        return;
    }
    let ids: Vec<String> = players.iter().map(|p| p.id.clone()).collect();
    let rows: Vec<StatusRow> = match call(ledger, || {
        sqlx::query_as(
            "SELECT queue, player_id, status, match_id, team FROM player_status($1::text[])",
        )
        .bind(&ids)
        .fetch_all(pool)
    })
    .await
    {
        Ok(rows) => rows,
        Err(Failed { error, .. }) => {
            unresolved(ledger, "player_status", &error);
            return;
        }
    };
    let now = Instant::now();
    for (queue, player, status, match_id, team) in rows {
        let Some(p) = players
            .iter_mut()
            .find(|p| p.id == player && p.queue == queue)
        else {
            continue;
        };
        match (status.as_str(), match_id) {
            ("pending" | "matched", Some(m)) => {
                {
                    let mut l = ledger.lock().unwrap();
                    let seen = l.seen.entry(m).or_insert_with(|| SeenMatch {
                        queue: queue.clone(),
                        players: Vec::new(),
                        first_seen: now,
                    });
                    if !seen.players.contains(&player) {
                        seen.players.push(player.clone());
                    }
                }
                let planned = p
                    .plan
                    .filter(|(pm, _, _)| *pm == m)
                    .map(|(_, plan, _)| plan);
                if status == "pending" {
                    if planned.is_none() {
                        let roll: f64 = rng.random();
                        let plan = if roll < 0.88 {
                            Plan::Accept
                        } else if roll < 0.92 {
                            Plan::Decline
                        } else {
                            Plan::Silent
                        };
                        let delay = Duration::from_millis(rng.random_range(300..4000));
                        p.plan = Some((m, plan, now + delay));
                    }
                } else if !matches!(planned, Some(Plan::Report | Plan::Done)) {
                    // Matched (a ready check passed, or a duel): a duel's result is
                    // reported by its team 0's player.
                    p.plan = Some(if queue == "duel" && team == Some(0) {
                        let delay = Duration::from_millis(rng.random_range(500..3000));
                        (m, Plan::Report, now + delay)
                    } else {
                        (m, Plan::Done, now)
                    });
                }
            }
            // Queued again after a ready check another player failed: a new wait.
            ("queued", _) => p.plan = None,
            ("pending" | "matched", None) => {}
            // declined, expired, rejected, cancelled, withdrawn: this wait is over.
            _ => p.plan = Some((0, Plan::Done, now)),
        }
    }
}

/// Answer the ready checks and report the results that are due.
async fn act(pool: &PgPool, ledger: &Shared, players: &mut [Waiting]) {
    let now = Instant::now();
    for p in players.iter_mut() {
        let Some((m, plan, due)) = p.plan else {
            continue;
        };
        if due > now {
            continue;
        }
        match plan {
            Plan::Accept => {
                let answer = call(ledger, || {
                    sqlx::query_scalar::<_, String>("SELECT accept_match($1, $2)")
                        .bind(&p.id)
                        .bind(m)
                        .fetch_one(pool)
                })
                .await;
                match answer {
                    Ok(a) if a == "accepted" || a == "already_accepted" => {
                        ledger
                            .lock()
                            .unwrap()
                            .accepted
                            .push((p.id.clone(), m, Utc::now()));
                    }
                    Ok(_) => {}
                    // The ready check was resolved first (another player declined or the
                    // time ran out): refused in class 22, nothing written.
                    Err(Failed { error, .. })
                        if matches!(&error, sqlx::Error::Database(d)
                            if d.code().is_some_and(|c| c.starts_with("22"))) => {}
                    Err(Failed { error, .. }) => unresolved(ledger, "accept_match", &error),
                }
                // Wait for the match to be ready (or for the player to be queued again).
                p.plan = Some((m, Plan::Silent, now));
            }
            Plan::Decline => {
                if let Err(Failed { error, .. }) = call(ledger, || {
                    sqlx::query_scalar::<_, String>("SELECT decline_match($1, $2)")
                        .bind(&p.id)
                        .bind(m)
                        .fetch_one(pool)
                })
                .await
                    && !matches!(&error, sqlx::Error::Database(d)
                        if d.code().is_some_and(|c| c.starts_with("22")))
                {
                    unresolved(ledger, "decline_match", &error);
                }
                p.plan = Some((m, Plan::Done, now));
            }
            Plan::Report => {
                let ranks: Vec<i32> = if m % 2 == 0 { vec![1, 2] } else { vec![2, 1] };
                let answer = call(ledger, || {
                    sqlx::query_scalar::<_, String>("SELECT report_result($1, $2)")
                        .bind(m)
                        .bind(&ranks)
                        .fetch_one(pool)
                })
                .await;
                let recorded = match answer {
                    Ok(a) => a == "recorded",
                    // A repeat after an attempt whose outcome was unknown: this login's
                    // second report is refused if the first one committed.
                    Err(Failed {
                        error,
                        retried: true,
                    }) => {
                        let shown = call(ledger, || {
                            sqlx::query_scalar::<_, bool>(
                                "SELECT bool_or(team_rank IS NOT NULL) \
                                   FROM match_details($1::bigint)",
                            )
                            .bind(m)
                            .fetch_one(pool)
                        })
                        .await;
                        match shown {
                            Ok(shown) => shown,
                            Err(_) => {
                                unresolved(ledger, "report_result", &error);
                                false
                            }
                        }
                    }
                    Err(Failed { error, .. }) => {
                        unresolved(ledger, "report_result", &error);
                        false
                    }
                };
                if recorded {
                    ledger.lock().unwrap().results.push(m);
                }
                p.plan = Some((m, Plan::Done, now));
            }
            Plan::Silent | Plan::Done => {}
        }
    }
}

// ---- The events -------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The primary's machine lost (keeper, postmaster and backends SIGKILLed).
    PrimaryLost,
    /// `pg_autoctl perform switchover`.
    Switchover,
}

/// A client's poll of `player_status`: queue, player, status, match, team.
type StatusRow = (String, String, String, Option<i64>, Option<i32>);

/// An acknowledged accept as the audit reads it back: player, match, when, the match's
/// status, the player's stored answer, the player's latest entry status.
type AcceptRow = (
    String,
    i64,
    DateTime<Utc>,
    String,
    Option<String>,
    Option<String>,
);

/// What one event did and how long the formation and the daemon took.
#[derive(Debug, Clone)]
pub struct Event {
    pub kind: EventKind,
    /// The primary before, and the node that took writes after.
    pub from: String,
    pub to: Option<String>,
    pub at: DateTime<Utc>,
    /// A round of `ready` was running (queue_state says so) when it struck.
    pub in_round: bool,
    /// Sessions inside a round's commit at that moment.
    pub committing: i64,
    /// Matches waiting for their ready check then.
    pub pending: Vec<i64>,
    /// Matches the clients had seen by then.
    pub seen_before: usize,
    /// Until the other node took a write.
    pub failover: Option<Duration>,
    /// Until the first round committed after it.
    pub first_round: Option<Duration>,
    /// Until the monitor reported a primary and a secondary again (the lost node back).
    pub rejoined: Option<Duration>,
    /// Until every replica LISTENed on the new primary again.
    pub listening: Option<Duration>,
}

/// The run's figures and checks.
#[derive(Debug)]
pub struct FailoverReport {
    pub events: Vec<Event>,
    pub elapsed: Duration,
    pub ledger: Ledger,
    pub audit: audit::Audit,
    /// Matches created before the first event, between the events, after the last.
    pub matches_by_phase: Vec<i64>,
    /// Extra counts beside the audit's: (name, count), all must be 0.
    pub checks: Vec<(String, i64)>,
    /// The formation's replication settings when the run started.
    pub settings: Vec<(String, String)>,
    pub logs: PathBuf,
}

impl FailoverReport {
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

    pub fn event(&self, kind: EventKind) -> Option<&Event> {
        self.events.iter().find(|e| e.kind == kind)
    }

    pub fn print(&self) {
        let secs = |d: Option<Duration>| match d {
            Some(d) => format!("{:.1} s", d.as_secs_f64()),
            None => "never".into(),
        };
        let l = &self.ledger;
        println!();
        for (name, value) in &self.settings {
            println!("  {name:<58} {value:>14}");
        }
        for e in &self.events {
            let what = match e.kind {
                EventKind::PrimaryLost => "primary lost",
                EventKind::Switchover => "switchover",
            };
            println!(
                "  {what}: {} -> {}, {} a round of ready, {} commits in flight, {} ready checks pending",
                e.from,
                e.to.as_deref().unwrap_or("?"),
                if e.in_round { "during" } else { "outside" },
                e.committing,
                e.pending.len()
            );
            println!(
                "  {:<58} {:>14}",
                format!("  {what} -> new primary takes writes"),
                secs(e.failover)
            );
            println!(
                "  {:<58} {:>14}",
                format!(
                    "  {what} -> first round (bound {} s)",
                    ROUND_BOUND.as_secs()
                ),
                secs(e.first_round)
            );
            println!(
                "  {:<58} {:>14}",
                format!("  {what} -> every replica LISTENs again"),
                secs(e.listening)
            );
            if e.kind == EventKind::PrimaryLost {
                println!(
                    "  {:<58} {:>14}",
                    "  lost node restarted -> primary + secondary again",
                    secs(e.rejoined)
                );
            }
            println!(
                "  {:<58} {:>14}",
                "  matches the clients had seen by then", e.seen_before
            );
        }
        let phases = [
            "before the loss",
            "between loss and switchover",
            "after the switchover",
        ];
        for (phase, n) in phases.iter().zip(&self.matches_by_phase) {
            println!("  {:<58} {n:>14}", format!("matches created {phase}"));
        }
        let rows: Vec<(&str, String)> = vec![
            ("time", format!("{:.1} s", self.elapsed.as_secs_f64())),
            ("client calls", l.calls.to_string()),
            (
                "  of them repeated after the database was unavailable",
                l.retried_calls.to_string(),
            ),
            (
                "  attempts that failed as unavailable",
                l.failed_attempts.to_string(),
            ),
            (
                "  longest call, repeats included",
                format!("{:.1} s", l.longest_call.as_secs_f64()),
            ),
            (
                "entries enqueued (acknowledged)",
                l.enqueued.len().to_string(),
            ),
            ("matches seen by clients", l.seen.len().to_string()),
            (
                "ready checks accepted (acknowledged)",
                l.accepted.len().to_string(),
            ),
            (
                "results recorded (acknowledged)",
                l.results.len().to_string(),
            ),
        ];
        for (name, value) in rows {
            println!("  {name:<58} {value:>14}");
        }
        for (name, n) in self.audit.totals() {
            println!("  {name:<58} {n:>14}");
        }
        println!("  violations (all must be 0):");
        for (name, n) in self.violations() {
            println!("  {name:<58} {n:>14}");
        }
        if let Some(e) = &l.last_error {
            println!("  last client error: {e}");
        }
        for call in &l.unresolved_calls {
            println!("  unresolved call: {call}");
        }
    }
}

/// The whole run: formation, schema, replicas, clients, the loss, the switchover, the
/// audit. `say` gets a line per step.
pub async fn failover(
    options: &FailoverOptions,
    exe: &Path,
    say: impl Fn(String),
) -> anyhow::Result<FailoverReport> {
    let started = Instant::now();
    let (work, keep) = work_dir(options.log_dir.as_deref(), "failover")?;
    let mut formation = start_formation(&work, keep, options.timeouts, &say)?;
    let url = formation.url("postgres")?;
    let client_url = formation.url(CLIENT_LOGIN)?;
    let admin = db::connect_with(&url, 4).await?;
    prepare_database(&admin, options.clients).await?;
    let mut settings = replication_settings(&formation, &admin).await?;
    settings.extend(timeout_settings(options.timeouts));
    let mut replicas = start_replicas(options.replicas, exe, &url, &work, &admin).await?;
    let clients = Clients::start(&client_url, options.clients, options.seed).await?;
    say(format!(
        "{} replicas and {} clients running; warming up for {:?}",
        options.replicas, options.clients, options.warmup
    ));
    tokio::time::sleep(options.warmup).await;

    let mut events = Vec::new();
    events.push(lose_primary(&mut formation, &admin, &clients.ledger, options, &say).await?);
    tokio::time::sleep(options.settle).await;
    restart_exited(&mut replicas, &say);
    if events[0].rejoined.is_some() {
        events.push(switch_over(&mut formation, &admin, &clients.ledger, options, &say).await?);
        tokio::time::sleep(options.settle).await;
    }

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
    checks.extend(check_events(&admin, &events, unexpected_exits, &ledger).await?);
    let matches_by_phase = matches_by_phase(&admin, &events).await?;
    checks.extend(check_phases(&matches_by_phase));
    admin.close().await;
    let report = FailoverReport {
        events,
        elapsed: started.elapsed(),
        ledger,
        audit,
        matches_by_phase,
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

/// The run's directory: `log_dir` (kept), or a temporary one named after the command
/// (removed after a clean run); created. True: kept.
pub(crate) fn work_dir(log_dir: Option<&Path>, command: &str) -> anyhow::Result<(PathBuf, bool)> {
    let (work, keep) = match log_dir {
        Some(dir) => (dir.to_path_buf(), true),
        None => (
            std::env::temp_dir().join(format!("matchmaker-{command}-{}", std::process::id())),
            false,
        ),
    };
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    Ok((work, keep))
}

/// The pg_auto_failover formation in `work`, up; says where it listens.
pub(crate) fn start_formation(
    work: &Path,
    keep: bool,
    timeouts: Timeouts,
    say: &impl Fn(String),
) -> anyhow::Result<Formation> {
    let started = Instant::now();
    let formation = tokio::task::block_in_place(|| Formation::start_with(work, keep, timeouts))
        .context("starting the pg_auto_failover formation")?;
    say(format!(
        "formation up in {:.1} s: monitor :{}, node1 :{} (primary), node2 :{} (standby); logs in {}",
        started.elapsed().as_secs_f64(),
        formation.monitor.port,
        formation.nodes[0].port,
        formation.nodes[1].port,
        work.display()
    ));
    say(format!("DATABASE_URL={}", formation.url("postgres")?));
    Ok(formation)
}

/// The schema, the lease log, the login of `clients` clients and the table the write
/// probe fills.
pub(crate) async fn prepare_database(admin: &PgPool, clients: usize) -> anyhow::Result<()> {
    db::migrate(admin).await?;
    audit::install_lease_log(admin).await?;
    // Bounded, as a deployment bounds its client logins: the replicas refuse to start
    // beside an unbounded one. The clients' pool, and a spare for a reconnect.
    let client_limit = clients * 2 + 2;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE ROLE {CLIENT_LOGIN} LOGIN CONNECTION LIMIT {client_limit} IN ROLE matchmaker_client"
    )))
    .execute(admin)
    .await?;
    sqlx::query("CREATE TABLE failover_probe (at timestamptz NOT NULL DEFAULT clock_timestamp())")
        .execute(admin)
        .await?;
    Ok(())
}

/// `replicas` daemon replicas on `url` and the failover config, once they hold every
/// queue's lease.
pub(crate) async fn start_replicas(
    replicas: u64,
    exe: &Path,
    url: &str,
    work: &Path,
    admin: &PgPool,
) -> anyhow::Result<Vec<Replica>> {
    let config = write_config(work, FAILOVER_CONFIG)?;
    let replicas: Vec<Replica> = (1..=replicas)
        .map(|i| Replica::start(replica_spec(exe, url, &config, &format!("r{i}"), work)))
        .collect::<Result<_, _>>()?;
    await_leaders(replicas, admin).await
}

/// How to start replica `name` on `url` with `config`, logging into `work`.
pub(crate) fn replica_spec(
    exe: &Path,
    url: &str,
    config: &Path,
    name: &str,
    work: &Path,
) -> ReplicaSpec {
    ReplicaSpec {
        exe: exe.to_path_buf(),
        database_url: url.to_string(),
        config: config.to_path_buf(),
        name: name.to_string(),
        clock_skew: None,
        log_dir: work.to_path_buf(),
    }
}

/// `replicas`, once they hold every queue's lease and have published every queue (the
/// clients' enqueues refuse a queue not published yet).
pub(crate) async fn await_leaders(
    replicas: Vec<Replica>,
    admin: &PgPool,
) -> anyhow::Result<Vec<Replica>> {
    let started = Instant::now();
    let published = async {
        while started.elapsed() < Duration::from_secs(60) {
            let n: i64 =
                sqlx::query_scalar("SELECT count(*) FROM queues WHERE active AND queue = ANY($1)")
                    .bind(&QUEUES[..])
                    .fetch_one(admin)
                    .await?;
            if n == QUEUES.len() as i64 {
                return Ok::<_, sqlx::Error>(true);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(false)
    };
    if !wait_for_leaders(admin, &QUEUES, Duration::from_secs(60)).await || !published.await? {
        anyhow::bail!(
            "no replica took the leases and published the queues within 60 s; log tail:\n{}",
            replicas[0].log_tail(20)
        );
    }
    Ok(replicas)
}

/// The client tasks, their pool, their shared ledger and the switch that stops them.
pub(crate) struct Clients {
    pool: PgPool,
    pub(crate) ledger: Shared,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Clients {
    /// `clients` clients on `client_url`, their answers drawn from `seed`.
    pub(crate) async fn start(
        client_url: &str,
        clients: usize,
        seed: u64,
    ) -> anyhow::Result<Clients> {
        let ledger: Shared = Arc::default();
        let pool = db::connect_with(client_url, clients as u32 * 2).await?;
        let (stop, stop_rx) = watch::channel(false);
        let tasks = (0..clients)
            .map(|i| {
                tokio::spawn(client(
                    pool.clone(),
                    ledger.clone(),
                    i,
                    seed,
                    stop_rx.clone(),
                ))
            })
            .collect();
        Ok(Clients {
            pool,
            ledger,
            stop,
            tasks,
        })
    }

    /// Stop the clients, let the daemon take what they last did, stop the replicas.
    /// Returns the clients' ledger and the replica exits the run did not cause.
    pub(crate) async fn stop_with(self, replicas: &mut [Replica]) -> anyhow::Result<(Ledger, u32)> {
        let _ = self.stop.send(true);
        for task in self.tasks {
            task.await.context("a client task")?;
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        let mut unexpected_exits = 0;
        for replica in replicas.iter_mut() {
            replica.check_alive();
            unexpected_exits += replica.unexpected_exits;
            replica.terminate(Duration::from_secs(10));
        }
        self.pool.close().await;
        let ledger = std::mem::take(&mut *self.ledger.lock().unwrap());
        Ok((ledger, unexpected_exits))
    }
}

/// The primary's machine lost, mid-round, with ready checks pending; then the lost node
/// started again until it is back as the standby.
async fn lose_primary(
    formation: &mut Formation,
    admin: &PgPool,
    ledger: &Shared,
    options: &FailoverOptions,
    say: &impl Fn(String),
) -> anyhow::Result<Event> {
    let mut loss = strike(
        formation,
        admin,
        ledger,
        EventKind::PrimaryLost,
        options.replicas,
    )
    .await?;
    say(format!(
        "primary {} lost at {}: writes on {} after {}, first round after {}",
        loss.from,
        loss.at.format("%H:%M:%S%.3f"),
        loss.to.as_deref().unwrap_or("?"),
        fmt_secs(loss.failover),
        fmt_secs(loss.first_round)
    ));
    let lost = formation
        .nodes
        .iter()
        .position(|n| n.name == loss.from)
        .expect("the lost node is a node");
    let back = Instant::now();
    formation.start_node(lost)?;
    let to = loss.to.clone().unwrap_or_default();
    let rejoined = tokio::task::block_in_place(|| {
        formation.wait_for_states(
            &[(&to, "primary"), (&loss.from, "secondary")],
            Duration::from_secs(180),
        )
    });
    loss.rejoined = rejoined.is_ok().then(|| back.elapsed());
    if let Err(e) = rejoined {
        say(format!("the lost node did not rejoin: {e:#}"));
    } else {
        say(format!(
            "{} back as the standby after {}",
            loss.from,
            fmt_secs(loss.rejoined)
        ));
    }
    Ok(loss)
}

/// A planned switchover to the standby.
async fn switch_over(
    formation: &mut Formation,
    admin: &PgPool,
    ledger: &Shared,
    options: &FailoverOptions,
    say: &impl Fn(String),
) -> anyhow::Result<Event> {
    let switch = strike(
        formation,
        admin,
        ledger,
        EventKind::Switchover,
        options.replicas,
    )
    .await?;
    say(format!(
        "switchover {} -> {}: writes after {}, first round after {}",
        switch.from,
        switch.to.as_deref().unwrap_or("?"),
        fmt_secs(switch.failover),
        fmt_secs(switch.first_round)
    ));
    Ok(switch)
}

/// The run's checks of each event, the replicas and the clients: (name, count), all
/// must be 0.
async fn check_events(
    admin: &PgPool,
    events: &[Event],
    unexpected_exits: u32,
    ledger: &Ledger,
) -> anyhow::Result<Vec<(String, i64)>> {
    let mut checks = Vec::new();
    for e in events {
        let name = match e.kind {
            EventKind::PrimaryLost => "primary lost",
            EventKind::Switchover => "switchover",
        };
        let late = e.first_round.is_none_or(|d| d > ROUND_BOUND);
        checks.push((
            format!("{name}: no round within {} s", ROUND_BOUND.as_secs()),
            i64::from(late),
        ));
        checks.push((
            format!("{name}: replicas not LISTENing again within 60 s"),
            i64::from(e.listening.is_none()),
        ));
        checks.push((
            format!("{name}: pending ready checks resolved wrong"),
            pending_resolved_wrong(admin, &e.pending).await?,
        ));
    }
    checks.push((
        "lost node not back as the standby".into(),
        i64::from(events[0].rejoined.is_none()),
    ));
    checks.push((
        "switchover not performed".into(),
        i64::from(events.len() < 2),
    ));
    checks.push((
        "replica exits we did not cause".into(),
        i64::from(unexpected_exits),
    ));
    checks.push(("client calls unresolved".into(), ledger.unresolved as i64));
    Ok(checks)
}

/// A check a phase after the first: no match formed in it.
fn check_phases(matches_by_phase: &[i64]) -> Vec<(String, i64)> {
    matches_by_phase
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, n)| {
            (
                format!(
                    "no match formed {}",
                    if i == 1 {
                        "between the loss and the switchover"
                    } else {
                        "after the switchover"
                    }
                ),
                i64::from(*n == 0),
            )
        })
        .collect()
}

pub(crate) fn fmt_secs(d: Option<Duration>) -> String {
    d.map_or("never".into(), |d| format!("{:.1} s", d.as_secs_f64()))
}

/// A replica that exited is restarted (and counted: the daemon should never exit on a
/// failover).
pub(crate) fn restart_exited(replicas: &mut [Replica], say: &impl Fn(String)) {
    for replica in replicas.iter_mut() {
        if !replica.check_alive() {
            say(format!(
                "replica {} exited by itself; restarting. Log tail:\n{}",
                replica.holder(),
                replica.log_tail(15)
            ));
            let _ = replica.restart();
        }
    }
}

/// What the formation promises about commits, from the primary.
/// The formation's failover timeouts, as the report prints them.
pub(crate) fn timeout_settings(timeouts: Timeouts) -> Vec<(String, String)> {
    let secs = |d: Duration| format!("{} s", d.as_secs_f64());
    vec![
        (
            "pgautofailover.node_considered_unhealthy_timeout".into(),
            secs(timeouts.unhealthy),
        ),
        (
            "pgautofailover.primary_demote_timeout".into(),
            secs(timeouts.demote),
        ),
        (
            "keepers' timeout.network_partition_timeout".into(),
            secs(timeouts.network_partition),
        ),
    ]
}

pub(crate) async fn replication_settings(
    formation: &Formation,
    admin: &PgPool,
) -> anyhow::Result<Vec<(String, String)>> {
    let (sync_names, sync_commit): (String, String) = sqlx::query_as(
        "SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit')",
    )
    .fetch_one(admin)
    .await?;
    anyhow::ensure!(
        !sync_names.is_empty() && sync_commit != "off" && sync_commit != "local",
        "the formation's primary does not wait for its standby (synchronous_standby_names = \
         {sync_names:?}, synchronous_commit = {sync_commit}): a failover could lose commits"
    );
    let number_sync: String = tokio::task::block_in_place(|| formation.show_settings())?
        .lines()
        .find(|l| l.contains("number_sync_standbys"))
        .and_then(|l| l.rsplit('|').next())
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| "?".into());
    Ok(vec![
        (
            "synchronous_standby_names (set by the monitor)".into(),
            sync_names,
        ),
        ("synchronous_commit".into(), sync_commit),
        ("number_sync_standbys".into(), number_sync),
    ])
}

/// Wait for a round of `ready` in flight with ready checks pending (at most 15 s), then
/// lose the primary or perform a switchover; time the failover and the first round.
async fn strike(
    formation: &mut Formation,
    admin: &PgPool,
    ledger: &Shared,
    kind: EventKind,
    replicas: u64,
) -> anyhow::Result<Event> {
    let from = tokio::task::block_in_place(|| formation.writable_node())
        .context("no node of the formation takes writes")?;
    let looking = Instant::now();
    let mut in_round = false;
    while looking.elapsed() < Duration::from_secs(15) {
        let (round, pending): (bool, i64) = sqlx::query_as(
            "SELECT coalesce((SELECT waiting_for = 'round' FROM queue_state WHERE queue = 'ready'), false),
                    (SELECT count(*) FROM matches WHERE status = 'pending')",
        )
        .fetch_one(admin)
        .await?;
        if round && pending > 0 {
            in_round = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let committing = committing_sessions(admin).await.unwrap_or(0);
    let pending: Vec<i64> =
        sqlx::query_scalar("SELECT match_id FROM matches WHERE status = 'pending' ORDER BY 1")
            .fetch_all(admin)
            .await?;
    let seen_before = ledger.lock().unwrap().seen.len();
    let at = Utc::now();
    let struck = Instant::now();
    let other = 1 - from;
    let probe_url = formation.nodes[other].url("postgres", formation::DATABASE);
    let probe = tokio::spawn(first_write(probe_url, struck));
    match kind {
        EventKind::PrimaryLost => formation.lose_machine(from),
        // Blocks until the formation has a primary again; the probes run beside it.
        EventKind::Switchover => tokio::task::block_in_place(|| formation.switchover())
            .context("pg_autoctl perform switchover")?,
    }
    let failover = probe.await?;
    // The first round on the new primary: committed after it took its first write (a
    // round of the old primary may commit during a switchover's first moments).
    let first_round = match failover {
        Some(failover) => {
            let since = at + chrono::Duration::from_std(failover)?;
            first_round_after(admin.clone(), since)
                .await
                .map(|after| failover + after)
        }
        None => None,
    };
    let listening = listeners_back(admin, replicas, struck).await;
    let to = tokio::task::block_in_place(|| formation.writable_node())
        .map(|i| formation.nodes[i].name.clone());
    Ok(Event {
        kind,
        from: formation.nodes[from].name.clone(),
        to,
        at,
        in_round,
        committing,
        pending,
        seen_before,
        failover,
        first_round,
        rejoined: None,
        listening,
    })
}

/// Until `url`'s node takes a write (an insert into `failover_probe`), at most 3 minutes.
pub(crate) async fn first_write(url: String, since: Instant) -> Option<Duration> {
    while since.elapsed() < Duration::from_secs(180) {
        let attempt = async {
            let mut conn = PgConnection::connect(&url).await?;
            sqlx::query("INSERT INTO failover_probe DEFAULT VALUES")
                .execute(&mut conn)
                .await?;
            conn.close().await
        };
        if let Ok(Ok(())) = tokio::time::timeout(Duration::from_secs(3), attempt).await {
            return Some(since.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Until every replica's LISTEN session (enqueue and leadership wake-ups) is on the
/// primary again, at most 60 s after the first round. The session's last query is the
/// daemon's `LISTEN "matchmaker_enqueue"`, or both channels in one query when sqlx's
/// listener reconnected by itself.
pub(crate) async fn listeners_back(db: &PgPool, replicas: u64, since: Instant) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let listening: Result<i64, _> = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
              WHERE query LIKE '%LISTEN \"matchmaker_enqueue\"%' AND pid <> pg_backend_pid()",
        )
        .fetch_one(db)
        .await;
        if listening.is_ok_and(|n| n >= replicas as i64) {
            return Some(since.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

/// Until a round commits after `at` (by the database's clock), at most 3 minutes.
pub(crate) async fn first_round_after(db: PgPool, at: DateTime<Utc>) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(180) {
        let first: Result<Option<DateTime<Utc>>, _> =
            sqlx::query_scalar("SELECT min(committed_at) FROM rounds WHERE committed_at > $1")
                .bind(at)
                .fetch_one(&db)
                .await;
        if let Ok(Some(committed)) = first {
            return (committed - at).to_std().ok();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Matches created before the first event, between events, and after the last.
async fn matches_by_phase(db: &PgPool, events: &[Event]) -> anyhow::Result<Vec<i64>> {
    let mut bounds: Vec<Option<DateTime<Utc>>> = vec![None];
    bounds.extend(events.iter().map(|e| Some(e.at)));
    bounds.push(None);
    let mut counts = Vec::new();
    for pair in bounds.windows(2) {
        counts.push(
            sqlx::query_scalar(
                "SELECT count(*) FROM matches
                  WHERE ($1::timestamptz IS NULL OR created_at > $1)
                    AND ($2::timestamptz IS NULL OR created_at <= $2)",
            )
            .bind(pair[0])
            .bind(pair[1])
            .fetch_one(db)
            .await?,
        );
    }
    Ok(counts)
}

/// Pending ready checks of an event resolved otherwise than once: still pending although
/// their time ran out long ago, or resolved in a way that contradicts the answers
/// (counted by the audit's ready check rule, restricted to these matches).
async fn pending_resolved_wrong(db: &PgPool, pending: &[i64]) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM matches m
          WHERE m.match_id = ANY($1)
            AND ((m.status = 'pending' AND m.answer_by < now() - interval '30 seconds')
                 OR (m.status = 'ready' AND EXISTS (
                        SELECT 1 FROM match_players mp
                         WHERE mp.match_id = m.match_id AND mp.answer IS DISTINCT FROM 'accepted'))
                 OR (m.status = 'cancelled' AND EXISTS (
                        SELECT 1 FROM match_players mp WHERE mp.match_id = m.match_id)))",
    )
    .bind(pending)
    .fetch_one(db)
    .await?)
}

/// What the clients were told, against the database.
pub(crate) async fn check_ledger(
    db: &PgPool,
    ledger: &Ledger,
) -> anyhow::Result<Vec<(String, i64)>> {
    let seen_ids: Vec<i64> = ledger.seen.keys().copied().collect();
    let (pair_matches, pair_players): (Vec<i64>, Vec<String>) = ledger
        .seen
        .iter()
        .flat_map(|(m, s)| s.players.iter().map(move |p| (*m, p.clone())))
        .unzip();
    let missing_matches: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM unnest($1::bigint[]) x(id)
          WHERE NOT EXISTS (SELECT 1 FROM matches m WHERE m.match_id = x.id)",
    )
    .bind(&seen_ids)
    .fetch_one(db)
    .await?;
    // A player a client saw in a match is still in it, unless its ready check cancelled
    // the match.
    let missing_players: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM unnest($1::bigint[], $2::text[]) x(m, p)
          WHERE NOT EXISTS (SELECT 1 FROM match_players mp
                             WHERE mp.match_id = x.m AND mp.player_id = x.p)
            AND NOT EXISTS (SELECT 1 FROM matches m
                             WHERE m.match_id = x.m AND m.status = 'cancelled')",
    )
    .bind(&pair_matches)
    .bind(&pair_players)
    .fetch_one(db)
    .await?;
    let acc_players: Vec<String> = ledger.accepted.iter().map(|a| a.0.clone()).collect();
    let acc_matches: Vec<i64> = ledger.accepted.iter().map(|a| a.1).collect();
    let acc_times: Vec<DateTime<Utc>> = ledger.accepted.iter().map(|a| a.2).collect();
    // An acknowledged accept is kept: the player's answer is `accepted` in a match that
    // stands, and a cancelled match never ends them `declined`.
    let lost_accepts: Vec<AcceptRow> = sqlx::query_as(
        "SELECT x.p, x.m, x.t, mt.status,
                    (SELECT mp.answer FROM match_players mp
                      WHERE mp.match_id = x.m AND mp.player_id = x.p),
                    (SELECT e.status FROM queue_entries e
                      WHERE e.player_id = x.p ORDER BY e.entry_id DESC LIMIT 1)
               FROM unnest($1::text[], $2::bigint[], $3::timestamptz[]) x(p, m, t)
               JOIN matches mt ON mt.match_id = x.m
              WHERE NOT CASE mt.status
                    -- A pending match's answers wait in ready_answers.
                    WHEN 'pending' THEN EXISTS (
                        SELECT 1 FROM ready_answers a
                          JOIN match_players mp
                            ON mp.match_id = a.match_id AND mp.entry_id = a.entry_id
                         WHERE a.match_id = x.m AND mp.player_id = x.p
                           AND a.answer = 'accepted')
                    WHEN 'ready' THEN EXISTS (
                        SELECT 1 FROM match_players mp
                         WHERE mp.match_id = x.m AND mp.player_id = x.p
                           AND mp.answer = 'accepted')
                    -- A cancelled match keeps its answers by player, and one who
                    -- accepted is queued again, never declined.
                    ELSE mt.answers ->> x.p = 'accepted' AND NOT EXISTS (
                        SELECT 1 FROM queue_entries e
                         WHERE e.match_id = x.m AND e.player_id = x.p
                           AND e.status = 'declined')
                    END
              ORDER BY x.t",
    )
    .bind(&acc_players)
    .bind(&acc_matches)
    .bind(&acc_times)
    .fetch_all(db)
    .await?;
    for (p, m, t, status, answer, entry) in lost_accepts.iter().take(10) {
        eprintln!(
            "accept lost: {p} accepted match {m} at {}; the match is {status}, the answer \
             {answer:?}, the player's entry {entry:?}",
            t.format("%H:%M:%S%.3f")
        );
    }
    let accepts_lost = lost_accepts.len() as i64;
    let results_lost: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM unnest($1::bigint[]) x(id)
          WHERE NOT EXISTS (SELECT 1 FROM match_results r WHERE r.match_id = x.id)",
    )
    .bind(&ledger.results)
    .fetch_one(db)
    .await?;
    // A rating's match count is the number of results applied to it, and an applied
    // result moved each of its players once.
    let applied_twice: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM ratings r
                  WHERE r.matches <> (SELECT count(*) FROM rating_changes c
                                       WHERE c.owner = r.owner AND c.player_id = r.player_id
                                         AND c.pool = r.pool))
              + (SELECT count(*) FROM match_results res
                  WHERE res.applied_at IS NOT NULL AND res.rating_error IS NULL
                    AND (SELECT count(*) FROM rating_changes c WHERE c.match_id = res.match_id)
                        <> (SELECT count(*) FROM match_players mp
                             WHERE mp.match_id = res.match_id))",
    )
    .fetch_one(db)
    .await?;
    let unapplied: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM match_results
          WHERE rating_pool IS NOT NULL AND applied_at IS NULL
            AND reported_at < now() - interval '10 seconds'",
    )
    .fetch_one(db)
    .await?;
    Ok(vec![
        ("matches seen by a client, gone".into(), missing_matches),
        (
            "players seen in a match, gone from it".into(),
            missing_players,
        ),
        ("acknowledged accepts lost".into(), accepts_lost),
        ("acknowledged results lost".into(), results_lost),
        ("results applied to a rating twice".into(), applied_twice),
        ("results never applied".into(), unapplied),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failover_config_is_valid() {
        let config = matchmaker::config::Config::from_toml_str(FAILOVER_CONFIG).unwrap();
        let queues: Vec<&str> = config.queues.keys().map(String::as_str).collect();
        let mut expected = QUEUES.to_vec();
        expected.sort();
        assert_eq!(queues, expected);
        assert!(config.daemon.lease_ttl < ROUND_BOUND);
    }
}
