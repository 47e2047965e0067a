//! `matchmaker-lab demo`: the whole product in one command. Starts a private PostgreSQL
//! (unless `DATABASE_URL` / `--database-url` names one), applies the migrations, runs the
//! daemon on a fast schedule (a round every 20 s) and the simulator's realistic players
//! together (the simulated players enqueue, keep alive and cancel through the client
//! contract's functions, like any game backend; tickets live 30 s without a keep-alive),
//! and shows the live status view until Ctrl-C or `--duration`. At the end it
//! prints the SQL to inspect the rounds it made, with their results, and removes the
//! private server.

use std::future::Future;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use sqlx::PgPool;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::sim::population::Population;
use crate::sim::simulator::{SimError, SimProgress, SimReport, run_simulator};
use crate::simulate::{LoadDefaults, LoadOptions, fit_to_queue, progress_line};
use matchmaker::config::Config;
use matchmaker::daemon::DaemonOptions;
use matchmaker::db::local_pg::LocalPostgres;
use matchmaker::ops::shell::{self, Signal, Signals, Stop};
use matchmaker::ops::status::{StatusView, read_status, render_for};
use matchmaker::ops::term::{Output, table_text};

#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Use this PostgreSQL instead of starting a private one (the demo's rounds stay
    /// there for inspection).
    pub database_url: Option<String>,
    /// Stop after this long (wall clock), e.g. `2m`, `90s`.
    pub duration: Duration,
    /// Config file to start from (default: the embedded config/matchmaker.toml). Every
    /// queue's schedule is replaced by a round every --round-every.
    pub config: Option<PathBuf>,
    /// Round interval of the demo (replaces each queue's schedule).
    pub round_every: Duration,
    /// Simulated player load (defaults suit the demo: see `matchmaker-lab simulate --help`).
    pub load: LoadOptions,
}

pub fn run(args: DemoOptions) -> anyhow::Result<()> {
    let log = log_to_file()?;
    eprintln!("daemon log: {}", log.display());
    // Ctrl-C, SIGTERM and SIGHUP are seen from the very start (the shell listens before
    // the demo begins), so that the private server is stopped and its directory removed
    // however the demo is ended, even while it starts.
    let outcome = shell::run(Signals::All, async |stop| demo(args, stop).await);
    // The log is the demo's own temporary file: kept only when it explains a failure.
    if outcome.is_ok() {
        let _ = std::fs::remove_file(&log);
    } else {
        eprintln!("daemon log kept: {}", log.display());
    }
    outcome
}

async fn demo(args: DemoOptions, stop: Stop) -> anyhow::Result<()> {
    // 1. A database: the given one, or a private server removed at the end.
    let mut server = None;
    let url = match &args.database_url {
        Some(url) => url.clone(),
        None => {
            let started = with_progress(
                "starting a private PostgreSQL (initdb takes a few seconds)",
                LocalPostgres::start_temporary(),
            )
            .await
            .context("starting a private PostgreSQL (or set DATABASE_URL)")?;
            let url = started.url();
            server = Some(started);
            url
        }
    };
    let outcome = if stop.signal().is_some() {
        Ok(())
    } else {
        run_with_database(&args, &url, &stop).await
    };
    if let Some(server) = server {
        with_progress("removing the private PostgreSQL", server.stop())
            .await
            .context("stopping the private PostgreSQL")?;
        if outcome.is_ok() {
            let out = Output::stdout();
            println!(
                "{}",
                out.wrap(
                    "The private server is removed. To keep the rounds, run the demo against \
                     a server of yours (DATABASE_URL=postgres://... matchmaker-lab demo), or \
                     the daemon with its persistent local server (matchmaker run).",
                    ""
                )
            );
        }
    }
    outcome
}

