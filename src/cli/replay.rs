//! `matchmaker replay`: re-solve a past round from its stored snapshot, and what-if.
//!
//! ```text
//! matchmaker replay ROUND_ID [--json] [--config FILE] [--set queue.weights.enemy_ping=5]...
//!                   [--budget 2s | --restarts N] [--threads N]
//!                   [--write-pool FILE] [--write-config FILE]
//! matchmaker replay --from TIME --to TIME [--queue Q] [same what-if options]
//! ```
//!
//! The round's pool, history, clock (`now`, so waits are as they were), config, seed and
//! budget come from `round_snapshots` (migration 0011) and `rounds`. By default the
//! replay uses the stored budget: a round solved with `round.restarts` (deterministic)
//! replays to the identical matches; a time budget replays with the same time, which
//! gives a similar but not necessarily identical round. `--config` (the file's queue of
//! the same name) and `--set` (one key of the queue's config) make it a what-if.
//! `--write-pool` / `--write-config` write the round as files `matchmaker optimize
//! --pool FILE --config FILE` reads.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

use crate::cli::run::{DatabaseArgs, open_database, require_schema};
use crate::config::{Config, QueueConfig};
use crate::daemon::round::solve_rejecting_malformed;
use crate::db::{self, BudgetRecord, StoredRound};
use matchmaker_optimizer::{
    self as optimizer, Budget, LeftOverKind, Pool, RoundOutcome, SolveOptions,
};

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
    /// `queue.round.restarts=8`. Repeatable; applied after --config.
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

/// One side of the comparison: the stored round or its replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    pub matches: usize,
    pub matched: usize,
    pub left_over: usize,
    pub rejected: usize,
    pub score: Option<f64>,
    /// Mean of each factor over the matches.
    pub factors: BTreeMap<String, f64>,
    /// Waits of the matched players up to the round's clock, in seconds.
    pub waits: Option<Waits>,
    /// Left-over players by outcome (no_valid_match, outscored, ...).
    pub left_over_by_outcome: BTreeMap<String, usize>,
    pub solve_ms: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Waits {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub max: f64,
}

/// A round and its replay.
#[derive(Debug, Clone, Serialize)]
pub struct Replay {
    pub round_id: i64,
    pub queue: String,
    pub trigger: String,
    pub committed_at: DateTime<Utc>,
    pub pool: usize,
    pub seed: u64,
    pub strategy: String,
    pub stored_budget: BudgetRecord,
    pub replay_budget: BudgetRecord,
    /// The what-if changes (`--config FILE`, `--set KEY=VALUE`); empty: a plain replay.
    pub what_if: Vec<String>,
    pub config_hash: String,
    pub replay_config_hash: String,
    pub stored: Side,
    pub replay: Side,
    /// The solver's matches of the stored round (committed, and any the commit dropped),
    /// and how many of them the replay made exactly (same players, same teams, same sides).
    pub stored_matches: usize,
    pub same_matches: usize,
    pub identical: bool,
    /// Per match of the replay: its factors; and the replay's matched players' waits (s).
    #[serde(skip)]
    pub replay_match_factors: Vec<BTreeMap<String, f64>>,
    #[serde(skip)]
    pub replay_waits: Vec<f64>,
}

pub fn run(args: ReplayArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let (db, server) = open_database(&args.database).await?;
        let result = async {
            require_schema(&db).await?;
            match args.round_id {
                Some(id) => replay_one(&db, id, &args).await,
                None => replay_range(&db, &args).await,
            }
        }
        .await;
        db.close().await;
        if let Some(server) = server {
            server.stop().await?;
        }
        result
    })
}

async fn load(db: &PgPool, round_id: i64) -> anyhow::Result<StoredRound> {
    db::load_round(db, round_id)
        .await?
        .with_context(|| format!("no round {round_id}"))
}

