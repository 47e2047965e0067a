//! `matchmaker-lab simulate`: a realistic load of players queueing into a matchmaker's
//! database (see `sim::simulator`), for demos, load tests and tuning. Works against any
//! database with the schema (`matchmaker migrate`); a daemon must run for matches. It
//! uses only the client functions and views, so it runs as a `matchmaker_client` login:
//! the queue's format comes from `queue_catalog`, and the schema version is checked
//! only when the login may read it.
//!
//! With `--servers-per-region`, a fleet of simulated game servers (`sim::game_servers`)
//! runs beside the players: the queue must be a dedicated-server queue that requires
//! servers in the daemon's config, and the login also a member of `matchmaker_server`
//! (the private server's superuser is). The report then adds what the fleet lived
//! through and, when the login reads `matches` and `rounds`, what the rounds made of it.

use std::future::Future;
use std::time::Duration;

use anyhow::Context;
use chrono::{TimeZone, Utc};
use tokio::sync::watch;

use crate::sim::game_servers::{FleetOptions, FleetOutcome, FleetSpec, ServerFigures, run_fleet};
use crate::sim::population::{Population, PopulationSpec};
use crate::sim::simulator::{
    MeetSpec, SimError, SimProgress, SimReport, SimulatorOptions, run_simulator,
};
use matchmaker::db;
use matchmaker::ops::shell::{self, Signals};
use matchmaker::ops::{self, open_database, require_schema};

#[derive(Debug, Clone)]
pub struct SimulateOptions {
    /// The database (default: the private PostgreSQL of a local `matchmaker run`).
    pub database: ops::Database,
    /// Instead of simulating against a database, write one generated pool as JSON (the
    /// input of `matchmaker optimize --pool`) to this file and exit. Uses --players,
    /// --start-hour (default 20), --seed, --party-share, --max-party-size, --roles,
    /// --side-share.
    pub write_pool: Option<std::path::PathBuf>,
    /// Players in the pool written by --write-pool.
    pub players: usize,
    /// How long to run (wall clock), e.g. `90s`, `5m`. At the end the players still
    /// queued are cancelled.
    pub duration: Duration,
    pub load: LoadOptions,
    /// Simulated game servers beside the players (none by default): see
    /// `sim::game_servers`. The queue must require servers in the daemon's config.
    pub fleet: FleetOptions,
}

/// What a run of `simulate` did: the players' report and, with a fleet, the servers'.
#[derive(Debug, Clone)]
pub struct SimulateReport {
    pub players: SimReport,
    pub fleet: Option<FleetOutcome>,
}

impl std::fmt::Display for SimulateReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.players)?;
        if let Some(fleet) = &self.fleet {
            write!(f, "\n{fleet}")?;
        }
        Ok(())
    }
}

/// The load options, shared with `matchmaker-lab demo`.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Queue to enqueue into.
    pub queue: String,
    /// New players per second at the busiest time of day (players coming back from a
    /// match come on top). Default: 2 (simulate), 5 (demo).
    pub rate: Option<f64>,
    /// Size of the player base (distinct players).
    pub population: usize,
    pub seed: u64,
    /// Simulated seconds per wall-clock second (time of day and match durations).
    /// Default: 1 (simulate), 30 (demo: a 10-minute match lasts 20 s, so players come
    /// back and meet again).
    pub speedup: Option<f64>,
    /// Simulated UTC hour at the start (0-23); default: the current time.
    pub start_hour: Option<u32>,
    /// Mean simulated match duration.
    pub match_duration: Duration,
    /// Share of players queueing in parties of 2-3.
    pub party_share: f64,
    /// Largest party (use the team size for 1v1 / 2v2 queues).
    pub max_party_size: usize,
    /// Share of groups that cancel when not matched within 5-90 s.
    pub cancel_share: f64,
    /// Share of groups that queue again after their match.
    pub requeue_share: f64,
    /// Roles of a role queue, comma-separated (each player accepts some of them).
    pub roles: Vec<String>,
    /// Share of players with a side preference.
    pub side_share: f64,
    /// Player id prefix (default `sim<seed>-`).
    pub id_prefix: Option<String>,
    /// How long to wait at the start for a daemon to publish the queue (enqueue() refuses
    /// a queue no daemon serves).
    pub publish_timeout: Duration,
    /// Attributes (two builds, platforms with crossplay opt-outs, languages) and avoids
    /// the players send; the report checks every match against them.
    pub meet: MeetSpec,
}

