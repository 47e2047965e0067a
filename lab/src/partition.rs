//! `matchmaker-lab failure-modes`, the network partition: daemon replicas cut off from
//! the database while the database itself is healthy, on one machine.
//!
//! A private PostgreSQL listens on this machine's end of two routes ([`crate::route`]):
//! replica `r1` runs in one network namespace, `r2` in another, each reaching the server
//! over its own veth pair, while the simulated clients of `matchmaker-lab failover` (the
//! `ready` and `duel` queues, enqueueing, polling, answering ready checks, reporting
//! results) run on this machine's loopback. Two cuts, one after the other:
//!
//! 1. **One replica cut off**: the route of the replica leading `ready` is cut while a
//!    round of `ready` is in flight, held past the lease TTL, then healed. The run times
//!    when the other replica took its leases and committed its first round on them,
//!    watches what the server does with the cut-off replica's sessions (left idle in a
//!    transaction, holding locks others wait for, ended) and times from the heal until
//!    the cut-off replica heartbeats, leads a queue and commits a round again.
//! 2. **Every replica cut off**: both routes cut mid-round, held past the lease TTL,
//!    healed. Rounds stop; the run times the first round and every replica's heartbeat
//!    after the heal.
//!
//! At the end it audits the database ([`matchmaker_testkit::audit`]) and checks what the
//! clients were told against it, as `failover` does.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use sqlx::PgPool;

use matchmaker::db;
use matchmaker::db::local_pg::LocalPostgres;
use matchmaker_testkit::audit;
use matchmaker_testkit::fleet::*;

use crate::failover::{self, CLIENT_LOGIN, Clients, FAILOVER_CONFIG, Ledger, check_ledger};
use crate::route::Route;

/// How long the lab waits after a heal for a replica to heartbeat again before it gives
/// up (the measured time, not a bound the run checks).
const RECOVERY_WAIT: Duration = Duration::from_secs(180);

/// A replica is back within this of the heal: its next look (every `lease_renew`, 1 s in
/// the run's config), a connection and a few seconds of slack.
pub const BACK_BOUND: Duration = Duration::from_secs(10);

/// The first round on a cut-off leader's queues within this of the cut: the lease runs
/// out (TTL 5 s), the other replica looks again (1 s), takes it and runs a round.
pub const ROUND_AFTER_CUT_BOUND: Duration = Duration::from_secs(12);

/// The first round after every replica's route heals within this: a replica back
/// ([`BACK_BOUND`]), the expired leases taken and a round (3 s in the run's config).
pub const ROUND_AFTER_HEAL_BOUND: Duration = Duration::from_secs(13);

/// Another session waiting on a cut-off replica's lock longer than this: the server did
/// not end the replica's transaction (`idle_in_transaction_session_timeout`, 5 s) and
/// the waiter's `lock_timeout` (2 s) did not end the wait.
pub const BLOCKED_BOUND: Duration = Duration::from_secs(8);

#[derive(Debug, Clone)]
pub struct PartitionOptions {
    /// Client load before the first cut.
    pub warmup: Duration,
    /// How long one replica's route stays cut (past the lease TTL, 5 s).
    pub cut: Duration,
    /// How long every replica's route stays cut.
    pub cut_all: Duration,
    /// Load after each heal before the next step.
    pub settle: Duration,
    /// Concurrent clients (each keeps a dozen players waiting).
    pub clients: usize,
    pub seed: u64,
    /// Keep the replicas' logs, the server's log and the config here; default: a
    /// temporary directory, removed after a clean run.
    pub log_dir: Option<PathBuf>,
}

impl Default for PartitionOptions {
    fn default() -> Self {
        PartitionOptions {
            warmup: Duration::from_secs(15),
            // Long enough that TCP's retransmissions back off to tens of seconds apart,
            // as across a real outage of the network.
            cut: Duration::from_secs(60),
            cut_all: Duration::from_secs(30),
            settle: Duration::from_secs(15),
            clients: 4,
            seed: 1,
            log_dir: None,
        }
    }
}

// ---- What each cut did ---------------------------------------------------------------------

