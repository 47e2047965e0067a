//! `matchmaker-lab`: the lab's commands (demo, simulated load, fault injection, the peak
//! evening, benchmarks), apart from the `matchmaker` binary operators deploy. Each
//! subcommand's arguments convert to the plain options of its `matchmaker_lab` module.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use matchmaker::cli::run::DatabaseArgs;
use matchmaker::ops;
use matchmaker_lab as lab;

#[derive(Parser)]
#[command(
    name = "matchmaker-lab",
    version,
    about = "The matchmaker's lab: demo, simulated load, fault injection, benchmarks"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The daemon and simulated players together, live: a private PostgreSQL unless
    /// DATABASE_URL is set.
    Demo(DemoArgs),
    /// Generate realistic player load (enqueue, parties, cancels, re-queue) into a database,
    /// through the client functions only: runs as a matchmaker_client login.
    Simulate(SimulateArgs),
    /// Fault injection: daemon replicas killed, PostgreSQL restarted, a clock skewed and
    /// cancel storms under client load; then an audit of the contract's invariants.
    Soak(SoakArgs),
    /// A database failover under load on a real pg_auto_failover formation (monitor,
    /// primary, synchronous standby): the primary's machine lost mid-round, then a
    /// switchover; timed, then audited.
    Failover(FailoverArgs),
    /// The database failures other than a lost primary, under load: on a real
    /// pg_auto_failover formation the monitor lost, replay paused on the standby, both
    /// data nodes lost and started again; then replicas cut off from the database by a
    /// network partition; timed, then audited.
    FailureModes(FailureModesArgs),
    /// A measured peak evening: replicas, regions x modes of queues, a player base
    /// arriving by time of day; a table of lateness, waits, countdown error and load.
    Peak(PeakArgs),
    /// Run every strategy on fixed seeded pools and print a side-by-side table.
    Bench(BenchArgs),
    /// Measure the database work of rounds and enqueue throughput under load.
    BenchDb(BenchDbArgs),
    /// Big formats (16v16, 32v32, 25 squads of 4): the lobby search against the
    /// first-come matchmaker of the same format, on the same pools.
    BenchLobby(BenchLobbyArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => lab::demo::run(args.into()),
        Command::Simulate(args) => lab::simulate::run(args.into()),
        Command::Soak(args) => lab::soak::run(args.into()),
        Command::Failover(args) => lab::failover::run(args.into()),
        Command::FailureModes(args) => lab::failure_modes::run(args.into()),
        Command::Peak(args) => lab::peak::run(args.into()),
        Command::Bench(args) => lab::bench::run(args.into()),
        Command::BenchDb(args) => lab::bench_db::run(args.into()),
        Command::BenchLobby(args) => lab::bench_lobby::run(args.into()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // Ended by a stop signal: the shell's status (130 for Ctrl-C), nothing to explain.
        Err(err) if let Some(&stopped) = err.downcast_ref::<ops::shell::Stopped>() => {
            std::process::ExitCode::from(stopped.exit_code())
        }
        Err(err) => {
            eprintln!("error: {}", ops::error_report(&err));
            std::process::ExitCode::FAILURE
        }
    }
}

#[derive(Debug, Args)]
pub struct SoakArgs {
    /// Inject faults until the replicas have committed this many matchmaking rounds (all
    /// queues; one fault every one to five seconds).
    #[arg(long, default_value_t = 100)]
    pub rounds: i64,
    /// Seed of the fault schedule and the client load.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Healthy replicas; one more runs with its clock --clock-skew ahead.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=8))]
    pub replicas: u64,
    /// How far the skewed replica's clock runs ahead ("20s"; "-20s": behind).
    #[arg(long, default_value = "20s", value_parser = matchmaker::cli::run::parse_skew, allow_hyphen_values = true)]
    pub clock_skew: chrono::Duration,
    /// A PostgreSQL server to soak on: a scratch database is created there (and dropped
    /// after a clean run). The server is not ours, so it is not restarted. Without it, a
    /// private server is started from the local binaries.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Keep the replicas' logs (and the config) in this directory. Default: a temporary
    /// directory, removed after a clean run.
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    /// Give up (non-zero exit) if the rounds are not reached in this time.
    #[arg(long, default_value = "20m", value_parser = humantime::parse_duration)]
    pub max_time: Duration,
}