async fn replay_one(db: &PgPool, round_id: i64, args: &ReplayArgs) -> anyhow::Result<()> {
    let stored = load(db, round_id).await?;
    let config = effective_config(&stored, args)?;
    if let Some(path) = &args.write_pool {
        std::fs::write(path, serde_json::to_string_pretty(&stored.pool)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.write_config {
        std::fs::write(path, config.to_toml(&stored.queue))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let replay = tokio::task::spawn_blocking({
        let args = args.clone();
        move || replay_round(&stored, &config, &args)
    })
    .await??;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&replay)?);
    } else {
        print!("{}", render(&replay));
    }
    Ok(())
}

/// The queue config the replay uses: the stored one, or the what-if.
pub fn effective_config(stored: &StoredRound, args: &ReplayArgs) -> anyhow::Result<QueueConfig> {
    let queue = &stored.queue;
    let base = Config::from_toml_str(&stored.config_toml)
        .with_context(|| format!("round {}: the stored config", stored.round_id))?;
    let mut config = base.queues.get(queue).cloned().with_context(|| {
        format!(
            "round {}: the stored config lacks queue {queue}",
            stored.round_id
        )
    })?;
    if let Some(path) = &args.config {
        let file = Config::load(path)?;
        let Some(q) = file.queues.get(queue) else {
            let known: Vec<&String> = file.queues.keys().collect();
            bail!(
                "{}: no queue {queue:?} (the round's queue); it has {known:?}",
                path.display()
            );
        };
        config = q.clone();
    }
    if !args.set.is_empty() {
        config = apply_sets(&config, queue, &args.set)?;
    }
    Ok(config)
}

/// `--set queue.KEY=VALUE`, each on the queue's config as a TOML table, then validated
/// like any config file.
pub fn apply_sets(
    config: &QueueConfig,
    queue: &str,
    sets: &[String],
) -> anyhow::Result<QueueConfig> {
    let mut file: toml::Table = toml::from_str(&config.to_toml(queue))?;
    for set in sets {
        let Some((key, raw)) = set.split_once('=') else {
            bail!("--set {set:?}: expected queue.KEY=VALUE, e.g. queue.weights.enemy_ping=5");
        };
        let key = key.trim();
        let path: Vec<&str> = key
            .strip_prefix("queue.")
            .unwrap_or(key)
            .split('.')
            .collect();
        if path.iter().any(|p| p.is_empty()) {
            bail!("--set {set:?}: empty part in key {key:?}");
        }
        let raw = raw.trim();
        let mut value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
            Ok(mut t) => t.remove("v").expect("parsed one key"),
            Err(_) => toml::Value::String(raw.to_string()),
        };
        let mut table = file
            .get_mut("queues")
            .and_then(|q| q.get_mut(queue))
            .and_then(toml::Value::as_table_mut)
            .expect("to_toml writes the queue's table");
        let (last, parents) = path.split_last().expect("split gives one part at least");
        for part in parents {
            table = table
                .entry(part.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                .as_table_mut()
                .with_context(|| format!("--set {set:?}: {part} is not a table"))?;
        }
        // weights and the like are numbers: `5` means 5.0 where the key holds a float
        if let (Some(toml::Value::Float(_)), toml::Value::Integer(i)) = (table.get(*last), &value) {
            value = toml::Value::Float(*i as f64);
        }
        table.insert(last.to_string(), value);
    }
    let text = toml::to_string(&file)?;
    let changed =
        Config::from_toml_str(&text).with_context(|| format!("--set {}", sets.join(" --set ")))?;
    Ok(changed.queues[queue].clone())
}