async fn run_with_database(args: &DemoOptions, url: &str, stop: &Stop) -> anyhow::Result<()> {
    let db = matchmaker::db::connect(url).await?;
    with_progress("applying migrations", matchmaker::db::migrate(&db)).await?;
    if stop.signal().is_some() {
        return Ok(());
    }

    // 2. The config, on a fast schedule.
    let base = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::embedded_default(),
    };
    let config = demo_config(base, args.round_every, args.load.queue.as_str())?;

    // 3. Daemon and simulators side by side. The daemon stops first (a round in flight
    // commits), then the simulators withdraw their still-queued players: stopping them
    // first would cancel the players of the last round during its solve.
    let (stop_daemon, daemon_rx) = watch::channel(false);
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let daemon = start_daemon(db.clone(), config.clone(), stopped(daemon_rx));
    let daemon = tokio::spawn(daemon);

    // One simulator per queue: the demo queue at --rate, the others at half of it, each
    // with its queue's format (party sizes up to the team size, the queue's roles).
    let population = std::sync::Arc::new(Population::realistic());
    let mut simulators = Vec::new();
    for (k, (name, queue)) in config.queues.iter().enumerate() {
        // The simulator stops with the demo; its own limit is only a safety net.
        let mut options = args
            .load
            .options(args.duration + Duration::from_secs(60), LoadDefaults::DEMO);
        if *name != args.load.queue {
            options.rate /= 2.0;
        }
        options.queue = name.clone();
        options.seed = options.seed.wrapping_add(k as u64);
        options.id_prefix = Some(format!(
            "{}{name}-",
            args.load.id_prefix.clone().unwrap_or_else(|| "sim-".into())
        ));
        fit_to_queue(&mut options, &queue.model);
        let (progress_tx, progress_rx) = watch::channel(SimProgress::default());
        let (sim_db, sim_stop, population) =
            (db.clone(), stopped(stop_rx.clone()), population.clone());
        let task = tokio::spawn(async move {
            run_simulator(&sim_db, &population, &options, Some(progress_tx), sim_stop).await
        });
        simulators.push((name.clone(), progress_rx, task));
    }

    // 4. The live view until Ctrl-C or --duration. On a terminal it is redrawn every
    // second; piped (a log, CI) a frame is printed only when a round lands, plain, so
    // the log holds each round once instead of a page a second of screen codes.
    let out = Output::stdout();
    let started = Instant::now();
    let mut interrupted = None;
    let mut shown_round = None;
    loop {
        let view = read_status(&db, None, 6).await?;
        let left = args.duration.saturating_sub(started.elapsed());
        let newest = view.rounds.first().map(|r| r.round_id);
        if out.live || shown_round != Some(newest) {
            shown_round = Some(newest);
            let gap = if out.live { "" } else { "\n" };
            print!(
                "{}{gap}{}",
                out.clear(),
                demo_frame(&view, &simulators, left, url, &out)
            );
            let _ = std::io::stdout().flush();
        }
        if left.is_zero() {
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1).min(left)) => {}
            signal = stop.wait() => {
                interrupted = Some(match signal {
                    Signal::Interrupt => "Ctrl-C",
                    other => other.name(),
                });
                break;
            }
        }
    }
    let why = match interrupted {
        Some(signal) => format!("{signal}:"),
        None => "time is up:".to_string(),
    };
    println!(
        "\n{}",
        out.wrap(
            &format!(
                "{why} stopping the daemon (a round in flight commits), then the simulators..."
            ),
            ""
        )
    );
    let _ = stop_daemon.send(true);
    let daemon_result = daemon.await.context("daemon task");
    let _ = stop_tx.send(true);
    let mut reports = Vec::new();
    for (name, _, task) in simulators {
        reports.push((name, task.await.context("simulator task")??));
    }
    daemon_result??;

    // 5. Where to look next.
    let view = read_status(&db, None, 6).await?;
    println!("\n{}", render_for(&view, &out));
    for (name, report) in &reports {
        println!("{}", out.wrap(&format!("simulator {name}: {report}"), "  "));
    }
    println!();
    print_next_steps(&db, args.database_url.is_some(), &out).await?;
    Ok(())
}

/// One frame of the live view: the status tables, the simulators' progress, and how
/// long the demo goes on.
fn demo_frame(
    view: &StatusView,
    simulators: &[(String, watch::Receiver<SimProgress>, SimTask)],
    left: Duration,
    url: &str,
    out: &Output,
) -> String {
    let (_, dim, reset) = out.styles();
    let mut frame = render_for(view, out);
    frame.push('\n');
    let mut table = out.table(&["SIMULATOR", "PLAYERS"], &[]);
    for (name, progress, _) in simulators {
        table.add_row(vec![name.clone(), progress_line(&progress.borrow())]);
    }
    frame.push_str(&table_text(&table));
    let footer = format!(
        "demo: {} left; Ctrl-C stops. Meanwhile, from another terminal: psql {}",
        humantime::format_duration(Duration::from_secs(left.as_secs())),
        matchmaker::db::redact(url)
    );
    frame.push_str(&format!("{dim}{}{reset}\n", out.wrap(&footer, "  ")));
    frame
}

/// A simulator's task: its report, or why it failed.
type SimTask = tokio::task::JoinHandle<Result<SimReport, SimError>>;

/// The demo's queue setup: every queue on a fast fixed schedule, small enough minimum
/// pools that the first round comes within one interval, and tickets that expire after
/// 30 s (or one interval, if longer) without a keep-alive, so that the simulator's
/// keep-alive calls (every ttl / 3) show within a short demo.
pub fn demo_config(mut config: Config, every: Duration, queue: &str) -> anyhow::Result<Config> {
    anyhow::ensure!(
        config.queues.contains_key(queue),
        "queue {queue:?} is not in the config (queues: {})",
        config.queues.keys().cloned().collect::<Vec<_>>().join(", ")
    );
    for q in config.queues.values_mut() {
        q.round.every = Some(every);
        q.round.cron = None;
        let one_match = q.model.players_per_match();
        q.round.min_pool = Some(one_match);
        // Keep solving well inside the interval on a small machine.
        q.round.budget = q.round.budget.min(every / 4);
        q.tickets.ttl = q.tickets.ttl.min(every.max(Duration::from_secs(30)));
    }
    config.validate()?;
    Ok(config)
}