impl From<SoakArgs> for lab::soak::SoakOptions {
    fn from(args: SoakArgs) -> Self {
        lab::soak::SoakOptions {
            rounds: args.rounds,
            seed: args.seed,
            replicas: args.replicas,
            clock_skew: args.clock_skew,
            database_url: args.database_url,
            log_dir: args.log_dir,
            max_time: args.max_time,
        }
    }
}

#[derive(Debug, Args)]
pub struct FailoverArgs {
    /// Client load before the primary is lost.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub warmup: Duration,
    /// Load after the loss (and after the switchover) before the next step.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub settle: Duration,
    /// Daemon replicas.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=8))]
    pub replicas: u64,
    /// Concurrent clients, each keeping a dozen players waiting.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Seed of the clients' answers.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The monitor's pgautofailover.node_considered_unhealthy_timeout: a node silent this
    /// long is unhealthy.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub unhealthy_timeout: Duration,
    /// The monitor's pgautofailover.primary_demote_timeout: the promoted standby takes
    /// writes after this long (longer than --partition-timeout).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub demote_timeout: Duration,
    /// The keepers' timeout.network_partition_timeout: a primary that reaches neither
    /// the monitor nor its standby this long demotes itself.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub partition_timeout: Duration,
    /// Keep the formation's data and logs, the replicas' logs and the config in this
    /// directory (the `postgres` user must be able to enter it when run as root).
    /// Default: a temporary directory, removed after a clean run.
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
}

impl From<FailoverArgs> for lab::failover::FailoverOptions {
    fn from(args: FailoverArgs) -> Self {
        lab::failover::FailoverOptions {
            warmup: args.warmup,
            settle: args.settle,
            replicas: args.replicas,
            clients: args.clients,
            seed: args.seed,
            timeouts: lab::formation::Timeouts {
                unhealthy: args.unhealthy_timeout,
                demote: args.demote_timeout,
                network_partition: args.partition_timeout,
            },
            log_dir: args.log_dir,
        }
    }
}