/// Re-solve `stored` with `config` (CPU work: call off the async runtime).
pub fn replay_round(
    stored: &StoredRound,
    config: &QueueConfig,
    args: &ReplayArgs,
) -> anyhow::Result<Replay> {
    let mut what_if = Vec::new();
    if let Some(path) = &args.config {
        what_if.push(format!("--config {}", path.display()));
    }
    what_if.extend(args.set.iter().map(|s| format!("--set {s}")));
    let mut budget = stored.budget;
    if let Some(b) = args.budget {
        budget = BudgetRecord::new(Budget::Time(b), budget.moves_per_restart);
        what_if.push(format!("--budget {}", humantime::format_duration(b)));
    }
    if let Some(n) = args.restarts {
        budget = BudgetRecord::new(Budget::Restarts(n), budget.moves_per_restart);
        what_if.push(format!("--restarts {n}"));
    }
    // A what-if that sets the round's own budget keys takes them.
    if args
        .set
        .iter()
        .any(|s| s.contains("round.restarts") || s.contains("round.budget"))
    {
        budget = BudgetRecord::new(config.round.solve_budget(), config.round.moves_per_restart);
    }
    let options = SolveOptions {
        strategy: stored.strategy,
        budget: budget.budget(),
        seed: stored.seed,
        threads: args.threads.or(stored.threads),
        moves_per_restart: budget.moves_per_restart,
        check_delta: false,
    };
    let started = std::time::Instant::now();
    let (outcome, malformed, pool) =
        solve_rejecting_malformed(stored.pool.clone(), &config.model, &options).map_err(|e| {
            anyhow::anyhow!(
                "round {}: the core refused the replay: {e}",
                stored.round_id
            )
        })?;
    let solve_ms = started.elapsed().as_secs_f64() * 1000.0;
    let left_over = optimizer::explain_left_over(&pool, &config.model, &outcome)?;

    let stored_side = stored_side(stored);
    let replay_side = replay_side(
        &stored.pool,
        &outcome,
        malformed.len(),
        &left_over,
        solve_ms,
    );
    let stored_sets: Vec<Vec<Vec<String>>> = stored
        .matches
        .iter()
        .map(|m| canonical(&m.teams))
        .chain(stored.dropped_matches.iter().map(|t| canonical(t)))
        .collect();
    let mut replay_sets: Vec<Vec<Vec<String>>> = outcome
        .matches
        .iter()
        .map(|m| canonical(&m.teams))
        .collect();
    replay_sets.sort();
    let same = stored_sets
        .iter()
        .filter(|m| replay_sets.binary_search(m).is_ok())
        .count();
    Ok(Replay {
        round_id: stored.round_id,
        queue: stored.queue.clone(),
        trigger: stored.trigger.clone(),
        committed_at: stored.committed_at,
        pool: stored.pool.players.len(),
        seed: stored.seed,
        strategy: stored.strategy.name().to_string(),
        stored_budget: stored.budget,
        replay_budget: budget,
        what_if,
        config_hash: stored.config_hash.clone(),
        replay_config_hash: config.hash(),
        identical: same == stored_sets.len() && same == replay_sets.len(),
        stored_matches: stored_sets.len(),
        same_matches: same,
        stored: stored_side,
        replay: replay_side,
        replay_match_factors: outcome.matches.iter().map(|m| m.factors.clone()).collect(),
        replay_waits: wait_list(
            &stored.pool,
            outcome
                .matches
                .iter()
                .flat_map(|m| m.teams.iter().flatten().cloned()),
        ),
    })
}

/// A match as a comparable value: teams in side order, players sorted within a team.
fn canonical(teams: &[Vec<String>]) -> Vec<Vec<String>> {
    teams
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t.sort();
            t
        })
        .collect()
}

fn waits(pool: &Pool, players: impl Iterator<Item = String>) -> Option<Waits> {
    summarize_waits(wait_list(pool, players))
}

fn summarize_waits(mut secs: Vec<f64>) -> Option<Waits> {
    if secs.is_empty() {
        return None;
    }
    secs.sort_by(f64::total_cmp);
    let q = |f: f64| secs[((secs.len() - 1) as f64 * f).round() as usize];
    Some(Waits {
        mean: secs.iter().sum::<f64>() / secs.len() as f64,
        p50: q(0.5),
        p90: q(0.9),
        max: secs[secs.len() - 1],
    })
}

