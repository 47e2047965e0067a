//! `matchmaker-lab soak`: the fault-injection run. Daemon replicas run as child processes of
//! this binary (`matchmaker run`, one of them with its clock 20 s ahead) against a private
//! PostgreSQL (or a scratch database on `DATABASE_URL`'s server), under a client load of
//! solo players, parties, players queued in two queues at once and cancels, while the soak
//! stops the leader of a queue (SIGKILL; SIGTERM; SIGSTOP until a standby leads, preferably
//! mid-commit), restarts PostgreSQL (fast, then immediate) and fires cancel storms at
//! solves in flight, until the replicas have committed `--rounds` rounds. Then it audits
//! the database ([`matchmaker_testkit::audit`]) and prints a table; it exits non-zero if any
//! violation count is not zero.
//!
//! The building blocks, [`crate::fleet`] (replicas, leases) and [`crate::load`] (the
//! client load, cancel storms), are shared with the fault tests (`tests/it/faults.rs`),
//! which run the same faults one at a time.

use std::path::{Path, PathBuf};

use std::time::{Duration, Instant};

use anyhow::Context;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sqlx::PgPool;
use tokio::sync::watch;

use matchmaker::db;
use matchmaker::db::local_pg::{LocalPostgres, StopMode};
use matchmaker_testkit::audit;

use matchmaker_testkit::fleet::*;
use matchmaker_testkit::load::*;

#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// Inject faults until the replicas have committed this many matchmaking rounds (all
    /// queues; one fault every one to five seconds).
    pub rounds: i64,
    /// Seed of the fault schedule and the client load.
    pub seed: u64,
    /// Healthy replicas; one more runs with its clock --clock-skew ahead.
    pub replicas: u64,
    /// How far the skewed replica's clock runs ahead ("20s"; "-20s": behind).
    pub clock_skew: chrono::Duration,
    /// A PostgreSQL server to soak on: a scratch database is created there (and dropped
    /// after a clean run). The server is not ours, so it is not restarted. Without it, a
    /// private server is started from the local binaries.
    pub database_url: Option<String>,
    /// Keep the replicas' logs (and the config) in this directory. Default: a temporary
    /// directory, removed after a clean run.
    pub log_dir: Option<PathBuf>,
    /// Give up (non-zero exit) if the rounds are not reached in this time.
    pub max_time: Duration,
}

// ---- The soak itself ---------------------------------------------------------------------

/// The soak's queues: a 3v3 with parties (solver budget 300 ms, so cancels land during
/// solves) and a 1v1 that half the solo players join too.
pub const SOAK_CONFIG: &str = r#"
default_queue = "q"

[daemon]
poll_interval = "1s"
lease_ttl = "3s"
lease_renew = "1s"

[queues.q]
[queues.q.round]
every = "1s"
budget = "300ms"
target_pool = 24
threads = 1

[queues.duel]
teams = 2
team_size = 1
[queues.duel.round]
every = "1s"
budget = "100ms"
target_pool = 8
threads = 1
"#;

const SOAK_QUEUES: [&str; 2] = ["q", "duel"];
const LEASE_TTL: Duration = Duration::from_secs(3);
const LEASE_RENEW: Duration = Duration::from_secs(1);

/// How a leader is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// SIGKILL, restarted at once.
    Kill,
    /// SIGTERM (graceful: releases its leases), restarted at once.
    Term,
    /// SIGSTOP until a standby leads, then SIGCONT.
    Freeze,
}

/// Counts of the faults injected.
#[derive(Debug, Default)]
struct Faults {
    kills: u32,
    terms: u32,
    freezes: u32,
    freezes_in_commit: u32,
    restarts: Vec<StopMode>,
    storms: u32,
    takeovers: Vec<(Stop, Duration)>,
    slow_takeovers: u32,
    stalls_after_restart: u32,
}

pub fn run(args: SoakOptions) -> anyhow::Result<()> {
    crate::run_beside_replicas(soak(args))
}

