//! `matchmaker-lab peak`: a measured peak evening. Daemon replicas run as
//! child processes of this binary (`matchmaker run`, as `soak` starts them) over the
//! queues of [`crate::sim::peak`] (datacenter regions x a 3v3 peer-to-peer and a 5v5
//! dedicated mode), while one simulator per queue (`sim::simulator`, the load of
//! `matchmaker-lab simulate`) plays that region's players through the client functions, their
//! arrivals following the region's time of day. Meanwhile the countdown of every queue is
//! sampled twice a second. At the end it prints the table of [`PeakFigures`] and the
//! database's load, and exits non-zero if a target failed.
//!
//! With a fleet (`--servers-per-region`, `sim::game_servers`), the 5v5 queues require game
//! servers (`[queues.X.servers]`), simulated servers in the evening's regions announce
//! themselves and host the matches they are allocated, and the table adds the supply:
//! servers per region, matches placed and matches that waited for a server, players
//! left over `no_server`, cross-region placements and how long servers sat free.
//!
//! The database: a scratch database on `DATABASE_URL`'s server (dropped after a run that
//! met its targets), or a private PostgreSQL when none is given (as `demo` does).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, TimeZone, Utc};
use sqlx::PgPool;
use tokio::sync::watch;

use crate::sim::game_servers::{FleetOptions, FleetOutcome, FleetSpec, ServerFigures, run_fleet};
use crate::sim::peak::{EveningSpec, Mode, QueuePlan, config_toml, plan_evening};
use crate::sim::peak_figures::{
    CountdownSample, PastBoundApart, PeakFigures, PlacedPlayer, Placements, QueueTiming, RoundRow,
    WaitRow,
};
use crate::sim::population::{Population, PopulationSpec};
use crate::sim::rating_figures::RatingFigures;
use crate::sim::simulator::{MeetSpec, SimError, SimReport, SimulatorOptions, run_simulator};
use matchmaker::db::report::{ReportWindow, ResultStats};
use matchmaker::db::{self, local_pg::LocalPostgres};
use matchmaker_testkit::fleet::{Replica, ReplicaSpec, wait_for_leaders, write_config};

#[derive(Debug, Clone)]
pub struct PeakRun {
    /// Wall-clock length of the load (the replicas start before it, the audit follows).
    pub duration: Duration,
    /// Simulated seconds per wall-clock second for the time of day and match lengths
    /// (rounds, waits and max_wait stay in wall-clock time): 12 plays two evening hours
    /// in ten minutes, and a 10-minute match lasts 50 s.
    pub speedup: f64,
    /// Simulated UTC hour at the start (0-23): 19 is the European evening.
    pub start_hour: u32,
    /// Distinct players, split over the regions by where players live.
    pub players: usize,
    /// New players per second, all queues, if every region were at its busiest hour.
    pub rate: f64,
    /// Datacenter regions (largest first); two queues each.
    pub regions: u64,
    /// Daemon replicas.
    pub replicas: u64,
    /// Solver budget of every round.
    pub budget: Duration,
    /// Solver cores of each replica (`[daemon] solver_threads`).
    pub solver_threads: usize,
    pub seed: u64,
    /// The server to run on: a scratch database is created there. Without it, a private
    /// PostgreSQL is started from the local binaries.
    pub database_url: Option<String>,
    /// Keep the replicas' logs and the config here (default: a temporary directory,
    /// removed after a run that met its targets).
    pub log_dir: Option<PathBuf>,
    /// Game servers for the 5v5 queues (none by default).
    pub fleet: FleetOptions,
}

/// What to run, for the command and the tests.
#[derive(Debug, Clone)]
pub struct PeakOptions {
    pub evening: EveningSpec,
    pub duration: Duration,
    pub speedup: f64,
    pub start: DateTime<Utc>,
    pub replicas: u64,
    pub solver_threads: usize,
    pub seed: u64,
    /// The `matchmaker` binary the replicas run.
    pub exe: PathBuf,
    pub work_dir: PathBuf,
    /// Simulated game servers (`sim::game_servers`): with a fleet, the 5v5 queues
    /// require servers (`[queues.X.servers]`, ttl `fleet.ttl`), and the fleet runs in the
    /// evening's regions unless it names others, its matches as long as the players'.
    pub fleet: FleetOptions,
}

/// The measured run.
#[derive(Debug)]
pub struct PeakOutcome {
    pub figures: PeakFigures,
    /// The database's load over the run: (what, value).
    pub load: Vec<(String, String)>,
    pub queues: usize,
    pub distinct_players: i64,
    pub sims: SimReport,
    /// The players of each 5v5 queue (the queues a fleet serves), largest region first.
    pub sims_5v5: Vec<(String, SimReport)>,
    /// The fleet, when one ran.
    pub fleet: Option<FleetOutcome>,
    /// Replica exits we did not cause.
    pub replica_exits: u32,
    pub elapsed: Duration,
    /// The wait estimate against the waits that followed (see [`EstimateError`]).
    pub estimate: EstimateError,
    /// The rated 3v3 queues: ratings against true skills, and results against
    /// predictions.
    pub ratings: RatingFigures,
}

/// How far `player_status.estimated_wait_s` was from the wait that followed: every
/// queued player with an estimate, sampled every 5 s, whose entry was then matched
/// (players who cancelled or expired have no wait to compare with).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EstimateError {
    pub samples: usize,
    /// Median of |estimate - actual wait left|, seconds.
    pub median_abs_error_s: Option<f64>,
    /// 90th percentile of the same.
    pub p90_abs_error_s: Option<f64>,
    /// Median of the actual wait left, seconds (the scale of the error).
    pub median_actual_s: Option<f64>,
    /// Share of samples whose estimate was within 50% (or 15 s) of the actual wait left.
    pub within_half: Option<f64>,
}

