//! `matchmaker replay`: re-solve a past round from its stored snapshot, and what-if
//! ([`ops::replay`] does the work; this file parses and renders).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, NaiveDateTime, Utc};
use sqlx::PgPool;

use crate::cli::run::DatabaseArgs;
use crate::ops::replay::{
    Observed, Predictions, RangeLine, RangeReport, Replay, ReplayOptions, Side, Totals, Waits,
    replay_range, replay_stored_round, require_replay,
};
use crate::ops::shell;

#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// The database (default: the private PostgreSQL of a local `matchmaker run`).
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// The round to re-solve (`rounds.round_id`).
    #[arg(required_unless_present = "from", conflicts_with_all = ["from", "to", "queue"])]
    pub round_id: Option<i64>,
    /// Replay every round committed from this time on: RFC 3339
    /// (`2026-11-24T18:00:00Z`), `YYYY-MM-DD HH:MM[:SS]` (UTC), or a duration ago (`3h`).
    #[arg(long, requires = "to", value_parser = parse_time)]
    pub from: Option<DateTime<Utc>>,
    /// ... up to (not including) this time; same forms, `now` for now.
    #[arg(long, requires = "from", value_parser = parse_time)]
    pub to: Option<DateTime<Utc>>,
    /// With --from/--to: only this queue's rounds.
    #[arg(long)]
    pub queue: Option<String>,
    /// What-if: the queue of the same name in this config file instead of the stored one.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// What-if: one key of the queue's config, `queue.KEY=VALUE` (a TOML value; a bare
    /// word is a string), e.g. `queue.weights.enemy_ping=5`, `queue.max_wait=5m`,
    /// `queue.round.restarts=8`, `queue.filters.same=["build"]`, `queue.avoids.scope=team`,
    /// `queue.floors=[{after="1m", max_team_gap=200.0}]`. Repeatable; applied after
    /// --config.
    #[arg(long = "set", value_name = "queue.KEY=VALUE")]
    pub set: Vec<String>,
    /// A wall-clock budget instead of the stored one.
    #[arg(long, value_parser = humantime::parse_duration, conflicts_with = "restarts")]
    pub budget: Option<Duration>,
    /// Exactly this many restarts instead of the stored budget (deterministic).
    #[arg(long)]
    pub restarts: Option<u64>,
    /// Solver threads (default: the stored round's; a restart budget gives the same
    /// matches on any number).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print JSON (one object) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write the stored pool as a pool file (`matchmaker optimize --pool`).
    #[arg(long, conflicts_with = "from")]
    pub write_pool: Option<PathBuf>,
    /// Write the effective config (after --config and --set) as a config file
    /// (`matchmaker optimize --config`).
    #[arg(long, conflicts_with = "from")]
    pub write_config: Option<PathBuf>,
}

/// `--from` / `--to`: a time, or a duration ago.
fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    if text == "now" {
        return Ok(Utc::now());
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, format) {
            return Ok(t.and_utc());
        }
    }
    if let Ok(ago) = humantime::parse_duration(text) {
        return chrono::Duration::from_std(ago)
            .map(|ago| Utc::now() - ago)
            .map_err(|e| e.to_string());
    }
    Err(format!(
        "{text:?}: expected RFC 3339 (2026-11-24T18:00:00Z), YYYY-MM-DD HH:MM[:SS] (UTC), a duration ago (3h) or now"
    ))
}

impl ReplayArgs {
    /// The what-if options of the library.
    pub fn options(&self) -> ReplayOptions {
        ReplayOptions {
            config: self.config.clone(),
            set: self.set.clone(),
            budget: self.budget,
            restarts: self.restarts,
            threads: self.threads,
        }
    }
}

pub fn run(args: ReplayArgs) -> anyhow::Result<()> {
    shell::run_on_database(&(&args.database).into(), async |db| match args.round_id {
        Some(id) => replay_one(db, id, &args).await,
        None => replay_window(db, &args).await,
    })
}