fn stored_side(s: &StoredRound) -> Side {
    let mut by_outcome = BTreeMap::new();
    for l in s.left_over.values() {
        if l.outcome != LeftOverKind::Rejected {
            *by_outcome
                .entry(l.outcome.as_str().to_string())
                .or_default() += 1;
        }
    }
    Side {
        matches: s.matches.len(),
        matched: s.matched.max(0) as usize,
        left_over: s.left_over_count.max(0) as usize,
        rejected: s.rejected.max(0) as usize,
        score: s.score,
        factors: s.factor_averages.clone(),
        waits: waits(
            &s.pool,
            s.matches
                .iter()
                .flat_map(|m| m.teams.iter().flatten().cloned()),
        ),
        left_over_by_outcome: by_outcome,
        solve_ms: s.solve_ms,
    }
}

fn replay_side(
    pool: &Pool,
    outcome: &RoundOutcome,
    malformed: usize,
    left_over: &[optimizer::LeftOver],
    solve_ms: f64,
) -> Side {
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for m in &outcome.matches {
        for (f, v) in &m.factors {
            let e = sums.entry(f.clone()).or_default();
            e.0 += v;
            e.1 += 1;
        }
    }
    let mut by_outcome = BTreeMap::new();
    for l in left_over {
        *by_outcome.entry(l.kind.as_str().to_string()).or_default() += 1;
    }
    Side {
        matches: outcome.matches.len(),
        matched: outcome
            .matches
            .iter()
            .map(|m| m.teams.iter().flatten().count())
            .sum(),
        left_over: outcome.unmatched.len(),
        rejected: outcome.rejected.len() + malformed,
        score: (!outcome.matches.is_empty()).then_some(outcome.score),
        factors: sums
            .into_iter()
            .map(|(f, (s, n))| (f, s / n as f64))
            .collect(),
        waits: waits(
            pool,
            outcome
                .matches
                .iter()
                .flat_map(|m| m.teams.iter().flatten().cloned()),
        ),
        left_over_by_outcome: by_outcome,
        solve_ms,
    }
}

/// The side-by-side table of one replay.
pub fn render(r: &Replay) -> String {
    let mut out = String::new();
    let line = |out: &mut String, name: &str, a: String, b: String| {
        let mark = if a != b { "  *" } else { "" };
        out.push_str(&format!("{name:<24} {a:>12} {b:>12}{mark}\n"));
    };
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
    out.push_str(&format!("{:<24} {:>12} {:>12}\n", "", "stored", "replay"));
    let (s, p) = (&r.stored, &r.replay);
    line(
        &mut out,
        "matches",
        s.matches.to_string(),
        p.matches.to_string(),
    );
    line(
        &mut out,
        "matched",
        s.matched.to_string(),
        p.matched.to_string(),
    );
    line(
        &mut out,
        "left over",
        s.left_over.to_string(),
        p.left_over.to_string(),
    );
    let kinds: std::collections::BTreeSet<&String> = s
        .left_over_by_outcome
        .keys()
        .chain(p.left_over_by_outcome.keys())
        .collect();
    for k in kinds {
        let n = |side: &Side| {
            side.left_over_by_outcome
                .get(k)
                .copied()
                .unwrap_or(0)
                .to_string()
        };
        line(&mut out, &format!("  {k}"), n(s), n(p));
    }
    line(
        &mut out,
        "rejected",
        s.rejected.to_string(),
        p.rejected.to_string(),
    );
    let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.5}"));
    line(&mut out, "score", num(s.score), num(p.score));
    let factors: std::collections::BTreeSet<&String> =
        s.factors.keys().chain(p.factors.keys()).collect();
    for f in factors {
        line(
            &mut out,
            &format!("  {f}"),
            num(s.factors.get(f).copied()),
            num(p.factors.get(f).copied()),
        );
    }
    let wait = |side: &Side, pick: fn(&Waits) -> f64| {
        side.waits
            .as_ref()
            .map_or("-".to_string(), |w| format!("{:.1}", pick(w)))
    };
    line(
        &mut out,
        "wait mean s",
        wait(s, |w| w.mean),
        wait(p, |w| w.mean),
    );
    line(
        &mut out,
        "wait p50 s",
        wait(s, |w| w.p50),
        wait(p, |w| w.p50),
    );
    line(
        &mut out,
        "wait p90 s",
        wait(s, |w| w.p90),
        wait(p, |w| w.p90),
    );
    line(
        &mut out,
        "wait max s",
        wait(s, |w| w.max),
        wait(p, |w| w.max),
    );
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