/// What the server did with a cut-off replica's sessions while its route was cut.
#[derive(Debug, Clone, Default)]
pub struct CutSessions {
    /// Its sessions at the cut: state and the start of the last query, one per session.
    pub at_cut: Vec<String>,
    /// Since the cut, the last moment one of them was still inside a transaction (its
    /// locks held), and that session's state and query then.
    pub in_transaction_until: Option<Duration>,
    pub in_transaction: Option<String>,
    /// The most sessions (other replicas', clients') waiting at once on a lock one of
    /// them held, and the longest such wait seen.
    pub blocked_at_once: i64,
    pub longest_blocked: Duration,
    /// Its sessions the server still had when the route healed.
    pub left_at_heal: usize,
}

/// One replica's route cut, then healed.
#[derive(Debug, Clone)]
pub struct OneCut {
    /// The cut-off replica (holder name) and the queues it led then.
    pub replica: String,
    pub queues: Vec<String>,
    /// A round of `ready` was running (queue_state says so) at the cut.
    pub in_round: bool,
    pub at: DateTime<Utc>,
    pub held: Duration,
    /// From the cut: until another replica held every queue it led, and until another
    /// replica's first round on them.
    pub takeover: Option<Duration>,
    pub first_round: Option<Duration>,
    /// Rounds the cut-off replica committed more than a second after the cut.
    pub rounds_after_cut: i64,
    pub sessions: CutSessions,
    /// From the heal: until the cut-off replica heartbeats again, leads a queue again and
    /// commits a round again.
    pub back: Option<Duration>,
    pub leads_again: Option<Duration>,
    pub round_again: Option<Duration>,
    /// Its log while cut off and right after the heal (warnings and errors first).
    pub log_while_cut: Vec<String>,
    pub log_after_heal: Vec<String>,
}

/// Every replica's route cut, then healed.
#[derive(Debug, Clone)]
pub struct AllCut {
    pub in_round: bool,
    pub at: DateTime<Utc>,
    pub held: Duration,
    /// Rounds committed more than a second after the cut, before the heal.
    pub rounds_during: i64,
    /// From the heal: until the first round, until every replica heartbeats again.
    pub first_round: Option<Duration>,
    pub back: Option<Duration>,
}

/// The run's figures and checks.
#[derive(Debug)]
pub struct PartitionReport {
    pub one: OneCut,
    pub all: AllCut,
    pub elapsed: Duration,
    pub ledger: Ledger,
    pub audit: audit::Audit,
    /// Extra counts beside the audit's: (name, count), all must be 0.
    pub checks: Vec<(String, i64)>,
    pub logs: PathBuf,
}