async fn replay_one(db: &PgPool, round_id: i64, args: &ReplayArgs) -> anyhow::Result<()> {
    require_replay(db, None).await?;
    let replay = replay_stored_round(db, round_id, &args.options(), |stored, config| {
        if let Some(path) = &args.write_pool {
            write(path, &serde_json::to_string_pretty(&stored.pool)?)?;
        }
        if let Some(path) = &args.write_config {
            write(path, &config.to_toml(&stored.queue))?;
        }
        Ok(())
    })
    .await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&replay)?);
    } else {
        print!("{}", render(&replay));
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

async fn replay_window(db: &PgPool, args: &ReplayArgs) -> anyhow::Result<()> {
    let (from, to) = (args.from.expect("clap: from"), args.to.expect("clap: to"));
    let queue = args.queue.as_deref();
    require_replay(db, queue).await?;
    if !args.json {
        println!(
            "{:>8} {:<14} {:>6} {:>17} {:>17} {:>5}",
            "round", "queue", "pool", "matched st/re", "score st/re", "same"
        );
    }
    let report = replay_range(db, from, to, queue, &args.options(), |line| {
        if !args.json {
            print_range_line(line);
        }
    })
    .await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render_totals(&report));
    }
    Ok(())
}

fn print_range_line(line: &RangeLine) {
    let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.4}"));
    println!(
        "{:>8} {:<14} {:>6} {:>17} {:>17} {:>5}",
        line.round_id,
        line.queue,
        line.pool,
        format!("{}/{}", line.stored_matched, line.replay_matched),
        format!("{}/{}", num(line.stored_score), num(line.replay_score)),
        if line.identical { "yes" } else { "no" }
    );
}

/// A row of wait seconds: its name, and the figure it shows.
type WaitRow = (&'static str, fn(&Waits) -> f64);

/// A table of two columns, the stored round(s) beside the replay; a row whose two sides
/// differ is marked with `*`.
struct SideBySide {
    out: String,
}

impl SideBySide {
    /// The table under `out`, its header row named `title`.
    fn new(mut out: String, title: &str) -> Self {
        out.push_str(&format!("{title:<24} {:>12} {:>12}\n", "stored", "replay"));
        SideBySide { out }
    }

    fn row(&mut self, name: &str, stored: impl ToString, replay: impl ToString) {
        let (a, b) = (stored.to_string(), replay.to_string());
        let mark = if a != b { "  *" } else { "" };
        self.out
            .push_str(&format!("{name:<24} {a:>12} {b:>12}{mark}\n"));
    }

    fn score(&mut self, name: &str, stored: Option<f64>, replay: Option<f64>) {
        let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.5}"));
        self.row(name, num(stored), num(replay));
    }

    /// One row per factor of either side, indented under the score.
    fn factors(&mut self, stored: &BTreeMap<String, f64>, replay: &BTreeMap<String, f64>) {
        let names: BTreeSet<&String> = stored.keys().chain(replay.keys()).collect();
        for f in names {
            self.score(
                &format!("  {f}"),
                stored.get(f).copied(),
                replay.get(f).copied(),
            );
        }
    }

    /// How each side's two-team matches were predicted to go (the stored round's
    /// predictor for both).
    fn predictions(&mut self, stored: &Predictions, replay: &Predictions) {
        if stored.matches == 0 && replay.matches == 0 {
            return;
        }
        let gap = |p: &Predictions| {
            p.mean_gap()
                .map_or("-".to_string(), |g| format!("{:.1}%", 100.0 * g))
        };
        self.row("predicted gap from 50%", gap(stored), gap(replay));
        self.row("lopsided (>=70%)", stored.lopsided, replay.lopsided);
        let expected = |p: &Predictions| format!("{:.1}", p.expected_stomps);
        self.row("stomps expected", expected(stored), expected(replay));
    }

    /// What the stored matches' reported results were; a replay's matches were not
    /// played.
    fn observed(&mut self, observed: Option<&Observed>) {
        let Some(o) = observed.filter(|o| o.reported > 0) else {
            return;
        };
        self.row("results reported", o.reported, "-");
        self.row("stomps observed", o.stomps, "-");
        let brier = o.brier().map_or("-".to_string(), |b| format!("{b:.3}"));
        self.row("Brier score", brier, "-");
    }

    /// The wait percentiles in seconds, the mean first if `mean`.
    fn waits(&mut self, stored: Option<&Waits>, replay: Option<&Waits>, mean: bool) {
        let rows: [WaitRow; 4] = [
            ("wait mean s", |w| w.mean),
            ("wait p50 s", |w| w.p50),
            ("wait p90 s", |w| w.p90),
            ("wait max s", |w| w.max),
        ];
        let seconds = |w: Option<&Waits>, pick: fn(&Waits) -> f64| {
            w.map_or("-".to_string(), |w| format!("{:.1}", pick(w)))
        };
        for (name, pick) in rows.into_iter().skip(if mean { 0 } else { 1 }) {
            self.row(name, seconds(stored, pick), seconds(replay, pick));
        }
    }
}