/// The soak, phase by phase: set up, start the replicas and the load, inject faults until
/// the rounds are reached, drain, audit, report, clean up.
async fn soak(args: SoakOptions) -> anyhow::Result<()> {
    let started = Instant::now();
    let exe = super::product_binary()?;
    let work = prepare_work_dir(&args)?;
    let database = open_soak_database(&args).await?;
    announce(&args, &database, &work);
    let mut replicas = start_replicas(&args, &exe, &work, &database).await?;
    let (stop_load, load) = start_load(&database.db, args.seed);
    let run = inject_faults(&args, &database, &mut replicas, started).await?;
    let drained = drain(&database.db, stop_load, load, &mut replicas, &run).await?;
    let result = audit::audit(&database.db, drained.clients.expected()).await?;
    let violations = report(&database.db, started, &run, &drained, &result).await?;
    drop(replicas);
    let clean = violations == 0 && run.unreached.is_none();
    clean_up(database, &work, clean).await?;
    if let Some(rounds) = run.unreached {
        anyhow::bail!(
            "only {rounds} of {} rounds within --max-time {:?} (logs: {})",
            args.rounds,
            args.max_time,
            work.path.display()
        );
    }
    if violations > 0 {
        anyhow::bail!(
            "{violations} violations (replica logs: {})",
            work.path.display()
        );
    }
    Ok(())
}

/// Where the soak writes the replicas' logs and their config.
struct WorkDir {
    path: PathBuf,
    /// `--log-dir`: kept after the run; otherwise a temporary directory.
    keep: bool,
    config: PathBuf,
}

/// The directory of the logs and the replicas' config, written there.
fn prepare_work_dir(args: &SoakOptions) -> anyhow::Result<WorkDir> {
    let (path, keep) = match &args.log_dir {
        Some(dir) => (dir.clone(), true),
        None => (
            std::env::temp_dir().join(format!("matchmaker-soak-{}", std::process::id())),
            false,
        ),
    };
    std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
    let config = write_config(&path, SOAK_CONFIG)?;
    Ok(WorkDir { path, keep, config })
}

/// The soak's database and where it lives.
struct SoakDatabase {
    /// Our own server (restartable); `None` on `DATABASE_URL`'s server.
    server: Option<LocalPostgres>,
    url: String,
    /// On `DATABASE_URL`'s server: (that URL, the scratch database's name).
    scratch: Option<(String, String)>,
    db: PgPool,
}

/// The database: our own server (restartable), or a scratch database on the given one;
/// migrated, with the lease log the audit reads.
async fn open_soak_database(args: &SoakOptions) -> anyhow::Result<SoakDatabase> {
    let (server, url, scratch) = match &args.database_url {
        None => {
            let server = LocalPostgres::start_temporary()
                .await
                .context("no DATABASE_URL given, and the private PostgreSQL did not start")?;
            let url = server.url();
            (Some(server), url, None)
        }
        Some(url) => {
            let name = format!("matchmaker_soak_{}", std::process::id());
            let admin = db::connect_with(url, 1).await?;
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                .execute(&admin)
                .await
                .context("creating the soak's scratch database")?;
            admin.close().await;
            (None, database_in(url, &name)?, Some((url.clone(), name)))
        }
    };
    if server.is_some() {
        // Our server runs with synchronous_commit = off (fast tests): an immediate
        // restart would forget commits already acknowledged, and the audit would call
        // them lost. Durable commits for the soak's database (from its next sessions on).
        let admin = db::connect_with(&url, 1).await?;
        sqlx::query("ALTER DATABASE postgres SET synchronous_commit = on")
            .execute(&admin)
            .await?;
        admin.close().await;
    }
    let db = db::connect_with(&url, 6).await?;
    db::migrate(&db).await?;
    audit::install_lease_log(&db).await?;
    Ok(SoakDatabase {
        server,
        url,
        scratch,
        db,
    })
}