impl PartitionReport {
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
        let secs = failover::fmt_secs;
        let o = &self.one;
        println!();
        println!(
            "  route of {} (leading {}) cut for {:.0} s, {} a round of ready:",
            o.replica,
            o.queues.join(", "),
            o.held.as_secs_f64(),
            if o.in_round { "during" } else { "outside" }
        );
        for session in &o.sessions.at_cut {
            println!("    its session at the cut: {session}");
        }
        row(
            "  cut -> the other replica holds its leases",
            secs(o.takeover),
        );
        row("  cut -> first round on its queues", secs(o.first_round));
        row(
            "  cut -> last moment a session of it was in a transaction",
            secs(o.sessions.in_transaction_until),
        );
        if let Some(what) = &o.sessions.in_transaction {
            println!("    that session then: {what}");
        }
        row(
            "  sessions waiting on its locks at once (longest wait)",
            format!(
                "{} ({:.1} s)",
                o.sessions.blocked_at_once,
                o.sessions.longest_blocked.as_secs_f64()
            ),
        );
        row(
            "  its sessions the server still had at the heal",
            format!("{} of {}", o.sessions.left_at_heal, o.sessions.at_cut.len()),
        );
        row(
            "  rounds it committed after the cut",
            o.rounds_after_cut.to_string(),
        );
        row("  heal -> it heartbeats again", secs(o.back));
        row("  heal -> it leads a queue again", secs(o.leads_again));
        row("  heal -> its first round again", secs(o.round_again));
        for line in &o.log_while_cut {
            println!("    its log while cut off: {line}");
        }
        for line in &o.log_after_heal {
            println!("    its log after the heal: {line}");
        }
        let a = &self.all;
        println!(
            "  every replica's route cut for {:.0} s, {} a round of ready:",
            a.held.as_secs_f64(),
            if a.in_round { "during" } else { "outside" }
        );
        row("  rounds committed while cut", a.rounds_during.to_string());
        row("  heal -> first round", secs(a.first_round));
        row("  heal -> every replica heartbeats again", secs(a.back));
        let l = &self.ledger;
        row("time", format!("{:.1} s", self.elapsed.as_secs_f64()));
        row("client calls", l.calls.to_string());
        row(
            "  attempts that failed as unavailable",
            l.failed_attempts.to_string(),
        );
        row(
            "entries enqueued (acknowledged)",
            l.enqueued.len().to_string(),
        );
        row("matches seen by clients", l.seen.len().to_string());
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

// ---- The run -------------------------------------------------------------------------------

/// The whole run: routes, server, schema, replicas, clients, the two cuts, the audit.
/// `say` gets a line per step.
pub async fn partition(
    options: &PartitionOptions,
    exe: &Path,
    say: impl Fn(String),
) -> anyhow::Result<PartitionReport> {
    let started = Instant::now();
    let (work, keep) = failover::work_dir(options.log_dir.as_deref(), "partition")?;
    // Before the server, which listens on their host sides.
    let mut routes = vec![Route::create()?, Route::create()?];
    let server = start_server(&routes).await?;
    let port = server.port();
    let admin = db::connect_with(&server.url(), 4).await?;
    failover::prepare_database(&admin, options.clients).await?;
    let config = write_config(&work, FAILOVER_CONFIG)?;
    let ttl = matchmaker::config::Config::from_toml_str(FAILOVER_CONFIG)?
        .daemon
        .lease_ttl;
    let replicas = routes
        .iter()
        .enumerate()
        .map(|(i, route)| {
            let url = format!("postgres://postgres@{}:{port}/postgres", route.host);
            let name = format!("r{}", i + 1);
            let spec = failover::replica_spec(exe, &url, &config, &name, &work);
            Replica::start_in_netns(spec, &route.netns)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut replicas = failover::await_leaders(replicas, &admin).await?;
    let client_url = format!("postgres://{CLIENT_LOGIN}@127.0.0.1:{port}/postgres");
    let clients = Clients::start(&client_url, options.clients, options.seed).await?;
    say(format!(
        "server :{port}; r1 in {} ({} -> {}), r2 in {} ({} -> {}); {} clients; logs in {}; \
         warming up for {:?}",
        routes[0].netns,
        routes[0].inner,
        routes[0].host,
        routes[1].netns,
        routes[1].inner,
        routes[1].host,
        options.clients,
        work.display(),
        options.warmup
    ));
    tokio::time::sleep(options.warmup).await;

    let one = cut_one(&mut routes, &replicas, &admin, options.cut).await?;
    say(format!(
        "{} cut off for {:.0} s: its leases taken after {}, first round on them after {}; \
         back {} after the heal",
        one.replica,
        one.held.as_secs_f64(),
        failover::fmt_secs(one.takeover),
        failover::fmt_secs(one.first_round),
        failover::fmt_secs(one.back)
    ));
    tokio::time::sleep(options.settle).await;
    failover::restart_exited(&mut replicas, &say);

    let all = cut_all(&mut routes, &replicas, &admin, options.cut_all).await?;
    say(format!(
        "every replica cut off for {:.0} s: {} rounds meanwhile; first round {} after the \
         heal, every replica back after {}",
        all.held.as_secs_f64(),
        all.rounds_during,
        failover::fmt_secs(all.first_round),
        failover::fmt_secs(all.back)
    ));
    tokio::time::sleep(options.settle).await;
    failover::restart_exited(&mut replicas, &say);

    let (ledger, unexpected_exits) = clients.stop_with(&mut replicas).await?;
    let audit = audit::audit(
        &admin,
        audit::Expected {
            entries: &ledger.enqueued,
            cancelled_players: &[],
        },
    )
    .await?;
    let mut checks = check_ledger(&admin, &ledger).await?;
    checks.extend(check_cuts(&one, &all, ttl));
    checks.push((
        "replica exits we did not cause".into(),
        i64::from(unexpected_exits),
    ));
    checks.push(("client calls unresolved".into(), ledger.unresolved as i64));
    admin.close().await;
    let _ = std::fs::copy(
        server.base_dir().join("server.log"),
        work.join("postgres.log"),
    );
    let report = PartitionReport {
        one,
        all,
        elapsed: started.elapsed(),
        ledger,
        audit,
        checks,
        logs: work.clone(),
    };
    drop(server);
    drop(routes);
    if report.violation_count() == 0 && !keep {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(report)
}

/// A private server listening on loopback and on every route's host side, trusting the
/// routes' namespaces as it trusts loopback.
async fn start_server(routes: &[Route]) -> anyhow::Result<LocalPostgres> {
    let mut listen = vec!["127.0.0.1".to_string()];
    listen.extend(routes.iter().map(|r| r.host.to_string()));
    let listen = listen.join(",");
    let server = LocalPostgres::start_temporary_with(&[("listen_addresses", listen.as_str())])
        .await
        .context("starting a private PostgreSQL")?;
    let hba = server.base_dir().join("data").join("pg_hba.conf");
    let mut lines = std::fs::read_to_string(&hba).with_context(|| hba.display().to_string())?;
    for route in routes {
        lines.push_str(&format!("host all all {}/32 trust\n", route.inner));
    }
    std::fs::write(&hba, lines).with_context(|| hba.display().to_string())?;
    let admin = db::connect_with(&server.url(), 1).await?;
    sqlx::query("SELECT pg_reload_conf()")
        .execute(&admin)
        .await?;
    admin.close().await;
    Ok(server)
}

/// The checks of both cuts: (name, count), all must be 0.
fn check_cuts(one: &OneCut, all: &AllCut, ttl: Duration) -> Vec<(String, i64)> {
    let late = |d: Option<Duration>, bound: Duration| i64::from(d.is_none_or(|d| d > bound));
    let takeover = takeover_bound(ttl, Duration::from_secs(1));
    vec![
        (
            format!(
                "one route cut: its leases not taken within {} s",
                takeover.as_secs()
            ),
            late(one.takeover, takeover),
        ),
        (
            format!(
                "one route cut: no round on its queues within {} s",
                ROUND_AFTER_CUT_BOUND.as_secs()
            ),
            late(one.first_round, ROUND_AFTER_CUT_BOUND),
        ),
        (
            "one route cut: rounds committed by the cut-off replica".into(),
            one.rounds_after_cut,
        ),
        (
            format!(
                "one route cut: a session waited on its locks over {} s",
                BLOCKED_BOUND.as_secs()
            ),
            i64::from(one.sessions.longest_blocked > BLOCKED_BOUND),
        ),
        (
            format!(
                "one route healed: the replica not back within {} s",
                BACK_BOUND.as_secs()
            ),
            late(one.back, BACK_BOUND),
        ),
        (
            "one route healed: the replica led no round within 20 s".into(),
            i64::from(one.round_again.is_none()),
        ),
        (
            "every route cut: rounds committed".into(),
            all.rounds_during,
        ),
        (
            format!(
                "every route healed: no round within {} s",
                ROUND_AFTER_HEAL_BOUND.as_secs()
            ),
            late(all.first_round, ROUND_AFTER_HEAL_BOUND),
        ),
        (
            format!(
                "every route healed: replicas not back within {} s",
                BACK_BOUND.as_secs()
            ),
            late(all.back, BACK_BOUND),
        ),
    ]
}

// ---- 1. One replica cut off ----------------------------------------------------------------

/// Cut the route of `ready`'s leader, mid-round if one comes within 15 s, for `hold`;
/// time the takeover, watch its sessions, heal, time its return.
async fn cut_one(
    routes: &mut [Route],
    replicas: &[Replica],
    admin: &PgPool,
    hold: Duration,
) -> anyhow::Result<OneCut> {
    let in_round = wait_for_round_in_flight(admin).await?;
    let (leader, _, _) = lease_of(admin, "ready")
        .await?
        .context("nobody leads ready")?;
    let cut = replicas
        .iter()
        .position(|r| r.owns_holder(&leader))
        .with_context(|| format!("ready's leader {leader} is none of the replicas"))?;
    let queues: Vec<String> =
        sqlx::query_scalar("SELECT queue FROM leases WHERE holder = $1 ORDER BY queue")
            .bind(&leader)
            .fetch_all(admin)
            .await?;
    let log = replicas[cut].log_path();
    let log_at_cut = log_len(&log);
    let watch = SessionWatch::start(admin.clone(), routes[cut].inner);
    let at = db::database_now(admin).await?;
    routes[cut].cut()?;
    let cut_at = Instant::now();
    let (mut takeover, mut first_round) = (None, None);
    while cut_at.elapsed() < hold {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if takeover.is_none() {
            takeover = taken_over(admin, at, &queues, &leader).await?;
        }
        if first_round.is_none() {
            first_round = first_round_by_others(admin, at, &queues, &leader).await?;
        }
    }
    let held = cut_at.elapsed();
    let sessions = watch.stop().await;
    let log_at_heal = log_len(&log);
    let healed_at = db::database_now(admin).await?;
    routes[cut].heal()?;
    let rounds_after_cut: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM rounds
          WHERE leader = $1 AND committed_at > $2 + interval '1 second'",
    )
    .bind(&leader)
    .bind(at)
    .fetch_one(admin)
    .await?;
    let back = back_after(admin, std::slice::from_ref(&leader), healed_at).await;
    let (leads_again, round_again) = match back {
        Some(_) => leading_again(admin, &leader, healed_at).await,
        None => (None, None),
    };
    Ok(OneCut {
        replica: leader,
        queues,
        in_round,
        at,
        held,
        takeover,
        first_round,
        rounds_after_cut,
        sessions,
        back,
        leads_again,
        round_again,
        log_while_cut: log_lines(&log, log_at_cut, Some(log_at_heal), 6),
        log_after_heal: log_lines(&log, log_at_heal, None, 6),
    })
}

/// Until a round of `ready` is in flight (queue_state says so), at most 15 s. False: the
/// cut comes outside a round.
async fn wait_for_round_in_flight(admin: &PgPool) -> anyhow::Result<bool> {
    let looking = Instant::now();
    while looking.elapsed() < Duration::from_secs(15) {
        let round: bool = sqlx::query_scalar(
            "SELECT coalesce((SELECT waiting_for = 'round' FROM queue_state
                               WHERE queue = 'ready'), false)",
        )
        .fetch_one(admin)
        .await?;
        if round {
            return Ok(true);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(false)
}

/// Since `at`, until another holder than `holder` took every one of `queues` (from the
/// lease log, by the database's clock); None: not yet.
async fn taken_over(
    admin: &PgPool,
    at: DateTime<Utc>,
    queues: &[String],
    holder: &str,
) -> anyhow::Result<Option<Duration>> {
    let (all, last): (bool, Option<f64>) = sqlx::query_as(
        "SELECT count(*) = cardinality($2::text[]), extract(epoch FROM max(t) - $1)::float8
           FROM (SELECT queue, min(new_acquired_at) AS t FROM audit_lease_log
                  WHERE new_acquired_at > $1 AND queue = ANY($2) AND new_holder <> $3
                  GROUP BY queue) taken",
    )
    .bind(at)
    .bind(queues)
    .bind(holder)
    .fetch_one(admin)
    .await?;
    Ok(last.filter(|_| all).map(secs))
}

/// Since `at`, until the first round on `queues` by another leader than `holder`.
async fn first_round_by_others(
    admin: &PgPool,
    at: DateTime<Utc>,
    queues: &[String],
    holder: &str,
) -> anyhow::Result<Option<Duration>> {
    let first: Option<f64> = sqlx::query_scalar(
        "SELECT extract(epoch FROM min(committed_at) - $1)::float8 FROM rounds
          WHERE committed_at > $1 AND queue = ANY($2) AND leader <> $3",
    )
    .bind(at)
    .bind(queues)
    .bind(holder)
    .fetch_one(admin)
    .await?;
    Ok(first.map(secs))
}

/// Since `healed_at`, until every one of `holders` wrote a heartbeat (by the database's
/// clock); None: not within [`RECOVERY_WAIT`].
async fn back_after(
    admin: &PgPool,
    holders: &[String],
    healed_at: DateTime<Utc>,
) -> Option<Duration> {
    let waiting = Instant::now();
    while waiting.elapsed() < RECOVERY_WAIT {
        let back: Result<(bool, Option<f64>), _> = sqlx::query_as(
            "SELECT count(*) = cardinality($1::text[]),
                    extract(epoch FROM max(heartbeat_at) - $2)::float8
               FROM replicas WHERE replica = ANY($1) AND heartbeat_at > $2",
        )
        .bind(holders)
        .bind(healed_at)
        .fetch_one(admin)
        .await;
        if let Ok((true, Some(after))) = back {
            return Some(secs(after));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Since `healed_at`, until `holder` took a lease and committed a round again; each None
/// if not within 20 s of its return (the balancer hands it its share back).
async fn leading_again(
    admin: &PgPool,
    holder: &str,
    healed_at: DateTime<Utc>,
) -> (Option<Duration>, Option<Duration>) {
    let waiting = Instant::now();
    let (mut leads, mut round) = (None, None);
    while waiting.elapsed() < Duration::from_secs(20) && (leads.is_none() || round.is_none()) {
        let again: Result<(Option<f64>, Option<f64>), _> = sqlx::query_as(
            "SELECT (SELECT extract(epoch FROM min(new_acquired_at) - $2)::float8
                       FROM audit_lease_log WHERE new_holder = $1 AND new_acquired_at > $2),
                    (SELECT extract(epoch FROM min(committed_at) - $2)::float8
                       FROM rounds WHERE leader = $1 AND committed_at > $2)",
        )
        .bind(holder)
        .bind(healed_at)
        .fetch_one(admin)
        .await;
        if let Ok((l, r)) = again {
            leads = l.map(secs);
            round = r.map(secs);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (leads, round)
}

// ---- 2. Every replica cut off --------------------------------------------------------------

/// Cut every route, mid-round if one comes within 15 s, for `hold`; count the rounds
/// meanwhile, heal, time the first round and the replicas' return.
async fn cut_all(
    routes: &mut [Route],
    replicas: &[Replica],
    admin: &PgPool,
    hold: Duration,
) -> anyhow::Result<AllCut> {
    let in_round = wait_for_round_in_flight(admin).await?;
    let at = db::database_now(admin).await?;
    let cut_at = Instant::now();
    for route in routes.iter_mut() {
        route.cut()?;
    }
    tokio::time::sleep(hold.saturating_sub(cut_at.elapsed())).await;
    let held = cut_at.elapsed();
    let healed_at = db::database_now(admin).await?;
    for route in routes.iter_mut() {
        route.heal()?;
    }
    let rounds_during: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM rounds
          WHERE committed_at > $1 + interval '1 second' AND committed_at <= $2",
    )
    .bind(at)
    .bind(healed_at)
    .fetch_one(admin)
    .await?;
    let holders: Vec<String> = replicas.iter().map(Replica::holder).collect();
    let first_round = failover::first_round_after(admin.clone(), healed_at).await;
    let back = back_after(admin, &holders, healed_at).await;
    Ok(AllCut {
        in_round,
        at,
        held,
        rounds_during,
        first_round,
        back,
    })
}

// ---- The cut-off replica's sessions, as the server sees them ------------------------------

/// Samples the sessions from one client address every 100 ms until stopped.
struct SessionWatch {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<CutSessions>,
}

/// A session from the cut-off address: pid, state, seconds in its transaction (None:
/// none open), the start of its query, the sessions waiting on it and their longest
/// wait in seconds.
type SessionRow = (i32, String, Option<f64>, String, i64, Option<f64>);

impl SessionWatch {
    fn start(admin: PgPool, client: Ipv4Addr) -> SessionWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let mut seen = CutSessions::default();
            let mut first = true;
            while !stopped.load(Ordering::Relaxed) {
                if let Ok(rows) = sample_sessions(&admin, client).await {
                    note_sample(&mut seen, &rows, first, started.elapsed());
                    first = false;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            seen
        });
        SessionWatch { stop, task }
    }

    async fn stop(self) -> CutSessions {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap_or_default()
    }
}

async fn sample_sessions(admin: &PgPool, client: Ipv4Addr) -> Result<Vec<SessionRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT a.pid, coalesce(a.state, ''),
                extract(epoch FROM now() - a.xact_start)::float8,
                left(regexp_replace(a.query, '\\s+', ' ', 'g'), 60),
                (SELECT count(*) FROM pg_stat_activity b
                  WHERE a.pid = ANY(pg_blocking_pids(b.pid))),
                (SELECT max(extract(epoch FROM now() - b.query_start))::float8
                   FROM pg_stat_activity b WHERE a.pid = ANY(pg_blocking_pids(b.pid)))
           FROM pg_stat_activity a
          WHERE a.client_addr = $1::inet
          ORDER BY a.pid",
    )
    .bind(client.to_string())
    .fetch_all(admin)
    .await
}

/// Fold one sample taken `since` the cut into what was seen.
fn note_sample(seen: &mut CutSessions, rows: &[SessionRow], first: bool, since: Duration) {
    if first {
        seen.at_cut = rows
            .iter()
            .map(|(_, state, _, query, _, _)| format!("{state}: {query}"))
            .collect();
    }
    for (_, state, in_transaction, query, blocking, longest) in rows {
        if in_transaction.is_some() {
            seen.in_transaction_until = Some(since);
            seen.in_transaction = Some(format!("{state}: {query}"));
        }
        seen.blocked_at_once = seen.blocked_at_once.max(*blocking);
        if let Some(wait) = longest {
            seen.longest_blocked = seen.longest_blocked.max(secs(*wait));
        }
    }
    seen.left_at_heal = rows.len();
}

// ---- Small helpers -------------------------------------------------------------------------

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.0))
}