impl EstimateError {
    /// From (estimate, actual) pairs in seconds.
    pub fn measure(pairs: &[(f64, f64)]) -> EstimateError {
        if pairs.is_empty() {
            return EstimateError::default();
        }
        let pct = |mut v: Vec<f64>, p: f64| {
            v.sort_by(f64::total_cmp);
            v[((v.len() - 1) as f64 * p).round() as usize]
        };
        let errors: Vec<f64> = pairs.iter().map(|(e, a)| (e - a).abs()).collect();
        let within = pairs
            .iter()
            .filter(|(e, a)| (e - a).abs() <= (0.5 * a).max(15.0))
            .count();
        EstimateError {
            samples: pairs.len(),
            median_abs_error_s: Some(pct(errors.clone(), 0.5)),
            p90_abs_error_s: Some(pct(errors, 0.9)),
            median_actual_s: Some(pct(pairs.iter().map(|p| p.1).collect(), 0.5)),
            within_half: Some(within as f64 / pairs.len() as f64),
        }
    }
}

impl PeakOutcome {
    /// The targets that failed, and a replica that crashed.
    pub fn failed_targets(&self) -> Vec<String> {
        let mut failed = self.figures.failed_targets();
        if self.replica_exits > 0 {
            failed.push(format!("{} replica exits", self.replica_exits));
        }
        failed
    }

    pub fn table(&self) -> String {
        let s = &self.sims;
        let mut rows: Vec<(String, String)> = vec![
            (
                "wall clock".into(),
                format!("{:.0} s", self.elapsed.as_secs_f64()),
            ),
            ("queues".into(), self.queues.to_string()),
            (
                "distinct players enqueued".into(),
                self.distinct_players.to_string(),
            ),
            (
                "enqueues (returning) / matched / cancelled".into(),
                format!(
                    "{} ({}) / {} / {}",
                    s.enqueued, s.requeued, s.matched, s.cancelled
                ),
            ),
        ];
        let waits = |s: &SimReport| match (
            s.wait_percentile(0.5),
            s.wait_percentile(0.9),
            s.wait_percentile(0.99),
        ) {
            (Some(p50), Some(p90), Some(p99)) => Some(format!("{p50:.1} / {p90:.1} / {p99:.1} s")),
            _ => None,
        };
        if let Some(w) = waits(s) {
            rows.push(("wait to a match, p50 / p90 / p99".into(), w));
        }
        let mut all_5v5 = SimReport::default();
        for (_, r) in &self.sims_5v5 {
            merge(&mut all_5v5, r.clone());
        }
        if let Some(w) = waits(&all_5v5) {
            rows.push(("  5v5 queues, p50 / p90 / p99".into(), w));
        }
        for (queue, r) in &self.sims_5v5 {
            rows.push((
                format!("    {queue}: matched / left queued at the end, p50 / p90"),
                format!(
                    "{} / {}, {}",
                    r.matched,
                    r.cleaned_up,
                    match (r.wait_percentile(0.5), r.wait_percentile(0.9)) {
                        (Some(p50), Some(p90)) => format!("{p50:.1} / {p90:.1} s"),
                        _ => "-".into(),
                    }
                ),
            ));
        }
        if let Some(fleet) = &self.fleet {
            let r = &fleet.report;
            rows.push((
                "game servers per region at the start".into(),
                fleet.spec.servers_line(),
            ));
            rows.push((
                "  hosted / crashed (back under a new id) / given back".into(),
                format!(
                    "{} / {} ({}) / {}",
                    r.hosted.len(),
                    r.crashes,
                    r.comebacks,
                    r.count(crate::sim::game_servers::HostEnd::GivenBack)
                ),
            ));
            if let Some(figures) = &fleet.figures {
                rows.extend(
                    figures
                        .rows()
                        .into_iter()
                        .map(|(k, v)| (format!("  {k}"), v)),
                );
            }
        }
        rows.extend(self.figures.rows());
        let e = &self.estimate;
        if let (Some(med), Some(p90), Some(actual), Some(within)) = (
            e.median_abs_error_s,
            e.p90_abs_error_s,
            e.median_actual_s,
            e.within_half,
        ) {
            rows.push((
                "wait estimate |error|, p50 / p90 (actual wait left p50)".into(),
                format!(
                    "{med:.1} / {p90:.1} s ({actual:.1} s), {} samples",
                    e.samples
                ),
            ));
            rows.push((
                "wait estimates within 50% (or 15 s) of the wait".into(),
                format!("{:.1}%", 100.0 * within),
            ));
        }
        rows.extend(self.ratings.rows());
        rows.extend(self.load.iter().cloned());
        rows.iter()
            .map(|(k, v)| format!("  {k:<50} {v}\n"))
            .collect()
    }
}

pub fn run(args: PeakRun) -> anyhow::Result<()> {
    crate::run_beside_replicas(peak(args))
}