/// What the soak is about to do, and where its logs go.
fn announce(args: &SoakOptions, database: &SoakDatabase, work: &WorkDir) {
    let skew = format_skew(args.clock_skew);
    println!(
        "matchmaker-lab soak: {} rounds, seed {}, {} replicas + 1 with its clock {skew} ahead, {}",
        args.rounds,
        args.seed,
        args.replicas,
        if database.server.is_some() {
            "private PostgreSQL"
        } else {
            "scratch database on DATABASE_URL (no PostgreSQL restarts)"
        }
    );
    println!("logs: {}", work.path.display());
}

/// The healthy replicas, then, once they lead, the skewed one: its first looks meet live
/// leases.
async fn start_replicas(
    args: &SoakOptions,
    exe: &Path,
    work: &WorkDir,
    database: &SoakDatabase,
) -> anyhow::Result<Vec<Replica>> {
    let spec = |name: String, clock_skew: Option<String>| ReplicaSpec {
        exe: exe.to_path_buf(),
        database_url: database.url.clone(),
        config: work.config.clone(),
        name,
        clock_skew,
        log_dir: work.path.clone(),
    };
    let mut replicas: Vec<Replica> = Vec::new();
    for i in 1..=args.replicas {
        replicas.push(Replica::start(spec(format!("r{i}"), None))?);
    }
    if !wait_for_leaders(&database.db, &SOAK_QUEUES, Duration::from_secs(30)).await {
        anyhow::bail!(
            "no replica took the leases within 30 s; log tail:\n{}",
            replicas[0].log_tail(20)
        );
    }
    let skew = format_skew(args.clock_skew);
    replicas.push(Replica::start(spec("skewed".into(), Some(skew)))?);
    Ok(replicas)
}

/// The client load, until the sender says stop: solo players and parties, some in both
/// queues, and cancels.
fn start_load(db: &PgPool, seed: u64) -> (watch::Sender<bool>, tokio::task::JoinHandle<ClientLog>) {
    let (stop_tx, stop_rx) = watch::channel(false);
    let load = tokio::spawn(run_load(
        db.clone(),
        LoadSpec {
            queue: "q".into(),
            second_queue: Some(("duel".into(), 0.5)),
            max_party: 3,
            pace: Duration::from_millis(15),
            prefix: "c".into(),
            seed,
        },
        stop_rx,
    ));
    (stop_tx, load)
}

/// What the fault phase did.
struct FaultRun {
    faults: Faults,
    /// What the cancel storms' clients were told.
    clients: ClientLog,
    /// The rounds reached when `--max-time` ran out first.
    unreached: Option<i64>,
    /// How long a takeover may take after a kill or a SIGTERM.
    bound: Duration,
    /// ... after a freeze: a frozen leader's open transaction holds the lease row until
    /// the server ends it.
    freeze_bound: Duration,
}

/// Inject faults until the replicas have committed `--rounds` rounds (or `--max-time`
/// runs out): one fault a cycle, PostgreSQL restarts at a third and two thirds of the
/// rounds.
async fn inject_faults(
    args: &SoakOptions,
    database: &SoakDatabase,
    replicas: &mut [Replica],
    started: Instant,
) -> anyhow::Result<FaultRun> {
    let db = &database.db;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(args.seed ^ 0x5eed);
    let mut run = FaultRun {
        faults: Faults::default(),
        clients: ClientLog::default(),
        unreached: None,
        bound: takeover_bound(LEASE_TTL, LEASE_RENEW),
        freeze_bound: takeover_bound(LEASE_TTL.max(db::IDLE_IN_TRANSACTION_TIMEOUT), LEASE_RENEW),
    };
    let restart_at = [args.rounds / 3, 2 * args.rounds / 3];
    let mut cycle = 0u32;
    loop {
        let rounds = round_count(db).await.unwrap_or(0);
        if rounds >= args.rounds {
            break;
        }
        if started.elapsed() > args.max_time {
            run.unreached = Some(rounds);
            break;
        }
        cycle += 1;
        tokio::time::sleep(Duration::from_millis(rng.random_range(300..1500))).await;
        restart_exited(replicas)?;

        let restarts_due = restart_at
            .iter()
            .filter(|&&at| rounds >= at && at > 0)
            .count();
        if let Some(server) = &database.server
            && run.faults.restarts.len() < restarts_due
        {
            restart_postgres(db, server, &mut run.faults, cycle).await?;
            continue;
        }

        // A fixed rotation, so that every kind of fault comes up in a short soak too: in
        // every six cycles a cancel storm, three SIGKILLs, a SIGTERM and a freeze of a
        // leader.
        if cycle % 6 == 1 {
            fire_cancel_storm(db, &mut rng, &mut run, cycle).await;
            continue;
        }
        stop_a_leader(db, replicas, &mut rng, &mut run, cycle).await?;
    }
    Ok(run)
}