fn log_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Up to `most` lines of the log between two lengths of it: warnings and errors first,
/// each shortened.
fn log_lines(path: &Path, from: u64, to: Option<u64>, most: usize) -> Vec<String> {
    let text = std::fs::read(path).unwrap_or_default();
    let end = to.map_or(text.len(), |to| (to as usize).min(text.len()));
    let start = (from as usize).min(end);
    let text = String::from_utf8_lossy(&text[start..end]);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let (loud, quiet): (Vec<&str>, Vec<&str>) = lines
        .into_iter()
        .partition(|l| l.contains("WARN") || l.contains("ERROR"));
    loud.into_iter()
        .chain(quiet)
        .take(most)
        .map(|l| l.chars().take(220).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_keeps_the_last_transaction_and_the_longest_wait() {
        let mut seen = CutSessions::default();
        let idle = (1, "idle".to_string(), None, "SELECT 1".to_string(), 0, None);
        let in_tx = (
            2,
            "idle in transaction".to_string(),
            Some(1.0),
            "UPDATE leases".to_string(),
            1,
            Some(0.5),
        );
        note_sample(
            &mut seen,
            &[idle.clone(), in_tx.clone()],
            true,
            Duration::ZERO,
        );
        note_sample(&mut seen, &[idle], false, Duration::from_secs(6));
        assert_eq!(seen.at_cut.len(), 2);
        assert_eq!(seen.in_transaction_until, Some(Duration::ZERO));
        assert_eq!(
            seen.in_transaction.as_deref(),
            Some("idle in transaction: UPDATE leases")
        );
        assert_eq!(seen.blocked_at_once, 1);
        assert_eq!(seen.longest_blocked, Duration::from_millis(500));
        assert_eq!(seen.left_at_heal, 1);
    }
}