/// Defaults of the options that differ between `simulate` and `demo`.
#[derive(Debug, Clone, Copy)]
pub struct LoadDefaults {
    pub rate: f64,
    pub speedup: f64,
}

impl LoadDefaults {
    pub const SIMULATE: LoadDefaults = LoadDefaults {
        rate: 2.0,
        speedup: 1.0,
    };
    pub const DEMO: LoadDefaults = LoadDefaults {
        rate: 5.0,
        speedup: 30.0,
    };
}

impl LoadOptions {
    /// The simulator options for a run of `duration`.
    pub fn options(&self, duration: Duration, defaults: LoadDefaults) -> SimulatorOptions {
        let start = self.start_hour.map(|hour| {
            let today = Utc::now().date_naive();
            Utc.from_utc_datetime(&today.and_hms_opt(hour, 0, 0).expect("hour < 24"))
        });
        SimulatorOptions {
            queue: self.queue.clone(),
            rate: self.rate.unwrap_or(defaults.rate),
            duration,
            population: self.population,
            seed: self.seed,
            speedup: self.speedup.unwrap_or(defaults.speedup),
            start,
            match_duration: self.match_duration,
            cancel_share: self.cancel_share,
            patience: SimulatorOptions::default().patience,
            requeue_share: self.requeue_share,
            spec: PopulationSpec {
                party_share: self.party_share,
                max_party_size: self.max_party_size,
                roles: self.roles.clone(),
                side_share: self.side_share,
                ..PopulationSpec::default()
            },
            id_prefix: self.id_prefix.clone(),
            publish_timeout: self.publish_timeout,
            meet: self.meet.clone(),
        }
    }
}

pub fn run(args: SimulateOptions) -> anyhow::Result<()> {
    if let Some(path) = &args.write_pool {
        return write_pool(&args, path);
    }
    // The simulator logs the wait for its queue and the first refused enqueue.
    ops::init_logging(false);
    // A stop signal ends the load as --duration does: the players still queued are
    // cancelled first.
    let report = shell::run(Signals::All, async |stop| {
        simulate(&args, async move {
            stop.wait().await;
        })
        .await
    })?;
    println!("{report}");
    Ok(())
}

/// One generated pool as JSON, for `matchmaker optimize` and benchmarks.
fn write_pool(args: &SimulateOptions, path: &std::path::Path) -> anyhow::Result<()> {
    let load = &args.load;
    let spec = PopulationSpec {
        players: args.players,
        hour_utc: load.start_hour.unwrap_or(20),
        queue: Some(load.queue.clone()),
        ..load.options(args.duration, LoadDefaults::SIMULATE).spec
    };
    let pool = Population::realistic().generate_pool(&spec, load.seed);
    let json = serde_json::to_string_pretty(&pool)?;
    std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
    eprintln!(
        "wrote a pool of {} players ({} in parties) to {}",
        pool.players.len(),
        pool.players.iter().filter(|p| p.party.is_some()).count(),
        path.display()
    );
    Ok(())
}