/// A replica that exited without being told is restarted, its log tail shown.
fn restart_exited(replicas: &mut [Replica]) -> anyhow::Result<()> {
    for replica in replicas.iter_mut() {
        if !replica.check_alive() {
            eprintln!(
                "replica {} exited by itself; restarting. Log tail:\n{}",
                replica.holder(),
                replica.log_tail(15)
            );
            replica.restart()?;
        }
    }
    Ok(())
}

/// Restart PostgreSQL (fast the first time, immediate the second) and wait for the rounds
/// to resume.
async fn restart_postgres(
    db: &PgPool,
    server: &LocalPostgres,
    faults: &mut Faults,
    cycle: u32,
) -> anyhow::Result<()> {
    let mode = if faults.restarts.is_empty() {
        StopMode::Fast
    } else {
        StopMode::Immediate
    };
    let before = round_count(db).await.unwrap_or(0);
    server
        .restart(mode)
        .await
        .context("restarting PostgreSQL")?;
    faults.restarts.push(mode);
    if !wait_for_rounds(db, before, Duration::from_secs(30)).await {
        faults.stalls_after_restart += 1;
        eprintln!("no round within 30 s of the PostgreSQL restart ({mode:?})");
    }
    println!("cycle {cycle}: PostgreSQL restarted ({mode:?}); rounds resumed");
    Ok(())
}

/// A cancel storm at the solves in flight: 120 players, 100 of them cancelling.
async fn fire_cancel_storm(
    db: &PgPool,
    rng: &mut Xoshiro256PlusPlus,
    run: &mut FaultRun,
    cycle: u32,
) {
    let storm = cancel_storm(
        db,
        &StormSpec {
            queue: "q".into(),
            players: 120,
            parties: 10,
            cancels: 100,
            start_after: Duration::from_millis(300),
            spread: Duration::from_millis(800),
            prefix: format!("storm{cycle}-"),
            seed: rng.random(),
        },
    )
    .await;
    match storm {
        Ok(storm) => {
            run.faults.storms += 1;
            println!(
                "cycle {cycle}: cancel storm: {} cancels answered, {} too late",
                storm.clients.cancels, storm.clients.cancels_too_late
            );
            run.clients.extend(storm.clients);
        }
        Err(e) => eprintln!("cycle {cycle}: cancel storm failed: {e}"),
    }
}