/// The daemon, running `config` until `shutdown`.
async fn start_daemon(
    db: PgPool,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    // No config path: the demo's schedule overrides are not hot-reloaded.
    let options = DaemonOptions {
        config_path: None,
        ..DaemonOptions::default()
    };
    matchmaker::daemon::run(db, config, options, shutdown).await
}

/// The SQL an operator runs next: (title, query, its columns in display order). Each
/// line fits 80 columns: the demo prints them for copying into psql.
const NEXT_STEPS: [(&str, &str, &[&str]); 3] = [
    (
        "the last rounds",
        "SELECT round_id, queue, trigger, pool_size, match_count, left_over,
       round(score::numeric, 3) AS score, round(solve_ms::numeric) AS solve_ms
  FROM round_summaries ORDER BY round_id DESC LIMIT 5;",
        &[
            "round_id",
            "queue",
            "trigger",
            "pool_size",
            "match_count",
            "left_over",
            "score",
            "solve_ms",
        ],
    ),
    (
        "the weakest matches of the last round that made any, and why",
        "SELECT DISTINCT ON (match_score, match_id) match_id, queue,
       round(match_score::numeric, 3) AS score, region,
       -- per-factor scores, as text that wraps: 'enemy_ping 0.70, ...'
       (SELECT string_agg(f.key || ' ' || round(f.value::numeric, 2), ', '
                          ORDER BY f.key)
          FROM jsonb_each_text(factors) f) AS factors
  FROM match_details
 WHERE round_id = (SELECT max(round_id) FROM rounds WHERE match_count > 0)
 ORDER BY match_score, match_id LIMIT 3;",
        &["match_id", "queue", "score", "region", "factors"],
    ),
    (
        "wait from enqueue to match, per round (seconds)",
        "SELECT round_id,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY waited_seconds)
             ::numeric, 1) AS p50,
       round(percentile_cont(0.9) WITHIN GROUP (ORDER BY waited_seconds)
             ::numeric, 1) AS p90,
       round(max(waited_seconds)::numeric, 1) AS max
  FROM match_details GROUP BY round_id ORDER BY round_id DESC LIMIT 5;",
        &["round_id", "p50", "p90", "max"],
    ),
];

/// Prints the SQL an operator runs next, each with its result on the demo's data.
async fn print_next_steps(db: &PgPool, kept: bool, out: &Output) -> anyhow::Result<()> {
    println!("Where to look next: the rounds are in the database, explained in SQL.");
    for (title, sql, columns) in NEXT_STEPS {
        println!("\n-- {title}\n{sql}");
        let rows = sqlx::query_scalar::<_, serde_json::Value>(sqlx::AssertSqlSafe(format!(
            "SELECT to_jsonb(t) FROM ({}) t",
            sql.trim_end_matches(';')
        )))
        .fetch_all(db)
        .await?;
        print!("{}", format_table(columns, &rows, out));
    }
    println!();
    // A private server's closing note is printed once it is removed (`demo`).
    if kept {
        println!(
            "{}",
            out.wrap(
                "Run these with psql against the same DATABASE_URL; the rounds stay there.",
                ""
            )
        );
    }
    Ok(())
}

/// A psql-like table of JSON rows, columns in the given order, fitted to the width.
fn format_table(columns: &[&str], rows: &[serde_json::Value], out: &Output) -> String {
    let cell = |row: &serde_json::Value, column: &str| match row.get(column) {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    // Indented under the SQL: the table gets the width less the indent.
    let indented = Output {
        width: out.width.saturating_sub(3),
        ..*out
    };
    let mut table = indented.table(columns, &[]);
    for row in rows {
        table.add_row(columns.iter().map(|c| cell(row, c)).collect::<Vec<_>>());
    }
    let mut text = String::new();
    for line in table_text(&table).lines() {
        text.push_str(&format!("   {line}\n"));
    }
    if rows.is_empty() {
        text.push_str("   (no rows)\n");
    }
    text
}

/// The daemon's log lines go to a file: the terminal belongs to the live view.
fn log_to_file() -> anyhow::Result<PathBuf> {
    let path = std::env::temp_dir().join(format!("matchmaker-demo-{}.log", std::process::id()));
    let file = std::fs::File::create(&path)
        .with_context(|| format!("creating the demo log {}", path.display()))?;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init();
    Ok(path)
}

/// Awaits `work` while showing `what...` and, on a terminal, the elapsed seconds, so a
/// slow step (initdb, migrations) shows it is alive.
async fn with_progress<T>(what: &str, work: impl Future<Output = T>) -> T {
    use std::io::IsTerminal as _;
    let started = Instant::now();
    let live = std::io::stderr().is_terminal();
    if live {
        eprint!("{what}...");
        let _ = std::io::stderr().flush();
    }
    tokio::pin!(work);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let out = loop {
        tokio::select! {
            out = &mut work => break out,
            _ = tick.tick() => if live {
                eprint!("\r{what}... {} s", started.elapsed().as_secs());
                let _ = std::io::stderr().flush();
            }
        }
    };
    let prefix = if live { "\r" } else { "" };
    eprintln!(
        "{prefix}{what}... done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    out
}