/// Runs the simulated players (and the fleet, if any) against the database until
/// `args.duration` has passed or `shutdown` resolves, printing a line of counters every
/// 5 s; returns the report.
pub async fn simulate(
    args: &SimulateOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<SimulateReport> {
    let (pool, server) = open_database(&args.database).await?;
    let outcome = simulate_on(&pool, args, shutdown).await;
    pool.close().await;
    if let Some(server) = server {
        server.stop().await?;
    }
    outcome
}

async fn simulate_on(
    pool: &sqlx::PgPool,
    args: &SimulateOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<SimulateReport> {
    // A client login may not read sqlx's table: the simulator's own check (the views and
    // functions it calls exist) is what it can ask.
    let access = db::access::read_access(pool, &["_sqlx_migrations"]).await?;
    if access.unreadable.is_empty() {
        require_schema(pool).await?;
    }
    let population = Population::realistic();
    let options = args.load.options(args.duration, LoadDefaults::SIMULATE);
    eprintln!(
        "simulating {} players at {} new/s into queue {:?} for {} (Ctrl-C stops)",
        options.population,
        options.rate,
        options.queue,
        humantime::format_duration(options.duration)
    );
    eprintln!(
        "simulated time of day from {} at {}x the wall clock (it sets the arrival rate; \
         rounds and waits are wall-clock)",
        options.start.unwrap_or_else(Utc::now).format("%H:%M UTC"),
        options.speedup
    );
    let (tx, mut rx) = watch::channel(SimProgress::default());
    let printer = tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(5));
        every.tick().await;
        loop {
            every.tick().await;
            if rx.has_changed().is_err() {
                break;
            }
            eprintln!("{}", progress_line(&rx.borrow_and_update()));
        }
    });
    let fleet = prepare_fleet(pool, args, &options).await?;
    if let Some(spec) = &fleet {
        eprintln!(
            "game servers {} in queue {:?}'s regions, matches of {} +-20%, crash rate {} per \
             match, announcing every {}",
            spec.servers_line(),
            options.queue,
            humantime::format_duration(spec.match_length),
            spec.crash_rate,
            humantime::format_duration(spec.announce_every())
        );
    }
    let since: chrono::DateTime<Utc> = sqlx::query_scalar("SELECT now()").fetch_one(pool).await?;
    // The fleet stops when the players do; a fleet that fails stops the players.
    let (stop_tx, mut stop_rx) = watch::channel(false);
    let (failed_tx, mut failed_rx) = watch::channel(false);
    let players = async {
        let shutdown = async move {
            tokio::select! {
                _ = shutdown => {}
                _ = failed_rx.wait_for(|failed| *failed) => {}
            }
        };
        let report = run_simulator(pool, &population, &options, Some(tx), shutdown).await;
        let _ = stop_tx.send(true);
        report
    };
    let servers = async {
        let spec = fleet.as_ref()?;
        let stop = async move {
            let _ = stop_rx.wait_for(|stop| *stop).await;
        };
        let report = run_fleet(pool, spec, stop).await;
        if report.is_err() {
            let _ = failed_tx.send(true);
        }
        Some(report)
    };
    let (report, fleet_report) = tokio::join!(players, servers);
    printer.abort();
    let report = report?;
    let fleet = match (fleet, fleet_report) {
        (Some(spec), Some(fleet_report)) => {
            let fleet_report = fleet_report?;
            let access = db::access::read_access(
                pool,
                &[
                    "matches",
                    "rounds",
                    "round_snapshots",
                    "queue_entries",
                    "queues",
                ],
            )
            .await?;
            let figures = if access.unreadable.is_empty() {
                Some(ServerFigures::read(pool, std::slice::from_ref(&options.queue), since).await?)
            } else {
                None
            };
            Some(FleetOutcome {
                spec,
                report: fleet_report,
                figures,
            })
        }
        _ => None,
    };
    Ok(SimulateReport {
        players: report,
        fleet,
    })
}