async fn peak(args: PeakRun) -> anyhow::Result<()> {
    let evening = EveningSpec {
        regions: args.regions as usize,
        players: args.players,
        rate: args.rate,
        budget: args.budget,
        ..EveningSpec::default()
    };
    // A fleet the evening cannot have (a short region it does not run) is refused before
    // anything starts.
    evening_fleet(
        &plan_evening(&Population::realistic(), &evening),
        &args.fleet,
        args.speedup,
        args.seed,
    )?;
    let (work, keep_work) = match &args.log_dir {
        Some(dir) => (dir.clone(), true),
        None => (
            std::env::temp_dir().join(format!("matchmaker-peak-{}", std::process::id())),
            false,
        ),
    };
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let (server, url, scratch) = match &args.database_url {
        None => {
            let server = LocalPostgres::start_temporary()
                .await
                .context("no DATABASE_URL given, and the private PostgreSQL did not start")?;
            let url = server.url();
            // The private server runs with synchronous_commit = off (fast tests); a
            // studio's server flushes every commit.
            let admin = db::connect_with(&url, 1).await?;
            sqlx::query("ALTER DATABASE postgres SET synchronous_commit = on")
                .execute(&admin)
                .await?;
            admin.close().await;
            (Some(server), url, None)
        }
        Some(url) => {
            let name = format!("matchmaker_peak_{}", std::process::id());
            let admin = db::connect_with(url, 1).await?;
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                .execute(&admin)
                .await
                .context("creating the peak run's scratch database")?;
            admin.close().await;
            (
                None,
                crate::soak::database_in(url, &name)?,
                Some((url.clone(), name)),
            )
        }
    };
    let today = Utc::now().date_naive();
    let start =
        Utc.from_utc_datetime(&today.and_hms_opt(args.start_hour, 0, 0).expect("hour < 24"));
    let fleet_line = if args.fleet.enabled() {
        format!(
            ", game servers {} per region{}",
            args.fleet.servers_per_region,
            args.fleet
                .short_regions
                .iter()
                .map(|(r, k)| format!(" ({r} {k})"))
                .collect::<String>()
        )
    } else {
        String::new()
    };
    let options = PeakOptions {
        evening,
        duration: args.duration,
        speedup: args.speedup,
        start,
        replicas: args.replicas,
        solver_threads: args.solver_threads,
        seed: args.seed,
        exe: super::product_binary()?,
        work_dir: work.clone(),
        fleet: args.fleet.clone(),
    };
    println!(
        "matchmaker-lab peak: {} replicas, {} regions x 2 modes, {} players, {} new/s at peak, \
         {} of wall clock at speedup {} from {:02}:00 UTC{fleet_line}, on {}",
        args.replicas,
        args.regions,
        args.players,
        args.rate,
        humantime::format_duration(args.duration),
        args.speedup,
        args.start_hour,
        if server.is_some() {
            "a private PostgreSQL".to_string()
        } else {
            "a scratch database on DATABASE_URL".to_string()
        }
    );
    println!("logs: {}", work.display());
    let outcome = run_peak(&url, &options).await;
    if let Some(server) = server {
        server.stop().await?;
    }
    let outcome = outcome?;
    println!("\n{}", outcome.table());
    if let Some(note) = outcome.figures.apart_note() {
        println!("  {note}");
    }
    if outcome.fleet.is_some() {
        println!("  {}", crate::sim::game_servers::CROSS_REGION_NOTE);
    }
    let failed = outcome.failed_targets();
    if failed.is_empty() {
        println!("  targets: all met");
        if let Some((url, name)) = scratch {
            let admin = db::connect_with(&url, 1).await?;
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
            )))
            .execute(&admin)
            .await?;
            admin.close().await;
        }
        if !keep_work {
            let _ = std::fs::remove_dir_all(&work);
        }
        Ok(())
    } else {
        for target in &failed {
            println!("  target failed: {target}");
        }
        anyhow::bail!(
            "{} targets failed (replica logs: {})",
            failed.len(),
            work.display()
        )
    }
}

/// The whole evening against the database at `url` (migrated here): replicas, the load,
/// the countdown samples, then the figures.
pub async fn run_peak(url: &str, options: &PeakOptions) -> anyhow::Result<PeakOutcome> {
    let started = Instant::now();
    let db = db::connect_with(url, 24).await?;
    db::migrate(&db).await?;
    let population = Population::realistic();
    let evening = EveningSpec {
        server_ttl: options.fleet.enabled().then_some(options.fleet.ttl),
        ..options.evening.clone()
    };
    let plans = plan_evening(&population, &evening);
    let fleet_spec = evening_fleet(&plans, &options.fleet, options.speedup, options.seed)?;
    let mut replicas = start_replicas(url, &db, &plans, &evening, options).await?;

    let since: DateTime<Utc> = sqlx::query_scalar("SELECT now()").fetch_one(&db).await?;
    let (stop_tx, stop_rx) = watch::channel(false);
    // The fleet announces itself before the players come, and stops after them.
    let fleet = fleet_spec.clone().map(|spec| {
        let db = db.clone();
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let stopped = async move {
                let _ = stop.wait_for(|stop| *stop).await;
            };
            run_fleet(&db, &spec, stopped).await
        })
    });
    let before = DbLoad::read(&db).await?;
    let load_started = Instant::now();
    let sampler = tokio::spawn(sample_countdowns(db.clone(), stop_rx.clone()));
    let estimates = tokio::spawn(sample_estimates(db.clone(), stop_rx));
    let sims = run_simulators(&db, &plans, options).await?;
    let load_time = load_started.elapsed();
    let _ = stop_tx.send(true);
    let samples = sampler.await.context("the countdown sampler")??;
    let estimates = estimates.await.context("the estimate sampler")??;
    let fleet_report = match fleet {
        Some(task) => Some(task.await.context("the game servers")??),
        None => None,
    };
    let after = DbLoad::read(&db).await?;
    let backend_cpu = backend_cpu_secs(&db).await?;
    let (replica_exits, replica_cpu) = stop_replicas(&mut replicas);
    if let Some(e) = sims.error {
        return Err(e);
    }

    let rounds = read_rounds(&db).await?;
    let distinct_players: i64 =
        sqlx::query_scalar("SELECT count(DISTINCT player_id) FROM queue_entries")
            .fetch_one(&db)
            .await?;
    let timing = queue_timing(&plans);
    let per_match: HashMap<String, usize> = plans
        .iter()
        .map(|p| (p.queue.clone(), 2 * p.mode.team_size()))
        .collect();
    let waits = read_waits(&db, &timing, &per_match).await?;
    let placements = read_placements(&db).await?;
    let estimate = estimate_error(&db, &estimates).await?;
    let ratings = rating_figures(&db, &sims.rated_queues, &sims.rated, since).await?;
    let figures = PeakFigures::measure(&rounds, &samples, &waits, &placements, &timing);
    let fleet = match (fleet_spec, fleet_report) {
        (Some(spec), Some(report)) => {
            let queues: Vec<String> = plans
                .iter()
                .filter(|p| p.mode == Mode::Dedicated5v5)
                .map(|p| p.queue.clone())
                .collect();
            Some(FleetOutcome {
                spec,
                report,
                figures: Some(ServerFigures::read(&db, &queues, since).await?),
            })
        }
        _ => None,
    };
    write_run_data(&options.work_dir, &rounds, &samples, &waits)?;
    let mut load = after.since(&before, load_time);
    load.push((
        "CPU of the database's backends open at the end".into(),
        backend_cpu.map_or("-".into(), |s| format!("{s:.0} s")),
    ));
    load.push((
        "CPU of the replicas (all their threads)".into(),
        format!("{replica_cpu:.0} s"),
    ));
    db.close().await;
    Ok(PeakOutcome {
        figures,
        load,
        queues: plans.len(),
        distinct_players,
        sims: sims.all,
        sims_5v5: sims.by_5v5,
        fleet,
        replica_exits,
        elapsed: started.elapsed(),
        estimate,
        ratings,
    })
}