/// Totals over many rounds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    pub rounds: usize,
    pub players: usize,
    pub matches: usize,
    pub matched: usize,
    pub left_over: usize,
    pub rejected: usize,
    /// Mean of the rounds' scores (rounds with a score).
    pub mean_round_score: Option<f64>,
    /// Mean of each factor over all matches.
    pub factors: BTreeMap<String, f64>,
    pub waits: Option<Waits>,
}

#[derive(Debug, Clone, Serialize)]
struct RangeReport {
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    queue: Option<String>,
    what_if: Vec<String>,
    rounds: Vec<RangeLine>,
    identical_rounds: usize,
    stored: Totals,
    replay: Totals,
}

#[derive(Debug, Clone, Serialize)]
struct RangeLine {
    round_id: i64,
    queue: String,
    pool: usize,
    stored_matched: usize,
    replay_matched: usize,
    stored_score: Option<f64>,
    replay_score: Option<f64>,
    identical: bool,
}

/// Accumulates one side of many rounds.
#[derive(Default)]
struct Acc {
    totals: Totals,
    score_sum: f64,
    scored: usize,
    factor_sums: BTreeMap<String, (f64, usize)>,
    waits: Vec<f64>,
}

impl Acc {
    fn add(
        &mut self,
        side: &Side,
        pool: usize,
        match_factors: &[BTreeMap<String, f64>],
        waits: Vec<f64>,
    ) {
        let t = &mut self.totals;
        t.rounds += 1;
        t.players += pool;
        t.matches += side.matches;
        t.matched += side.matched;
        t.left_over += side.left_over;
        t.rejected += side.rejected;
        if let Some(s) = side.score {
            self.score_sum += s;
            self.scored += 1;
        }
        for m in match_factors {
            for (f, v) in m {
                let e = self.factor_sums.entry(f.clone()).or_default();
                e.0 += v;
                e.1 += 1;
            }
        }
        self.waits.extend(waits);
    }

    fn finish(mut self) -> Totals {
        self.totals.mean_round_score =
            (self.scored > 0).then(|| self.score_sum / self.scored as f64);
        self.totals.factors = self
            .factor_sums
            .into_iter()
            .map(|(f, (s, n))| (f, s / n as f64))
            .collect();
        self.totals.waits = summarize_waits(self.waits);
        self.totals
    }
}

fn wait_list(pool: &Pool, players: impl Iterator<Item = String>) -> Vec<f64> {
    let Some(now) = pool.now else {
        return Vec::new();
    };
    let at: BTreeMap<&str, DateTime<Utc>> = pool
        .players
        .iter()
        .filter_map(|p| p.enqueued_at.map(|t| (p.id.as_str(), t)))
        .collect();
    players
        .filter_map(|p| {
            at.get(p.as_str())
                .map(|t| ((now - *t).num_milliseconds() as f64 / 1000.0).max(0.0))
        })
        .collect()
}

