//! `matchmaker`: the command-line front end. Each subcommand lives in `src/cli/`.

use clap::{Parser, Subcommand};

use matchmaker::cli;

#[derive(Parser)]
#[command(
    name = "matchmaker",
    version,
    about = "Round-based matchmaker on PostgreSQL"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Solve one round from a JSON pool file and print the matches as JSON.
    Optimize(cli::optimize::OptimizeArgs),
    /// Run every strategy on fixed seeded pools and print a side-by-side table.
    Bench(cli::bench::BenchArgs),
    /// Run the round daemon: matchmaking rounds for every configured queue.
    Run(cli::run::RunArgs),
    /// Apply the database migrations.
    Migrate(cli::migrate::MigrateArgs),
    /// Measure the database work of rounds and enqueue throughput under load.
    BenchDb(cli::bench_db::BenchDbArgs),
    /// Generate realistic player load (enqueue, parties, cancels, re-queue) into a database.
    Simulate(cli::simulate::SimulateArgs),
    /// Live view of the queues and recent rounds, read from the database.
    Status(cli::status::StatusArgs),
    /// The daemon and simulated players together, live: a private PostgreSQL unless
    /// DATABASE_URL is set.
    Demo(cli::demo::DemoArgs),
    /// Fault injection: daemon replicas killed, PostgreSQL restarted, a clock skewed and
    /// cancel storms under client load; then an audit of the contract's invariants.
    Soak(cli::soak::SoakArgs),
    /// A measured peak evening: replicas, regions x modes of queues, a player base
    /// arriving by time of day; a table of lateness, waits, countdown error and load.
    Peak(cli::peak::PeakArgs),
    /// Ask a running daemon's /readyz or /healthz; exit 0 only on a 2xx answer (the
    /// probe of container health checks and the systemd unit).
    Health(cli::health::HealthArgs),
    /// Re-solve a past round from its stored snapshot, side by side with what it did;
    /// what-if with --config / --set; a whole time range with --from / --to.
    Replay(cli::replay::ReplayArgs),
    /// A player's last rounds: matched, or left over and why.
    Explain(cli::explain::ExplainArgs),
    /// Delete the history past the retention horizon (what the daemon does on a timer);
    /// --dry-run prints what would go.
    Prune(cli::prune::PruneArgs),
    /// The rounds of a time window as one self-contained HTML page with plots.
    Report(cli::report::ReportArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Optimize(args) => cli::optimize::run(args),
        Command::Bench(args) => cli::bench::run(args),
        Command::Run(args) => cli::run::run(args),
        Command::Migrate(args) => cli::migrate::run(args),
        Command::BenchDb(args) => cli::bench_db::run(args),
        Command::Simulate(args) => cli::simulate::run(args),
        Command::Status(args) => cli::status::run(args),
        Command::Demo(args) => cli::demo::run(args),
        Command::Soak(args) => cli::soak::run(args),
        Command::Peak(args) => cli::peak::run(args),
        Command::Health(args) => cli::health::run(args),
        Command::Replay(args) => cli::replay::run(args),
        Command::Explain(args) => cli::explain::run(args),
        Command::Prune(args) => cli::prune::run(args),
        Command::Report(args) => cli::report::run(args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", cli::error_report(&err));
            std::process::ExitCode::FAILURE
        }
    }
}