/// The rated queues' figures: the simulators' ratings beside their true skills, and the
/// report's results of those queues since `since`.
async fn rating_figures(
    db: &PgPool,
    rated_queues: &[String],
    rated: &SimReport,
    since: DateTime<Utc>,
) -> anyhow::Result<RatingFigures> {
    let mut conn = db.acquire().await?;
    let to: DateTime<Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(&mut *conn)
        .await?;
    let window = ReportWindow {
        queue: None,
        from: since,
        to,
    };
    let results: Vec<ResultStats> = db::report::result_stats(&mut conn, &window)
        .await?
        .into_iter()
        .filter(|r| rated_queues.contains(&r.queue))
        .collect();
    Ok(RatingFigures::measure(rated, &results))
}

/// The replicas on the evening's config, once they lead every queue.
async fn start_replicas(
    url: &str,
    db: &PgPool,
    plans: &[QueuePlan],
    evening: &EveningSpec,
    options: &PeakOptions,
) -> anyhow::Result<Vec<Replica>> {
    let config = write_config(
        &options.work_dir,
        &config_toml(plans, evening, options.solver_threads),
    )?;
    let mut replicas = Vec::new();
    for i in 1..=options.replicas {
        replicas.push(Replica::start(ReplicaSpec {
            exe: options.exe.clone(),
            database_url: url.to_string(),
            config: config.clone(),
            name: format!("r{i}"),
            clock_skew: None,
            log_dir: options.work_dir.clone(),
        })?);
    }
    let queues: Vec<&str> = plans.iter().map(|p| p.queue.as_str()).collect();
    if !wait_for_leaders(db, &queues, Duration::from_secs(60)).await {
        anyhow::bail!(
            "the replicas did not lead every queue within 60 s; log tail:\n{}",
            replicas[0].log_tail(20)
        );
    }
    Ok(replicas)
}

/// What the evening's simulators report.
struct EveningSims {
    /// Every queue's, merged.
    all: SimReport,
    /// The 5v5 queues', each apart.
    by_5v5: Vec<(String, SimReport)>,
    /// The rated queues', merged.
    rated: SimReport,
    /// The rated queues (their simulators found a `rating_pool` in the catalog).
    rated_queues: Vec<String>,
    /// The first simulator's error (named by its queue), if any failed.
    error: Option<anyhow::Error>,
}

/// A simulator a queue, all at once, until each has played its evening.
async fn run_simulators(
    db: &PgPool,
    plans: &[QueuePlan],
    options: &PeakOptions,
) -> anyhow::Result<EveningSims> {
    let mut sims = Vec::new();
    for (k, plan) in plans.iter().enumerate() {
        let db = db.clone();
        let sim_options = simulator_options(plan, options, k as u64);
        let population = Population::new(plan.world.clone());
        sims.push(tokio::spawn(async move {
            run_simulator(&db, &population, &sim_options, None, std::future::pending()).await
        }));
    }
    let mut out = EveningSims {
        all: SimReport::default(),
        by_5v5: Vec::new(),
        rated: SimReport::default(),
        rated_queues: Vec::new(),
        error: None,
    };
    for (sim, plan) in sims.into_iter().zip(plans) {
        match sim.await.context("a simulator task")? {
            Ok(r) => {
                if plan.mode == Mode::Dedicated5v5 {
                    out.by_5v5.push((plan.queue.clone(), r.clone()));
                }
                if r.rating_pool.is_some() {
                    out.rated_queues.push(plan.queue.clone());
                    merge(&mut out.rated, r.clone());
                }
                merge(&mut out.all, r)
            }
            Err(e) => {
                out.error
                    .get_or_insert(anyhow::Error::from(e).context(plan.queue.clone()));
            }
        }
    }
    Ok(out)
}

/// Stop the replicas: the exits the run did not cause, and the CPU seconds they used.
fn stop_replicas(replicas: &mut [Replica]) -> (u32, f64) {
    let mut replica_exits = 0;
    let mut replica_cpu = 0.0;
    for r in replicas.iter_mut() {
        r.check_alive();
        replica_exits += r.unexpected_exits;
        replica_cpu += r.pid().and_then(process_cpu_secs).unwrap_or(0.0);
        r.terminate(Duration::from_secs(10));
    }
    (replica_exits, replica_cpu)
}