/// The fleet of this run, if one was asked for: in the queue's regions unless others
/// were named, matches as long as the players' (their mean match duration at the
/// speedup), announcing every third of the queue's server ttl. Waits for the daemon to
/// publish the queue (`server_ready` refuses a region no queue lists), and refuses a
/// queue that does not require servers when the login can tell.
async fn prepare_fleet(
    pool: &sqlx::PgPool,
    args: &SimulateOptions,
    options: &SimulatorOptions,
) -> anyhow::Result<Option<FleetSpec>> {
    let match_length = options.match_duration.div_f64(options.speedup);
    let prefix = format!(
        "{}srv-",
        options
            .id_prefix
            .clone()
            .unwrap_or_else(|| format!("sim{}-", options.seed))
    );
    if !args.fleet.enabled() {
        args.fleet
            .spec(&[], match_length, args.fleet.ttl, options.seed, &prefix)?;
        return Ok(None);
    }
    let queue = &options.queue;
    let started = std::time::Instant::now();
    let (network, regions) = loop {
        let row: Option<(String, Vec<String>)> =
            sqlx::query_as("SELECT network, regions FROM queue_catalog WHERE queue = $1")
                .bind(queue)
                .fetch_optional(pool)
                .await?;
        if let Some(row) = row {
            break row;
        }
        if started.elapsed() >= options.publish_timeout {
            return Err(SimError::QueueNotPublished {
                queue: queue.clone(),
                waited: options.publish_timeout,
                published: sqlx::query_scalar("SELECT queue FROM queue_catalog ORDER BY queue")
                    .fetch_all(pool)
                    .await?,
            }
            .into());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    anyhow::ensure!(
        network == "dedicated",
        "queue {queue:?} is {network}: game servers host only a dedicated-server queue's \
         matches (network = \"dedicated\" and [queues.{queue}.servers] required = true)"
    );
    let access = db::access::read_access(pool, &["queues"]).await?;
    let ttl = if access.unreadable.is_empty() {
        let ttl: Option<f64> = sqlx::query_scalar(
            "SELECT extract(epoch FROM server_ttl)::float8 FROM queues WHERE queue = $1",
        )
        .bind(queue)
        .fetch_one(pool)
        .await?;
        let Some(ttl) = ttl else {
            anyhow::bail!(
                "queue {queue:?} does not require game servers: the fleet would change \
                 nothing. Give the daemon's config [queues.{queue}.servers] required = true"
            );
        };
        Duration::from_secs_f64(ttl)
    } else {
        tracing::warn!(
            queue = %queue,
            "this login cannot read the queue's server ttl: the servers announce every {} \
             (--server-ttl / 3)",
            humantime::format_duration(args.fleet.ttl / 3)
        );
        args.fleet.ttl
    };
    Ok(args
        .fleet
        .spec(&regions, match_length, ttl, options.seed, &prefix)?)
}

/// The players a queue can use: parties no larger than a team, the queue's roles unless
/// roles were given explicitly.
pub fn fit_to_queue(options: &mut SimulatorOptions, model: &matchmaker_optimizer::QueueModel) {
    options.spec.max_party_size = options.spec.max_party_size.min(model.team_size);
    if options.spec.roles.is_empty() {
        options.spec.roles = model.roles.clone();
    }
}

/// One line of live counters.
pub fn progress_line(p: &SimProgress) -> String {
    if let Some(queue) = &p.waiting_for_queue {
        return format!(
            "waiting for the daemon to publish queue {queue} (enqueue() refuses unknown queues)"
        );
    }
    let time = p
        .sim_time
        .map(|t| t.format("%H:%M UTC").to_string())
        .unwrap_or_default();
    let mut line = format!(
        "sim {time}: {} queued, {} playing; enqueued {}, matched {}, cancelled {}",
        p.queued_players,
        p.playing_players,
        p.report.enqueued,
        p.report.matched,
        p.report.cancelled
    );
    for (what, n) in [
        ("expired", p.report.expired),
        ("rejected", p.report.rejected),
        ("refused", p.report.refused),
    ] {
        if n > 0 {
            line.push_str(&format!(", {what} {n}"));
        }
    }
    line
}