async fn replay_range(db: &PgPool, args: &ReplayArgs) -> anyhow::Result<()> {
    let (from, to) = (args.from.expect("clap: from"), args.to.expect("clap: to"));
    if from >= to {
        bail!("--from ({from}) must be before --to ({to})");
    }
    let ids = db::rounds_between(db, from, to, args.queue.as_deref()).await?;
    if ids.is_empty() {
        bail!(
            "no round with a snapshot was committed between {from} and {to}{}",
            args.queue
                .as_deref()
                .map(|q| format!(" in queue {q}"))
                .unwrap_or_default()
        );
    }
    let (mut stored_acc, mut replay_acc) = (Acc::default(), Acc::default());
    let mut lines = Vec::new();
    let mut what_if = Vec::new();
    if !args.json {
        println!(
            "{:>8} {:<14} {:>6} {:>17} {:>17} {:>5}",
            "round", "queue", "pool", "matched st/re", "score st/re", "same"
        );
    }
    for id in ids {
        let stored = load(db, id).await?;
        let config = effective_config(&stored, args)?;
        let (replay, stored) = tokio::task::spawn_blocking({
            let args = args.clone();
            move || replay_round(&stored, &config, &args).map(|r| (r, stored))
        })
        .await??;
        what_if = replay.what_if.clone();
        stored_acc.add(
            &replay.stored,
            replay.pool,
            &stored
                .matches
                .iter()
                .map(|m| m.factors.clone())
                .collect::<Vec<_>>(),
            wait_list(
                &stored.pool,
                stored
                    .matches
                    .iter()
                    .flat_map(|m| m.teams.iter().flatten().cloned()),
            ),
        );
        replay_acc.add(
            &replay.replay,
            replay.pool,
            &replay.replay_match_factors,
            replay.replay_waits.clone(),
        );
        let line = RangeLine {
            round_id: replay.round_id,
            queue: replay.queue.clone(),
            pool: replay.pool,
            stored_matched: replay.stored.matched,
            replay_matched: replay.replay.matched,
            stored_score: replay.stored.score,
            replay_score: replay.replay.score,
            identical: replay.identical,
        };
        if !args.json {
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
        lines.push(line);
    }
    let report = RangeReport {
        from,
        to,
        queue: args.queue.clone(),
        what_if,
        identical_rounds: lines.iter().filter(|l| l.identical).count(),
        rounds: lines,
        stored: stored_acc.finish(),
        replay: replay_acc.finish(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render_totals(&report));
    }
    Ok(())
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
    out.push_str(&format!(
        "{:<24} {:>12} {:>12}\n",
        "totals", "stored", "replay"
    ));
    let (s, p) = (&r.stored, &r.replay);
    let line = |out: &mut String, name: &str, a: String, b: String| {
        let mark = if a != b { "  *" } else { "" };
        out.push_str(&format!("{name:<24} {a:>12} {b:>12}{mark}\n"));
    };
    line(
        &mut out,
        "players pooled",
        s.players.to_string(),
        p.players.to_string(),
    );
    line(
        &mut out,
        "matches",
        s.matches.to_string(),
        p.matches.to_string(),
    );
    line(
        &mut out,
        "matched",
        s.matched.to_string(),
        p.matched.to_string(),
    );
    line(
        &mut out,
        "left over",
        s.left_over.to_string(),
        p.left_over.to_string(),
    );
    line(
        &mut out,
        "rejected",
        s.rejected.to_string(),
        p.rejected.to_string(),
    );
    let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.5}"));
    line(
        &mut out,
        "mean round score",
        num(s.mean_round_score),
        num(p.mean_round_score),
    );
    let factors: std::collections::BTreeSet<&String> =
        s.factors.keys().chain(p.factors.keys()).collect();
    for f in factors {
        line(
            &mut out,
            &format!("  {f}"),
            num(s.factors.get(f).copied()),
            num(p.factors.get(f).copied()),
        );
    }
    let wait = |t: &Totals, pick: fn(&Waits) -> f64| {
        t.waits
            .as_ref()
            .map_or("-".to_string(), |w| format!("{:.1}", pick(w)))
    };
    line(
        &mut out,
        "wait p50 s",
        wait(s, |w| w.p50),
        wait(p, |w| w.p50),
    );
    line(
        &mut out,
        "wait p90 s",
        wait(s, |w| w.p90),
        wait(p, |w| w.p90),
    );
    line(
        &mut out,
        "wait max s",
        wait(s, |w| w.max),
        wait(p, |w| w.max),
    );
    out
}