/// Each queue's round interval and longest wait, by queue name.
fn queue_timing(plans: &[QueuePlan]) -> HashMap<String, QueueTiming> {
    plans
        .iter()
        .map(|p| {
            (
                p.queue.clone(),
                QueueTiming {
                    every: p.every,
                    max_wait: p.max_wait,
                },
            )
        })
        .collect()
}

/// The evening's fleet: in the regions of the 5v5 queues unless the options name others,
/// its matches as long as the players' (their mean match at the speedup).
fn evening_fleet(
    plans: &[QueuePlan],
    fleet: &FleetOptions,
    speedup: f64,
    seed: u64,
) -> Result<Option<FleetSpec>, SimError> {
    let mut regions: Vec<String> = plans
        .iter()
        .filter(|p| p.mode == Mode::Dedicated5v5)
        .map(|p| p.region.clone())
        .collect();
    regions.dedup();
    fleet.spec(
        &regions,
        SimulatorOptions::default().match_duration.div_f64(speedup),
        fleet.ttl,
        seed,
        "peak-srv-",
    )
}

/// Every queued player's wait estimate every 5 s until `stop`: (entry, when, seconds),
/// computed as player_status computes it (the party's slowest member; none while no match
/// can form), without the view's latest-entry-per-player pass over the whole table.
async fn sample_estimates(
    db: PgPool,
    mut stop: watch::Receiver<bool>,
) -> Result<Vec<(i64, DateTime<Utc>, i32)>, db::DbError> {
    let mut samples = Vec::new();
    let mut every = tokio::time::interval(Duration::from_secs(5));
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = stop.changed() => {}
        }
        if *stop.borrow() {
            return Ok(samples);
        }
        let rows: Vec<(i64, DateTime<Utc>, Option<i32>)> = sqlx::query_as(
            "SELECT e.entry_id, now(),
                    (SELECT max(matchmaker_estimate_wait(c.wait_model, p.skill, p.latencies,
                                                         coalesce(c.seconds_to_next_round, 0),
                                                         e.owner))
                       FROM queue_entries p
                      WHERE p.entry_id = e.entry_id
                         OR (p.party_key = e.party_key AND p.status = 'queued'))
               FROM queue_entries e
               JOIN queue_countdown c ON c.queue = e.queue
              WHERE e.status = 'queued' AND e.expires_at > now()
                AND c.players_missing = 0
                AND coalesce(e.left_over, '') NOT IN
                    ('no_valid_match', 'no_host', 'filtered', 'avoided', 'vetoed')",
        )
        .fetch_all(&db)
        .await?;
        samples.extend(
            rows.into_iter()
                .filter_map(|(id, at, est)| est.map(|est| (id, at, est))),
        );
    }
}

/// The samples against the waits that followed: each sampled entry's match time.
async fn estimate_error(
    db: &PgPool,
    samples: &[(i64, DateTime<Utc>, i32)],
) -> Result<EstimateError, db::DbError> {
    let ids: Vec<i64> = samples.iter().map(|s| s.0).collect();
    let matched: HashMap<i64, DateTime<Utc>> = sqlx::query_as::<_, (i64, DateTime<Utc>)>(
        "SELECT entry_id, matched_at FROM match_players WHERE entry_id = ANY($1)",
    )
    .bind(&ids)
    .fetch_all(db)
    .await?
    .into_iter()
    .collect();
    let pairs: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|(id, at, est)| {
            let done = matched.get(id)?;
            let actual = (*done - *at).num_milliseconds() as f64 / 1000.0;
            (actual >= 0.0).then_some((f64::from(*est), actual))
        })
        .collect();
    Ok(EstimateError::measure(&pairs))
}

/// The simulator of one queue: its region's players, their time of day, parties no larger
/// than a team (at most 3), its own player-id prefix.
fn simulator_options(plan: &QueuePlan, options: &PeakOptions, k: u64) -> SimulatorOptions {
    SimulatorOptions {
        queue: plan.queue.clone(),
        rate: plan.rate,
        duration: options.duration,
        population: plan.population,
        seed: options.seed.wrapping_mul(1000).wrapping_add(k),
        speedup: options.speedup,
        start: Some(options.start),
        spec: PopulationSpec {
            max_party_size: plan.mode.team_size().min(3),
            ..PopulationSpec::default()
        },
        id_prefix: Some(format!("{}-", plan.queue)),
        // The measured evening's players, as its figures were measured.
        meet: MeetSpec::none(),
        ..SimulatorOptions::default()
    }
}

fn merge(total: &mut SimReport, r: SimReport) {
    total.enqueued += r.enqueued;
    total.enqueued_in_parties += r.enqueued_in_parties;
    total.requeued += r.requeued;
    total.matched += r.matched;
    total.cancelled += r.cancelled;
    total.rejected += r.rejected;
    total.expired += r.expired;
    total.refused += r.refused;
    total.keep_alive_calls += r.keep_alive_calls;
    total.base_exhausted += r.base_exhausted;
    total.matches += r.matches;
    total.waits_secs.extend(r.waits_secs);
    total.cleaned_up += r.cleaned_up;
    total.accepted += r.accepted;
    total.results_reported += r.results_reported;
    total.results_refused += r.results_refused;
    total.true_gaps.extend(r.true_gaps);
    total.ratings.extend(r.ratings);
    if total.rating_pool.is_none() {
        total.rating_pool = r.rating_pool;
    }
    if total.first_refusal.is_none() {
        total.first_refusal = r.first_refusal;
    }
}