#[derive(Debug, Args)]
pub struct FailureModesArgs {
    /// Client load before the monitor is lost.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub warmup: Duration,
    /// How long the monitor stays lost (its keeper and postmaster SIGKILLed).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub monitor_outage: Duration,
    /// How long replay stays paused on the standby.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub standby_pause: Duration,
    /// How long the standby's WAL receiver stays stopped (SIGSTOP): a standby that
    /// flushes nothing more.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub receiver_freeze: Duration,
    /// How long the standby's whole machine stays stopped (SIGSTOP): a standby that
    /// answers nothing.
    #[arg(long, default_value = "40s", value_parser = humantime::parse_duration)]
    pub machine_freeze: Duration,
    /// The WAL receiver is stopped a second time, as long as the first, and this long
    /// after the stop the standby is dropped from the synchronous quorum (`pg_autoctl
    /// set node replication-quorum false`, the way out); it is put back after the thaw.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub way_out_after: Duration,
    /// The primary is lost for this long while its standby is out of the quorum and
    /// behind (stopped until the monitor drops it, then `--ballast` MB written), then
    /// started again.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub behind_outage: Duration,
    /// MB of WAL the primary writes while its standby is out of the quorum, before it is
    /// lost (pg_auto_failover promotes no standby more than 16 MB behind).
    #[arg(long, default_value_t = 32)]
    pub ballast: u32,
    /// How long both data nodes stay lost before both are started again.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub nodes_outage: Duration,
    /// Load after each failure before the next one.
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    pub settle: Duration,
    /// Daemon replicas.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=8))]
    pub replicas: u64,
    /// Concurrent clients, each keeping a dozen players waiting.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Seed of the clients' answers.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How long one replica's route to the database stays cut (the replica leading a
    /// queue, in a network namespace of its own; needs root and iproute2).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub partition: Duration,
    /// How long every replica's route stays cut, after that.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub partition_all: Duration,
    /// Run only the formation's failures (monitor, standby, both nodes) or only the
    /// partition.
    #[arg(long, value_enum)]
    pub only: Option<FailureKind>,
    /// Keep the formation's data and logs, the replicas' logs and the config in this
    /// directory, the partition's in its `partition` directory (the `postgres` user must
    /// be able to enter it when run as root). Default: a temporary directory, removed
    /// after a clean run.
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FailureKind {
    Formation,
    Partition,
}

impl From<FailureModesArgs> for lab::failure_modes::FailureModesOptions {
    fn from(args: FailureModesArgs) -> Self {
        lab::failure_modes::FailureModesOptions {
            warmup: args.warmup,
            monitor_outage: args.monitor_outage,
            standby_pause: args.standby_pause,
            receiver_freeze: args.receiver_freeze,
            machine_freeze: args.machine_freeze,
            way_out_after: args.way_out_after,
            behind_outage: args.behind_outage,
            ballast_mb: args.ballast,
            nodes_outage: args.nodes_outage,
            settle: args.settle,
            replicas: args.replicas,
            clients: args.clients,
            seed: args.seed,
            cut: args.partition,
            cut_all: args.partition_all,
            only: args.only.map(|kind| match kind {
                FailureKind::Formation => lab::failure_modes::Failures::Formation,
                FailureKind::Partition => lab::failure_modes::Failures::Partition,
            }),
            log_dir: args.log_dir,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct PeakArgs {
    /// Wall-clock length of the load (the replicas start before it, the audit follows).
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Simulated seconds per wall-clock second for the time of day and match lengths
    /// (rounds, waits and max_wait stay in wall-clock time): 12 plays two evening hours
    /// in ten minutes, and a 10-minute match lasts 50 s.
    #[arg(long, default_value_t = 12.0)]
    pub speedup: f64,
    /// Simulated UTC hour at the start (0-23): 19 is the European evening.
    #[arg(long, default_value_t = 19, value_parser = clap::value_parser!(u32).range(0..24))]
    pub start_hour: u32,
    /// Distinct players, split over the regions by where players live.
    #[arg(long, default_value_t = 30_000)]
    pub players: usize,
    /// New players per second, all queues, if every region were at its busiest hour.
    #[arg(long, default_value_t = 60.0)]
    pub rate: f64,
    /// Datacenter regions (largest first); two queues each.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=10))]
    pub regions: u64,
    /// Daemon replicas.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=8))]
    pub replicas: u64,
    /// Solver budget of every round.
    #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
    pub budget: Duration,
    /// Solver cores of each replica (`[daemon] solver_threads`).
    #[arg(long, default_value_t = 1)]
    pub solver_threads: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The server to run on: a scratch database is created there. Without it, a private
    /// PostgreSQL is started from the local binaries.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Keep the replicas' logs and the config here (default: a temporary directory,
    /// removed after a run that met its targets).
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    /// Game servers for the 5v5 queues (in the evening's regions unless
    /// --server-regions names others); with them the 5v5 queues require servers.
    #[command(flatten)]
    pub fleet: FleetArgs,
}

impl From<PeakArgs> for lab::peak::PeakRun {
    fn from(args: PeakArgs) -> Self {
        lab::peak::PeakRun {
            duration: args.duration,
            speedup: args.speedup,
            start_hour: args.start_hour,
            players: args.players,
            rate: args.rate,
            regions: args.regions,
            replicas: args.replicas,
            budget: args.budget,
            solver_threads: args.solver_threads,
            seed: args.seed,
            database_url: args.database_url,
            log_dir: args.log_dir,
            fleet: args.fleet.into(),
        }
    }
}

/// Simulated game servers, shared by `simulate` and `peak`.
#[derive(Debug, Clone, clap::Args)]
pub struct FleetArgs {
    /// Run a fleet of simulated game servers, this many per region (0: none). They
    /// announce themselves (server_ready) every ttl / 3, host the matches they are
    /// allocated, announce the end, and sometimes crash. `peak` then gives its 5v5
    /// queues [queues.X.servers] required = true; `simulate`'s queue must require servers
    /// in the daemon's config.
    #[arg(long, default_value_t = 0)]
    pub servers_per_region: usize,
    /// The fleet's regions, comma-separated. Default: simulate: the queue's regions;
    /// peak: the evening's regions.
    #[arg(long, value_delimiter = ',')]
    pub server_regions: Vec<String>,
    /// A region with another number of servers, REGION=K (repeatable), e.g. a short
    /// region: --short-region us-east=2.
    #[arg(long, value_parser = lab::sim::game_servers::parse_short_region)]
    pub short_region: Vec<(String, usize)>,
    /// Wall-clock length of a match on a server (each lasts 80-120% of it). Default: the
    /// players' mean match, its simulated duration divided by the speedup.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub match_length: Option<Duration>,
    /// Chance per match that its server crashes during it: it goes silent, and comes
    /// back one to two ttls later under a new id.
    #[arg(long, default_value_t = 0.02)]
    pub server_crash_rate: f64,
    /// The servers' ttl: peak writes it into [queues.X.servers]; simulate reads its
    /// queue's and uses this only when its login cannot.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub server_ttl: Duration,
}

impl From<FleetArgs> for lab::sim::game_servers::FleetOptions {
    fn from(args: FleetArgs) -> Self {
        lab::sim::game_servers::FleetOptions {
            servers_per_region: args.servers_per_region,
            regions: args.server_regions,
            short_regions: args.short_region,
            match_length: args.match_length,
            crash_rate: args.server_crash_rate,
            ttl: args.server_ttl,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Players per pool.
    #[arg(long, default_value_t = 300)]
    pub players: usize,
    /// Number of seeded pools (seeds 1..=N); figures are means over the pools.
    #[arg(long, default_value_t = 3)]
    pub pools: u64,
    /// Seed of the first pool (pools are seeds S..S+N-1); with `--write-pool`, picks
    /// which pool is written.
    #[arg(long, default_value_t = 1)]
    pub pool_seed: u64,
    /// Budgets of the table, comma separated (humantime).
    #[arg(long, default_value = "100ms,1s", value_delimiter = ',', value_parser = humantime::parse_duration)]
    pub budgets: Vec<Duration>,
    /// Budget of the awesomenauts baseline in the target check.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub baseline: Duration,
    /// The long reference run is this many times the longest table budget.
    #[arg(long, default_value_t = 50)]
    pub long_factor: u32,
    /// Solver seeds of the short-against-long gap check: with K > 1, the default
    /// strategy at the longest table budget and the long reference run are each solved
    /// with seeds 7 to 7+K-1 on every pool, and the check also prints the gap of the means
    /// (one run's gap moves with the seed by about as much as the target allows).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub seeds: u64,
    #[arg(long)]
    pub threads: Option<usize>,
    /// Only print the table.
    #[arg(long)]
    pub skip_targets: bool,
    /// Also print the large-pool quality curve: 10,000 players 5v5 on the built-in
    /// `casual_5v5` queue (dedicated servers; pools as `simulate --write-pool --players
    /// 10000 --queue casual_5v5 --max-party-size 5 --seed S` writes them), the default
    /// strategy at each `--large-budgets` and at `--large-reference`, on `--large-seeds`
    /// pools, with the anytime checks (a longer budget never scores worse).
    #[arg(long)]
    pub large: bool,
    /// Budgets of the large-pool curve.
    #[arg(long, default_value = "100ms,1s,2s,5s,10s,30s", value_delimiter = ',', value_parser = humantime::parse_duration)]
    pub large_budgets: Vec<Duration>,
    /// The large-pool reference run.
    #[arg(long, default_value = "100s", value_parser = humantime::parse_duration)]
    pub large_reference: Duration,
    /// Large pools (seeds 1..=N).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub large_seeds: u64,
    /// With --large: give the large pools who-may-meet-whom rules (one game build under
    /// filters.same, crossplay with opt-outs, avoids) and print each run's moves per
    /// second.
    #[arg(long)]
    pub large_meet: bool,
    /// Write the first pool (seed `--pool-seed`) as JSON to this file and exit (for
    /// `optimize`).
    #[arg(long)]
    pub write_pool: Option<std::path::PathBuf>,
}

impl From<BenchArgs> for lab::bench::BenchOptions {
    fn from(args: BenchArgs) -> Self {
        lab::bench::BenchOptions {
            players: args.players,
            pools: args.pools,
            pool_seed: args.pool_seed,
            budgets: args.budgets,
            baseline: args.baseline,
            long_factor: args.long_factor,
            seeds: args.seeds,
            threads: args.threads,
            skip_targets: args.skip_targets,
            large: args.large,
            large_budgets: args.large_budgets,
            large_reference: args.large_reference,
            large_seeds: args.large_seeds,
            large_meet: args.large_meet,
            write_pool: args.write_pool,
        }
    }
}

#[derive(Debug, Args)]
pub struct BenchDbArgs {
    /// PostgreSQL server; a scratch database is created on it and dropped afterwards.
    /// Without it, a temporary private PostgreSQL is started.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Pool sizes of the round measurement.
    #[arg(long, value_delimiter = ',', default_value = "300,10000")]
    pub sizes: Vec<usize>,
    /// Repetitions per pool size.
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Concurrent enqueue connections.
    #[arg(long, default_value_t = 8)]
    pub connections: usize,
    /// Duration of the enqueue measurement (both paths together: each gets half; at
    /// least 1s, two slices of 500 ms).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub enqueue_for: Duration,
    /// Enqueue with `SET synchronous_commit = off` (a client's choice: the commit does
    /// not wait for the WAL flush; a crash may lose the last enqueues, which the client
    /// sees as "not queued" and repeats). Shows what the disk's flush costs.
    #[arg(long)]
    pub async_commit: bool,
    /// Round size of the rounds running during the enqueue measurement.
    #[arg(long, default_value_t = 10_000)]
    pub load_round_size: usize,
    /// Also measure the rounds against a second scratch database holding this many
    /// `match_players` history rows (e.g. 10000000), filled by INSERT ... SELECT
    /// generate_series before measuring, side by side with the empty history.
    #[arg(long, default_value_t = 0)]
    pub history_rows: u64,
    /// Skip the enqueue measurement (the round measurement only).
    #[arg(long)]
    pub rounds_only: bool,
    /// Keep the history database under this name, and reuse it when it already holds
    /// `--history-rows` rows: a 10-million-row fill takes minutes, so comparing an index
    /// or a query before and after needs it once. It is migrated like any database.
    #[arg(long, requires = "history_rows")]
    pub keep_history: Option<String>,
}

impl From<BenchDbArgs> for lab::bench_db::BenchDbOptions {
    fn from(args: BenchDbArgs) -> Self {
        lab::bench_db::BenchDbOptions {
            database_url: args.database_url,
            sizes: args.sizes,
            repeat: args.repeat,
            connections: args.connections,
            enqueue_for: args.enqueue_for,
            async_commit: args.async_commit,
            load_round_size: args.load_round_size,
            history_rows: args.history_rows,
            rounds_only: args.rounds_only,
            keep_history: args.keep_history,
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// Use this PostgreSQL instead of starting a private one (the demo's rounds stay
    /// there for inspection).
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Stop after this long (wall clock), e.g. `2m`, `90s`.
    #[arg(long, default_value = "2m", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Config file to start from (default: the embedded config/matchmaker.toml). Every
    /// queue's schedule is replaced by a round every --round-every.
    #[arg(long, env = "MATCHMAKER_CONFIG")]
    pub config: Option<PathBuf>,
    /// Round interval of the demo (replaces each queue's schedule).
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub round_every: Duration,
    /// Simulated player load (defaults suit the demo: see `matchmaker-lab simulate --help`).
    #[command(flatten)]
    pub load: LoadArgs,
}

impl From<DemoArgs> for lab::demo::DemoOptions {
    fn from(args: DemoArgs) -> Self {
        lab::demo::DemoOptions {
            database_url: args.database_url,
            duration: args.duration,
            config: args.config,
            round_every: args.round_every,
            load: args.load.into(),
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct SimulateArgs {
    /// The database (default: the private PostgreSQL of a local `matchmaker run`).
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Instead of simulating against a database, write one generated pool as JSON (the
    /// input of `matchmaker optimize --pool`) to this file and exit. Uses --players,
    /// --start-hour (default 20), --seed, --party-share, --max-party-size, --roles,
    /// --side-share.
    #[arg(long, value_name = "FILE")]
    pub write_pool: Option<std::path::PathBuf>,
    /// Players in the pool written by --write-pool.
    #[arg(long, default_value_t = 300, requires = "write_pool")]
    pub players: usize,
    /// How long to run (wall clock), e.g. `90s`, `5m`; Ctrl-C stops earlier. At the end
    /// the players still queued are cancelled. The queue's party limit and roles come
    /// from queue_catalog (--roles overrides the roles).
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Game servers for the queue (which must require them in the daemon's config).
    #[command(flatten)]
    pub fleet: FleetArgs,
}

impl From<SimulateArgs> for lab::simulate::SimulateOptions {
    fn from(args: SimulateArgs) -> Self {
        lab::simulate::SimulateOptions {
            database: (&args.database).into(),
            write_pool: args.write_pool,
            players: args.players,
            duration: args.duration,
            load: args.load.into(),
            fleet: args.fleet.into(),
        }
    }
}

/// The load options, shared with `matchmaker-lab demo`.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadArgs {
    /// Queue to enqueue into.
    #[arg(long, default_value = "ranked_3v3")]
    pub queue: String,
    /// New players per second at the busiest time of day (players coming back from a
    /// match come on top). Default: 2 (simulate), 5 (demo).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Size of the player base (distinct players).
    #[arg(long, default_value_t = 3000)]
    pub population: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Simulated seconds per wall-clock second (time of day and match durations).
    /// Default: 1 (simulate), 30 (demo: a 10-minute match lasts 20 s, so players come
    /// back and meet again).
    #[arg(long)]
    pub speedup: Option<f64>,
    /// Simulated UTC hour at the start (0-23); default: the current time.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..24))]
    pub start_hour: Option<u32>,
    /// Mean simulated match duration.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub match_duration: Duration,
    /// Share of players queueing in parties of 2-3.
    #[arg(long, default_value_t = 0.3)]
    pub party_share: f64,
    /// Largest party (the queue's max_party_size caps it).
    #[arg(long, default_value_t = 3)]
    pub max_party_size: usize,
    /// Share of groups that cancel when not matched within 5-90 s.
    #[arg(long, default_value_t = 0.05)]
    pub cancel_share: f64,
    /// Share of groups that queue again after their match.
    #[arg(long, default_value_t = 0.75)]
    pub requeue_share: f64,
    /// Roles of a role queue, comma-separated (each player accepts some of them).
    #[arg(long, value_delimiter = ',')]
    pub roles: Vec<String>,
    /// Share of players with a side preference.
    #[arg(long, default_value_t = 0.0)]
    pub side_share: f64,
    /// Player id prefix (default `sim<seed>-`).
    #[arg(long)]
    pub id_prefix: Option<String>,
    /// How long to wait at the start for a daemon to publish the queue (enqueue() refuses
    /// a queue no daemon serves).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub publish_timeout: Duration,
    /// Send no attributes (build, platform, crossplay, language) and no avoids.
    #[arg(long)]
    pub no_attributes: bool,
    /// Share of groups on the older of two game builds (attribute `build`: 1.4, else 1.5).
    #[arg(long, default_value_t = 0.2)]
    pub old_build_share: f64,
    /// Share of console players who opt out of crossplay (`"crossplay": "off"`).
    #[arg(long, default_value_t = 0.3)]
    pub crossplay_off_share: f64,
    /// Share of players who avoid one of their opponents for an hour after a match.
    #[arg(long, default_value_t = 0.05)]
    pub avoid_share: f64,
}

impl From<LoadArgs> for lab::simulate::LoadOptions {
    fn from(args: LoadArgs) -> Self {
        lab::simulate::LoadOptions {
            queue: args.queue,
            rate: args.rate,
            population: args.population,
            seed: args.seed,
            speedup: args.speedup,
            start_hour: args.start_hour,
            match_duration: args.match_duration,
            party_share: args.party_share,
            max_party_size: args.max_party_size,
            cancel_share: args.cancel_share,
            requeue_share: args.requeue_share,
            roles: args.roles,
            side_share: args.side_share,
            id_prefix: args.id_prefix,
            publish_timeout: args.publish_timeout,
            meet: if args.no_attributes {
                lab::sim::simulator::MeetSpec::none()
            } else {
                lab::sim::simulator::MeetSpec {
                    attributes: true,
                    old_build_share: args.old_build_share,
                    crossplay_off_share: args.crossplay_off_share,
                    avoid_share: args.avoid_share,
                }
            },
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct BenchLobbyArgs {
    /// Players per pool.
    #[arg(long, default_value_t = 3000)]
    pub players: usize,
    /// Formats: NvN (two teams) or KxS (K squads of S).
    #[arg(long, value_delimiter = ',', default_value = "16v16,32v32,25x4")]
    pub formats: Vec<String>,
    /// The search's budget per round (the daemon's default round budget).
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub budget: Duration,
    /// Seeded pools per format (figures are means; the worst gap is the worst of all).
    #[arg(long, default_value_t = 1)]
    pub pools: u64,
    #[arg(long, default_value_t = 1)]
    pub pool_seed: u64,
    /// Solver threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
}

impl From<BenchLobbyArgs> for lab::bench_lobby::BenchLobbyOptions {
    fn from(a: BenchLobbyArgs) -> Self {
        lab::bench_lobby::BenchLobbyOptions {
            players: a.players,
            formats: a.formats,
            budget: a.budget,
            pools: a.pools,
            pool_seed: a.pool_seed,
            threads: a.threads,
        }
    }
}