/// The comparison as a table.
pub fn render(r: &Replay) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "round {} · {} · {} · committed {} · pool {} · seed {} · {}\n",
        r.round_id,
        r.queue,
        r.trigger,
        r.committed_at.format("%Y-%m-%d %H:%M:%S UTC"),
        r.pool,
        r.seed,
        r.strategy
    ));
    out.push_str(&format!("budget: stored {}", r.stored_budget.describe()));
    if r.replay_budget != r.stored_budget {
        out.push_str(&format!(", replay {}", r.replay_budget.describe()));
    }
    out.push('\n');
    if r.what_if.is_empty() {
        out.push_str(&format!("config: the stored one ({})\n", r.config_hash));
    } else {
        out.push_str(&format!(
            "what-if: {} (config {} -> {})\n",
            r.what_if.join(" "),
            r.config_hash,
            r.replay_config_hash
        ));
    }
    let (s, p) = (&r.stored, &r.replay);
    let mut table = SideBySide::new(out, "");
    table.row("matches", s.matches, p.matches);
    table.row("matched", s.matched, p.matched);
    table.row("left over", s.left_over, p.left_over);
    let kinds: BTreeSet<&String> = s
        .left_over_by_outcome
        .keys()
        .chain(p.left_over_by_outcome.keys())
        .collect();
    for k in kinds {
        let n = |side: &Side| side.left_over_by_outcome.get(k).copied().unwrap_or(0);
        table.row(&format!("  {k}"), n(s), n(p));
    }
    table.row("rejected", s.rejected, p.rejected);
    table.score("score", s.score, p.score);
    table.factors(&s.factors, &p.factors);
    table.predictions(&s.predictions, &p.predictions);
    table.waits(s.waits.as_ref(), p.waits.as_ref(), true);
    let mut out = table.out;
    out.push_str(&format!(
        "{:<24} {:>12.0} {:>12.0}\n",
        "solve ms", s.solve_ms, p.solve_ms
    ));
    out.push_str(&format!(
        "matches: {} ({} of the stored round's {} made again; the replay made {})\n",
        if r.identical {
            "identical"
        } else {
            "different"
        },
        r.same_matches,
        r.stored_matches,
        r.replay.matches
    ));
    out
}

fn render_totals(r: &RangeReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "\n{} rounds from {} to {}{}; {} replayed to identical matches\n",
        r.stored.rounds,
        r.from.format("%Y-%m-%d %H:%M:%S"),
        r.to.format("%Y-%m-%d %H:%M:%S UTC"),
        r.queue
            .as_deref()
            .map(|q| format!(" (queue {q})"))
            .unwrap_or_default(),
        r.identical_rounds
    ));
    if !r.what_if.is_empty() {
        out.push_str(&format!("what-if: {}\n", r.what_if.join(" ")));
    }
    let (s, p): (&Totals, &Totals) = (&r.stored, &r.replay);
    let mut table = SideBySide::new(out, "totals");
    table.row("players pooled", s.players, p.players);
    table.row("matches", s.matches, p.matches);
    table.row("matched", s.matched, p.matched);
    table.row("left over", s.left_over, p.left_over);
    table.row("rejected", s.rejected, p.rejected);
    table.score("mean round score", s.mean_round_score, p.mean_round_score);
    table.factors(&s.factors, &p.factors);
    table.predictions(&s.predictions, &p.predictions);
    table.observed(s.results.as_ref());
    table.waits(s.waits.as_ref(), p.waits.as_ref(), false);
    table.out
}