/// Every queue's countdown twice a second until `stop`, each read with the newest round
/// id of its queue in the same statement (one snapshot).
async fn sample_countdowns(
    db: PgPool,
    mut stop: watch::Receiver<bool>,
) -> Result<Vec<CountdownSample>, db::DbError> {
    let mut samples = Vec::new();
    let mut every = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = stop.changed() => {}
        }
        if *stop.borrow() {
            return Ok(samples);
        }
        let rows: Vec<SampleRow> = sqlx::query_as(
            "SELECT s.queue, clock_timestamp(), s.next_round_at, s.waiting_for,
                    (SELECT max(r.round_id) FROM rounds r WHERE r.queue = s.queue),
                    s.players_missing, s.latest_round_at, s.round_started_at,
                    s.pool_counted_at
               FROM queue_state s",
        )
        .fetch_all(&db)
        .await?;
        samples.extend(rows.into_iter().map(
            |(
                queue,
                sampled_at,
                next_round_at,
                waiting_for,
                last_round_id,
                players_missing,
                latest_round_at,
                round_started_at,
                counted_at,
            )| CountdownSample {
                queue,
                sampled_at,
                next_round_at,
                waiting_for,
                last_round_id,
                players_missing,
                latest_round_at,
                round_started_at,
                counted_at,
            },
        ));
    }
}

/// The raw data behind the figures, as CSV in `dir` (the log directory): every round,
/// every countdown sample and every wait, so that a failed target can be traced to the
/// rounds and samples that failed it (with the replicas' logs and, on `DATABASE_URL`, the
/// scratch database, which a failed run keeps).
fn write_run_data(
    dir: &std::path::Path,
    rounds: &[RoundRow],
    samples: &[CountdownSample],
    waits: &[WaitRow],
) -> anyhow::Result<()> {
    use std::fmt::Write as _;
    let t = |at: DateTime<Utc>| at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let mut csv = String::from(
        "queue,round_id,trigger,started_at,committed_at,snapshot_ms,solve_ms,commit_ms\n",
    );
    for r in rounds {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{:.3},{:.3},{:.3}",
            r.queue,
            r.round_id,
            r.trigger,
            t(r.started_at),
            t(r.committed_at),
            r.snapshot_ms,
            r.solve_ms,
            r.commit_ms
        );
    }
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    write("rounds.csv", &csv)?;
    let mut csv = String::from(
        "queue,sampled_at,next_round_at,waiting_for,last_round_id,players_missing,\
         latest_round_at,round_started_at,pool_counted_at\n",
    );
    for s in samples {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{}",
            s.queue,
            t(s.sampled_at),
            s.next_round_at.map(t).unwrap_or_default(),
            s.waiting_for,
            s.last_round_id.map(|id| id.to_string()).unwrap_or_default(),
            s.players_missing,
            s.latest_round_at.map(t).unwrap_or_default(),
            s.round_started_at.map(t).unwrap_or_default(),
            s.counted_at.map(t).unwrap_or_default()
        );
    }
    write("samples.csv", &csv)?;
    let mut csv = String::from("queue,waited_secs,matched\n");
    for w in waits {
        let _ = writeln!(csv, "{},{:.3},{}", w.queue, w.waited_secs, w.matched);
    }
    write("waits.csv", &csv)
}

/// queue, round_id, trigger, started_at, committed_at, snapshot_ms, solve_ms, commit_ms.
type RoundTuple = (
    String,
    i64,
    String,
    DateTime<Utc>,
    DateTime<Utc>,
    f64,
    f64,
    f64,
);

/// queue, sampled at, next_round_at, waiting_for, last round id, players_missing,
/// latest_round_at, round_started_at, pool_counted_at.
type SampleRow = (
    String,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
    String,
    Option<i64>,
    i32,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
);

/// The matched players (queue, enqueued_at, the round that placed them) and every
/// queue's arrivals, for the countdown error.
pub async fn read_placements(db: &PgPool) -> Result<Placements, db::DbError> {
    let players: Vec<(String, DateTime<Utc>, i64)> = sqlx::query_as(
        "SELECT e.queue, e.enqueued_at, m.round_id
           FROM queue_entries e
           JOIN matches m ON m.match_id = e.match_id",
    )
    .fetch_all(db)
    .await?;
    let arrivals: Vec<(String, DateTime<Utc>)> =
        sqlx::query_as("SELECT queue, enqueued_at FROM queue_entries ORDER BY enqueued_at")
            .fetch_all(db)
            .await?;
    let mut placements = Placements {
        players: players
            .into_iter()
            .map(|(queue, enqueued_at, round_id)| PlacedPlayer {
                queue,
                enqueued_at,
                round_id,
            })
            .collect(),
        ..Placements::default()
    };
    for (queue, at) in arrivals {
        placements.arrivals.entry(queue).or_default().push(at);
    }
    Ok(placements)
}

async fn read_rounds(db: &PgPool) -> Result<Vec<RoundRow>, db::DbError> {
    let rows: Vec<RoundTuple> = sqlx::query_as(
        "SELECT queue, round_id, trigger, started_at, committed_at, snapshot_ms, solve_ms,
                    commit_ms
               FROM rounds ORDER BY round_id",
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(
                queue,
                round_id,
                trigger,
                started_at,
                committed_at,
                snapshot_ms,
                solve_ms,
                commit_ms,
            )| {
                RoundRow {
                    queue,
                    round_id,
                    trigger,
                    started_at,
                    committed_at,
                    snapshot_ms,
                    solve_ms,
                    commit_ms,
                }
            },
        )
        .collect())
}