/// Stop the leader of one queue: SIGKILL, SIGTERM, or freeze it (SIGSTOP) until a standby
/// leads, preferably while it is inside a commit; then time the takeover.
async fn stop_a_leader(
    db: &PgPool,
    replicas: &mut [Replica],
    rng: &mut Xoshiro256PlusPlus,
    run: &mut FaultRun,
    cycle: u32,
) -> anyhow::Result<()> {
    let faults = &mut run.faults;
    let kind = match (faults.kills + faults.terms + faults.freezes) % 5 {
        1 => Stop::Freeze,
        3 => Stop::Term,
        _ => Stop::Kill,
    };
    let queue = SOAK_QUEUES[rng.random_range(0..SOAK_QUEUES.len())];
    if kind == Stop::Freeze {
        let looking = Instant::now();
        while looking.elapsed() < Duration::from_secs(3)
            && committing_sessions(db).await.unwrap_or(0) == 0
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let Ok(Some((holder, term, true))) = lease_of(db, queue).await else {
        return Ok(());
    };
    let Some(victim) = replicas.iter_mut().find(|r| r.holder() == holder) else {
        return Ok(());
    };
    let stopped_at = Instant::now();
    let mut limit = run.bound;
    match kind {
        Stop::Term => {
            victim.terminate(Duration::from_secs(10));
            victim.restart()?;
            faults.terms += 1;
        }
        Stop::Kill => {
            victim.kill();
            victim.restart()?;
            faults.kills += 1;
        }
        Stop::Freeze => {
            victim.pause();
            faults.freezes += 1;
            if committing_sessions(db).await.unwrap_or(0) > 0 {
                faults.freezes_in_commit += 1;
            }
            limit = run.freeze_bound;
        }
    }
    let took = wait_for_new_term(db, queue, term, limit * 3).await;
    if kind == Stop::Freeze {
        victim.resume();
    }
    match took {
        Some((_, new_holder, _)) => {
            let took = stopped_at.elapsed();
            faults.takeovers.push((kind, took));
            if took > limit {
                faults.slow_takeovers += 1;
            }
            println!(
                "cycle {cycle}: {kind:?} leader {holder} of {queue}; {new_holder} leads \
                 after {:.2} s",
                took.as_secs_f64()
            );
        }
        None => {
            faults.slow_takeovers += 1;
            eprintln!(
                "cycle {cycle}: {kind:?} {holder}: nobody took over {queue} within {:?}",
                limit * 3
            );
        }
    }
    Ok(())
}

/// After the drain.
struct Drained {
    /// Everything the clients were told: the load's and the storms'.
    clients: ClientLog,
    unexpected_exits: u32,
}

/// No more clients, let the queues finish what they can, stop the replicas.
async fn drain(
    db: &PgPool,
    stop_load: watch::Sender<bool>,
    load: tokio::task::JoinHandle<ClientLog>,
    replicas: &mut [Replica],
    run: &FaultRun,
) -> anyhow::Result<Drained> {
    let _ = stop_load.send(true);
    let mut clients = run.clients.clone();
    clients.extend(load.await.context("client load task")?);
    wait_for_quiet(db, Duration::from_secs(4), Duration::from_secs(30)).await;
    let mut unexpected_exits = 0;
    for replica in replicas.iter_mut() {
        replica.check_alive();
        unexpected_exits += replica.unexpected_exits;
        replica.terminate(Duration::from_secs(10));
    }
    Ok(Drained {
        clients,
        unexpected_exits,
    })
}

/// The table of what was done and what the audit found; returns the sum of the
/// violations (all must be 0).
async fn report(
    db: &PgPool,
    started: Instant,
    run: &FaultRun,
    drained: &Drained,
    result: &audit::Audit,
) -> anyhow::Result<i64> {
    let (faults, clients) = (&run.faults, &drained.clients);
    let (bound, freeze_bound) = (run.bound, run.freeze_bound);
    let broken_by_cancel: i64 =
        sqlx::query_scalar("SELECT coalesce(sum(dropped_by_cancel), 0)::bigint FROM rounds")
            .fetch_one(db)
            .await?;
    let elapsed = started.elapsed();
    let max_takeover = |kind: Stop| {
        let took = faults.takeovers.iter().filter(|(k, _)| *k == kind);
        match took.map(|(_, d)| *d).max() {
            Some(d) => format!("{:.2} s", d.as_secs_f64()),
            None => "-".into(),
        }
    };
    let mut table: Vec<(String, String)> = vec![
        ("time".into(), format!("{:.1} s", elapsed.as_secs_f64())),
        ("SIGKILLs of a leader".into(), faults.kills.to_string()),
        ("SIGTERMs of a leader".into(), faults.terms.to_string()),
        (
            "leaders frozen (SIGSTOP; with a commit in flight)".into(),
            format!("{} ({})", faults.freezes, faults.freezes_in_commit),
        ),
        (
            "PostgreSQL restarts".into(),
            if faults.restarts.is_empty() {
                "0".into()
            } else {
                format!(
                    "{} ({})",
                    faults.restarts.len(),
                    faults
                        .restarts
                        .iter()
                        .map(|m| format!("{m:?}").to_lowercase())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
        ),
        (
            "cancel storms (120 players, 100 cancels)".into(),
            faults.storms.to_string(),
        ),
        (
            "client calls failed (database down)".into(),
            clients.errors.to_string(),
        ),
        (
            "cancels answered (of them too late: 0 cancelled)".into(),
            format!("{} ({})", clients.cancels, clients.cancels_too_late),
        ),
        (
            "players of matches dropped at commit (a mate left)".into(),
            broken_by_cancel.to_string(),
        ),
        (
            format!(
                "takeover after SIGKILL, max (bound {:.1} s)",
                bound.as_secs_f64()
            ),
            max_takeover(Stop::Kill),
        ),
        (
            format!(
                "takeover after SIGTERM, max (bound {:.1} s)",
                bound.as_secs_f64()
            ),
            max_takeover(Stop::Term),
        ),
        (
            format!(
                "takeover after a freeze, max (bound {:.1} s)",
                freeze_bound.as_secs_f64()
            ),
            max_takeover(Stop::Freeze),
        ),
    ];
    for (name, n) in result.totals() {
        table.push((name.to_string(), n.to_string()));
    }
    let extra_violations = [
        ("slow takeovers", i64::from(faults.slow_takeovers)),
        (
            "rounds not resumed after a restart",
            i64::from(faults.stalls_after_restart),
        ),
        (
            "replica exits we did not cause",
            i64::from(drained.unexpected_exits),
        ),
    ];
    println!();
    for (name, value) in &table {
        println!("  {name:<50} {value:>12}");
    }
    println!("  violations (all must be 0):");
    let mut violations = 0;
    for (name, n) in result.violations().into_iter().chain(extra_violations) {
        println!("  {name:<50} {n:>12}");
        violations += n;
    }
    Ok(violations)
}

/// Close the database; a clean run also drops its scratch database and its temporary
/// directory, a failed one leaves them for a look.
async fn clean_up(database: SoakDatabase, work: &WorkDir, clean: bool) -> anyhow::Result<()> {
    let SoakDatabase {
        server,
        scratch,
        db,
        ..
    } = database;
    db.close().await;
    if let Some(server) = server {
        server.stop().await?;
    }
    if let Some((url, name)) = scratch
        && clean
    {
        let admin = db::connect_with(&url, 1).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
        )))
        .execute(&admin)
        .await?;
        admin.close().await;
    }
    if clean && !work.keep {
        let _ = std::fs::remove_dir_all(&work.path);
    }
    Ok(())
}

