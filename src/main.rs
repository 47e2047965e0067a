//! `matchmaker`: the command-line front end operators deploy. Each subcommand lives in
//! `src/cli/`; the lab's commands are the `matchmaker-lab` binary.

use clap::{Parser, Subcommand};

use matchmaker::{cli, ops};

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

// The order of `--help`: the daemon, its schema, the operators' commands, the solver,
// the config check.
#[derive(Subcommand)]
enum Command {
    /// Run the round daemon: matchmaking rounds for every configured queue.
    Run(cli::run::RunArgs),
    /// Apply the database migrations.
    Migrate(cli::migrate::MigrateArgs),
    /// Live view of the queues and recent rounds, read from the database.
    Status(cli::status::StatusArgs),
    /// A player's last rounds: matched, or left over and why.
    Explain(cli::explain::ExplainArgs),
    /// Re-solve a past round from its stored snapshot, side by side with what it did;
    /// what-if with --config / --set; a whole time range with --from / --to.
    Replay(cli::replay::ReplayArgs),
    /// The rounds of a time window as one self-contained HTML page with plots.
    Report(cli::report::ReportArgs),
    /// Delete the history past the retention horizon (what the daemon does on a timer);
    /// --dry-run prints what would go.
    Prune(cli::prune::PruneArgs),
    /// Ask a running daemon's /readyz or /healthz; exit 0 only on a 2xx answer (the
    /// probe of container health checks and the systemd unit).
    Health(cli::health::HealthArgs),
    /// Solve one round from a JSON pool file and print the matches as JSON.
    Optimize(cli::optimize::OptimizeArgs),
    /// Load and validate a config file as `run` would, without a database; one line
    /// naming its queues, or the key at fault and a non-zero exit.
    CheckConfig(cli::check_config::CheckConfigArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => cli::run::run(args),
        Command::Migrate(args) => cli::migrate::run(args),
        Command::Status(args) => cli::status::run(args),
        Command::Explain(args) => cli::explain::run(args),
        Command::Replay(args) => cli::replay::run(args),
        Command::Report(args) => cli::report::run(args),
        Command::Prune(args) => cli::prune::run(args),
        Command::Health(args) => cli::health::run(args),
        Command::Optimize(args) => cli::optimize::run(args),
        Command::CheckConfig(args) => cli::check_config::run(args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // Interrupted: the shell's status, nothing to explain.
        Err(err) if let Some(&stopped) = err.downcast_ref::<ops::shell::Stopped>() => {
            std::process::ExitCode::from(stopped.exit_code())
        }
        Err(err) => {
            eprintln!("error: {}", ops::error_report(&err));
            std::process::ExitCode::FAILURE
        }
    }
}