/// Each entry's wait: to the start of the round that matched it, or to when it left the
/// queue (cancelled: by the player, or by the simulator's clean-up at the end), or to now
/// if still queued. Rejected entries (expired, withdrawn) were not waiting for a match.
/// A wait past `max_wait` plus one round is classified (see [`past_bound_apart`]).
async fn read_waits(
    db: &PgPool,
    timing: &HashMap<String, QueueTiming>,
    per_match: &HashMap<String, usize>,
) -> Result<Vec<WaitRow>, db::DbError> {
    let rows: Vec<EntryWaitRow> = sqlx::query_as(
        "SELECT e.queue, e.player_id, e.enqueued_at,
                CASE e.status
                    WHEN 'matched' THEN coalesce(r.started_at, e.updated_at)
                    WHEN 'cancelled' THEN e.updated_at
                    ELSE now() END,
                CASE WHEN e.status = 'matched' THEN e.round_id END
           FROM queue_entries e
           LEFT JOIN rounds r ON r.round_id = e.round_id
          WHERE e.status IN ('matched', 'cancelled', 'queued')",
    )
    .fetch_all(db)
    .await?;
    let mut waits = Vec::with_capacity(rows.len());
    for (queue, player_id, enqueued_at, ended_at, matched_in) in rows {
        let matched = matched_in.is_some();
        let waited_secs = (ended_at - enqueued_at)
            .num_microseconds()
            .unwrap_or(i64::MAX) as f64
            / 1e6;
        let mut apart = None;
        if let (Some(t), Some(&per_match)) = (timing.get(&queue), per_match.get(&queue))
            && waited_secs > t.bound().as_secs_f64()
        {
            let wait = EntryWait {
                queue: &queue,
                player_id: &player_id,
                enqueued_at,
                ended_at,
                matched_in,
            };
            apart = past_bound_apart(db, &wait, t, per_match).await?;
        }
        waits.push(WaitRow {
            queue,
            waited_secs,
            matched,
            apart,
        });
    }
    Ok(waits)
}

/// queue, player_id, enqueued_at, end of the wait, the round that matched it.
type EntryWaitRow = (String, String, DateTime<Utc>, DateTime<Utc>, Option<i64>);

/// One entry's wait, for [`past_bound_apart`].
struct EntryWait<'a> {
    queue: &'a str,
    player_id: &'a str,
    enqueued_at: DateTime<Utc>,
    ended_at: DateTime<Utc>,
    matched_in: Option<i64>,
}

/// Whether a wait past the bound is one no matchmaker could have shortened, from the
/// entries and the rounds (not from the daemon's countdown):
///
/// - **below one match**: at the moment they reached `max_wait` their queue held fewer
///   queued players than one match, and they were matched (or left) within one round of
///   the first moment it held one (or it never did before they left);
/// - **no valid match**: at least one round started after they reached `max_wait` while
///   they waited, and every such round that did not match them left them over because no
///   valid match included them (its own explanation, `round_snapshots.left_over`:
///   `no_host`, nobody in reach to host a peer-to-peer match with them, or
///   `no_valid_match`, party shape or roles);
/// - **no server**: as no valid match, where some of those rounds formed their match but
///   had no game server for it (`no_server`: a queue that requires servers).
///
/// - **next round**: matched by the first round that started after they reached
///   `max_wait`, and that round started within 1 s of its tick (the lateness target).
///   Its tick is the previous round's commit plus the interval, so a player who reached
///   `max_wait` while that previous round ran (it had them, not yet overdue) waits up to
///   its duration plus the lateness beyond `max_wait` plus the interval.
///
/// Anything else (outscored or not found within the budget after `max_wait`, a round
/// more than 1 s late, no round) is not counted apart: it fails the target.
async fn past_bound_apart(
    db: &PgPool,
    wait: &EntryWait<'_>,
    timing: &QueueTiming,
    per_match: usize,
) -> Result<Option<PastBoundApart>, db::DbError> {
    let max_wait = chrono::Duration::from_std(timing.max_wait).unwrap_or(chrono::Duration::MAX);
    let every = chrono::Duration::from_std(timing.every).unwrap_or(chrono::Duration::MAX);
    let crossed_at = wait.enqueued_at + max_wait;
    // The first moment from the crossing on at which the queue held one match: the pool
    // at the crossing (entries that had arrived and not yet ended, whatever their status
    // later), then a sweep of the arrivals (+1) and ends (-1) after it. One scan of the
    // queue's entries per player past the bound (few).
    let full_at: Option<DateTime<Utc>> = sqlx::query_scalar(
        "WITH at_crossing AS (
             SELECT count(*) AS n FROM queue_entries
              WHERE queue = $1 AND enqueued_at <= $3
                AND (status = 'queued' OR updated_at > $3)),
         events AS (
             SELECT enqueued_at AS t, 1 AS d FROM queue_entries
              WHERE queue = $1 AND enqueued_at > $3 AND enqueued_at <= $4
             UNION ALL
             SELECT updated_at, -1 FROM queue_entries
              WHERE queue = $1 AND status <> 'queued'
                AND updated_at > $3 AND updated_at <= $4),
         pool AS (
             SELECT $3::timestamptz AS t, (SELECT n FROM at_crossing) AS size
             UNION ALL
             -- At one instant, arrivals count before ends.
             SELECT t, (SELECT n FROM at_crossing)
                       + sum(d) OVER (ORDER BY t, d DESC ROWS UNBOUNDED PRECEDING)
               FROM events)
         SELECT min(t) FROM pool WHERE size >= $2",
    )
    .bind(wait.queue)
    .bind(per_match as i64)
    .bind(crossed_at)
    .bind(wait.ended_at)
    .fetch_one(db)
    .await?;
    match full_at {
        None => return Ok(Some(PastBoundApart::BelowOneMatch)),
        Some(at) if at > crossed_at && wait.ended_at <= at + every => {
            return Ok(Some(PastBoundApart::BelowOneMatch));
        }
        Some(_) => {}
    }
    // The first round after the crossing, and its tick (the previous round's commit
    // plus the interval, as the lateness figure counts it).
    if let Some(round_id) = wait.matched_in {
        let first: Option<(i64, DateTime<Utc>, Option<DateTime<Utc>>)> = sqlx::query_as(
            "SELECT r.round_id, r.started_at,
                    (SELECT p.committed_at FROM rounds p
                      WHERE p.queue = r.queue AND p.round_id < r.round_id
                      ORDER BY p.round_id DESC LIMIT 1)
               FROM rounds r
              WHERE r.queue = $1 AND r.started_at > $2
              ORDER BY r.round_id LIMIT 1",
        )
        .bind(wait.queue)
        .bind(crossed_at)
        .fetch_optional(db)
        .await?;
        if let Some((first_id, started_at, Some(previous_commit))) = first
            && first_id == round_id
            && started_at <= previous_commit + every + chrono::Duration::seconds(1)
        {
            return Ok(Some(PastBoundApart::NextRound));
        }
    }
    // Why each round after the crossing left them over (the round that matched them
    // names them in no left_over).
    let outcomes: Vec<Option<String>> = sqlx::query_scalar(
        "SELECT s.left_over -> $2 ->> 'outcome'
           FROM rounds r
           JOIN round_snapshots s USING (round_id)
          WHERE r.queue = $1 AND r.started_at > $3 AND r.started_at <= $4
            AND s.left_over ? $2",
    )
    .bind(wait.queue)
    .bind(wait.player_id)
    .bind(crossed_at)
    .bind(wait.ended_at)
    .fetch_all(db)
    .await?;
    let no_valid_match = !outcomes.is_empty()
        && outcomes.iter().all(|o| {
            matches!(
                o.as_deref(),
                Some("no_host" | "no_valid_match" | "no_server")
            )
        });
    let no_server = outcomes.iter().any(|o| o.as_deref() == Some("no_server"));
    Ok(no_valid_match.then_some(if no_server {
        PastBoundApart::NoServer
    } else {
        PastBoundApart::NoValidMatch
    }))
}