/// `20s` / `-1m 5s` for `--clock-skew`.
fn format_skew(skew: chrono::Duration) -> String {
    let magnitude = skew.abs().to_std().unwrap_or_default();
    let sign = if skew < chrono::Duration::zero() {
        "-"
    } else {
        ""
    };
    format!("{sign}{}", humantime::format_duration(magnitude))
}

/// `url` with its database replaced by `name`.
pub fn database_in(url: &str, name: &str) -> anyhow::Result<String> {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let base = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    anyhow::ensure!(
        scheme_end > 0,
        "DATABASE_URL is not a URL: {}",
        db::redact(url)
    );
    Ok(match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_database_url_keeps_host_and_parameters() {
        assert_eq!(
            database_in("postgres://u:p@h:5432/app?sslmode=require", "s").unwrap(),
            "postgres://u:p@h:5432/s?sslmode=require"
        );
        assert_eq!(database_in("postgres://h", "s").unwrap(), "postgres://h/s");
        assert!(database_in("nonsense", "s").is_err());
    }

    #[test]
    fn soak_config_is_valid() {
        let config = matchmaker::config::Config::from_toml_str(SOAK_CONFIG).unwrap();
        assert_eq!(config.daemon.lease_ttl, LEASE_TTL);
        assert_eq!(config.daemon.lease_renew, LEASE_RENEW);
        let queues: Vec<&str> = config.queues.keys().map(String::as_str).collect();
        let mut expected = SOAK_QUEUES.to_vec();
        expected.sort();
        assert_eq!(queues, expected);
    }
}