/// Counters of `pg_stat_database` for our database, and the server's WAL.
#[derive(Debug, Clone, Copy)]
struct DbLoad {
    commits: i64,
    rollbacks: i64,
    inserted: i64,
    updated: i64,
    deleted: i64,
    returned: i64,
    blocks_read: i64,
    blocks_hit: i64,
    wal_bytes: Option<f64>,
}

impl DbLoad {
    async fn read(db: &PgPool) -> Result<DbLoad, db::DbError> {
        let (commits, rollbacks, inserted, updated, deleted, returned, blocks_read, blocks_hit) =
            sqlx::query_as::<_, (i64, i64, i64, i64, i64, i64, i64, i64)>(
                "SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted,
                        tup_returned, blks_read, blks_hit
                   FROM pg_stat_database WHERE datname = current_database()",
            )
            .fetch_one(db)
            .await?;
        // pg_stat_wal is PostgreSQL 14+ and counts the whole server.
        let wal_bytes = sqlx::query_scalar::<_, f64>("SELECT wal_bytes::float8 FROM pg_stat_wal")
            .fetch_one(db)
            .await
            .ok();
        Ok(DbLoad {
            commits,
            rollbacks,
            inserted,
            updated,
            deleted,
            returned,
            blocks_read,
            blocks_hit,
            wal_bytes,
        })
    }

    fn since(&self, before: &DbLoad, over: Duration) -> Vec<(String, String)> {
        let secs = over.as_secs_f64().max(1e-9);
        let rate = |a: i64, b: i64| format!("{:.0} /s", (a - b) as f64 / secs);
        let mut rows = vec![
            (
                "database: commits (rollbacks)".into(),
                format!(
                    "{} ({})",
                    rate(self.commits, before.commits),
                    rate(self.rollbacks, before.rollbacks)
                ),
            ),
            (
                "database: rows inserted / updated / deleted".into(),
                format!(
                    "{} / {} / {}",
                    rate(self.inserted, before.inserted),
                    rate(self.updated, before.updated),
                    rate(self.deleted, before.deleted)
                ),
            ),
            (
                "database: rows read".into(),
                rate(self.returned, before.returned),
            ),
            (
                "database: blocks read from disk / from cache".into(),
                format!(
                    "{} / {}",
                    rate(self.blocks_read, before.blocks_read),
                    rate(self.blocks_hit, before.blocks_hit)
                ),
            ),
        ];
        if let (Some(a), Some(b)) = (self.wal_bytes, before.wal_bytes) {
            rows.push((
                "WAL written (whole server)".into(),
                format!("{:.2} MB/s", (a - b) / secs / 1e6),
            ));
        }
        rows
    }
}

/// CPU seconds of the backends connected to our database now (None: their processes are
/// not readable here, e.g. the server runs on another host).
async fn backend_cpu_secs(db: &PgPool) -> Result<Option<f64>, db::DbError> {
    let pids: Vec<i32> =
        sqlx::query_scalar("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
            .fetch_all(db)
            .await?;
    let cpu: Vec<f64> = pids
        .into_iter()
        .filter_map(|pid| u32::try_from(pid).ok().and_then(process_cpu_secs))
        .collect();
    Ok((!cpu.is_empty()).then(|| cpu.iter().sum()))
}

/// User + system CPU seconds of a process, from /proc (Linux; USER_HZ is 100).
fn process_cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the fields after its ')' are fixed.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_cpu_time_is_readable() {
        let burn: u64 = (0..2_000_000u64).map(|x| x ^ (x >> 3)).sum();
        assert!(burn > 0);
        assert!(process_cpu_secs(std::process::id()).is_some_and(|s| s >= 0.0));
    }
}
