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
//! budget come from `round_snapshots` and `rounds`. By default the
//! replay uses the stored budget: a round solved with `round.restarts` (deterministic)
//! replays to the identical matches; a time budget replays with the same time, which
//! gives a similar but not necessarily identical round. `--config` (the file's queue of
//! the same name) and `--set` (one key of the queue's config) make it a what-if; filters,
//! avoids and floors are keys like the others (`--set queue.avoids.scope=team`). The
//! stored pool holds each player's attributes and newest avoids (up to the round's
//! `avoids.max_per_player`); a what-if with a smaller limit keeps each player's newest
//! that many.
//! `--write-pool` / `--write-config` write the round as files `matchmaker optimize
//! --pool FILE --config FILE` reads.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

use crate::config::{Config, QueueConfig};
use crate::daemon::round::solve_rejecting_malformed;
use crate::db::{self, BudgetRecord, StoredRound};
use crate::ops::require_ops_database;
use matchmaker_optimizer::{
    self as optimizer, Budget, LeftOverKind, Pool, RoundOutcome, SolveOptions,
};

/// The what-if of a replay: each `None` or empty keeps what the round stored.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// The queue of the same name in this config file instead of the stored one.
    pub config: Option<PathBuf>,
    /// Keys of the queue's config, `queue.KEY=VALUE`, applied after `config`.
    pub set: Vec<String>,
    /// A wall-clock budget instead of the stored one.
    pub budget: Option<Duration>,
    /// Exactly this many restarts instead of the stored budget.
    pub restarts: Option<u64>,
    /// Solver threads (default: the stored round's).
    pub threads: Option<usize>,
}

/// What a replay needs before it starts: a login that reads the tables, this binary's
/// schema and, for a window of one queue, a queue the database knows.
pub async fn require_replay(db: &PgPool, queue: Option<&str>) -> anyhow::Result<()> {
    require_ops_database(db, "replay").await?;
    if let Some(queue) = queue {
        db::queues::check_known_queue(db, queue).await??;
    }
    Ok(())
}

/// Round `round_id` loaded and re-solved with the what-if of `options`; `on_loaded`
/// sees the stored round and the queue config the replay uses before the solve (to
/// write them as files).
pub async fn replay_stored_round(
    db: &PgPool,
    round_id: i64,
    options: &ReplayOptions,
    on_loaded: impl FnOnce(&StoredRound, &QueueConfig) -> anyhow::Result<()>,
) -> anyhow::Result<Replay> {
    let stored = load(db, round_id).await?;
    let config = effective_config(&stored, options)?;
    on_loaded(&stored, &config)?;
    let (replay, _) = replay_off_runtime(stored, config, options).await?;
    Ok(replay)
}

/// [`replay_round`] on a blocking thread (the solve is CPU work); the stored round comes
/// back with the replay.
async fn replay_off_runtime(
    stored: StoredRound,
    config: QueueConfig,
    options: &ReplayOptions,
) -> anyhow::Result<(Replay, StoredRound)> {
    let options = options.clone();
    tokio::task::spawn_blocking(move || {
        replay_round(&stored, &config, &options).map(|replay| (replay, stored))
    })
    .await?
}

/// Load round `round_id` with its snapshot.
pub async fn load(db: &PgPool, round_id: i64) -> anyhow::Result<StoredRound> {
    db::load_round(db, round_id)
        .await?
        .with_context(|| format!("no round {round_id}"))
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
    /// How its two-team matches were predicted to go.
    pub predictions: Predictions,
}

/// A team predicted to win at this chance or more makes a match lopsided; the favourite
/// of a lopsided match winning is a stomp (the report's threshold).
pub const LOPSIDED: f64 = 0.7;

/// How a side's two-team matches were predicted to go. Both sides are predicted by the
/// stored round's win model (its rating or predicted-fairness model), so that a what-if
/// is judged by the predictor the round had, not by one it changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Predictions {
    /// Two-team matches with a prediction.
    pub matches: usize,
    /// Their gaps of the first team's predicted chance from 50%, summed.
    pub gap_sum: f64,
    /// Matches with a team predicted at [`LOPSIDED`] or more.
    pub lopsided: usize,
    /// The stomps the predictions expect: each lopsided match's favourite's chance, summed.
    pub expected_stomps: f64,
}

impl Predictions {
    /// The predictions of `matches` (teams of player ids) from the players' skills in
    /// `pool`.
    pub fn of<'a>(
        pool: &Pool,
        matches: impl Iterator<Item = &'a [Vec<String>]>,
        model: db::WinModel,
    ) -> Predictions {
        let skills: BTreeMap<&str, (f64, f64)> = pool
            .players
            .iter()
            .map(|p| (p.id.as_str(), model.rating(p.skill, p.skill_sigma)))
            .collect();
        let mut out = Predictions::default();
        for teams in matches.filter(|t| t.len() == 2) {
            let Some(chances) = model.predict(teams, |p| skills.get(p).copied()) else {
                continue;
            };
            let first = chances[0];
            let favourite = first.max(1.0 - first);
            out.matches += 1;
            out.gap_sum += (first - 0.5).abs();
            if favourite >= LOPSIDED {
                out.lopsided += 1;
                out.expected_stomps += favourite;
            }
        }
        out
    }

    fn add(&mut self, other: &Predictions) {
        self.matches += other.matches;
        self.gap_sum += other.gap_sum;
        self.lopsided += other.lopsided;
        self.expected_stomps += other.expected_stomps;
    }

    /// The mean gap of the predicted chance from 50% (0: every match a coin flip).
    pub fn mean_gap(&self) -> Option<f64> {
        (self.matches > 0).then(|| self.gap_sum / self.matches as f64)
    }
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

/// The queue config the replay uses: the stored one, or the what-if.
pub fn effective_config(stored: &StoredRound, args: &ReplayOptions) -> anyhow::Result<QueueConfig> {
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
    args: &ReplayOptions,
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
    let mut pool = stored.pool.clone();
    // A player's avoids are stored newest first: a smaller limit keeps the newest.
    for p in &mut pool.players {
        p.avoids.truncate(config.model.avoids.max_per_player);
    }
    let started = std::time::Instant::now();
    let (outcome, malformed, pool) = solve_rejecting_malformed(pool, &config.model, &options)
        .map_err(|e| {
            anyhow::anyhow!(
                "round {}: the core refused the replay: {e}",
                stored.round_id
            )
        })?;
    let mut left_over = optimizer::explain_left_over(&pool, &config.model, &outcome)?;
    // Placed on the servers the round saw, as the round was.
    let outcome = match &stored.servers {
        Some(supply) if config.servers.as_ref().is_some_and(|s| s.required) => {
            let placed =
                optimizer::servers::place_on_servers(&pool, &config.model, outcome, supply)?;
            left_over.extend(placed.left_over);
            placed.outcome
        }
        _ => outcome,
    };
    let solve_ms = started.elapsed().as_secs_f64() * 1000.0;

    let predictor =
        crate::daemon::round::win_model(&effective_config(stored, &ReplayOptions::default())?);
    let mut stored_side = stored_side(stored);
    stored_side.predictions = Predictions::of(
        &stored.pool,
        stored.matches.iter().map(|m| m.teams.as_slice()),
        predictor,
    );
    let mut replay_side = replay_side(
        &stored.pool,
        &outcome,
        malformed.len(),
        &left_over,
        solve_ms,
    );
    replay_side.predictions = Predictions::of(
        &stored.pool,
        outcome.matches.iter().map(|m| m.teams.as_slice()),
        predictor,
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

/// The stored round's side of the comparison: what the round committed.
pub fn stored_side(s: &StoredRound) -> Side {
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
        predictions: Predictions::default(),
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
        predictions: Predictions::default(),
    }
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
    /// How the two-team matches were predicted to go.
    pub predictions: Predictions,
    /// The stored side only: the results reported for its matches.
    pub results: Option<Observed>,
}

/// The reported results of stored matches, counted as the report counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Observed {
    /// Two-team matches with a result.
    pub reported: usize,
    /// Of those with a prediction: lopsided ones, and those the favourite won.
    pub lopsided: usize,
    pub stomps: usize,
    /// Their squared gaps between prediction and outcome, summed, and how many.
    pub brier_sum: f64,
    pub predicted: usize,
}

impl Observed {
    fn add(&mut self, results: &[db::report::ReportedOutcome]) {
        for r in results {
            self.reported += 1;
            let Some(p) = r.predicted else { continue };
            self.predicted += 1;
            let outcome = r.outcome();
            self.brier_sum += (p - outcome).powi(2);
            if p.max(1.0 - p) >= LOPSIDED {
                self.lopsided += 1;
                let favourite_won = if p >= 0.5 {
                    outcome == 1.0
                } else {
                    outcome == 0.0
                };
                self.stomps += usize::from(favourite_won);
            }
        }
    }

    /// The Brier score (0.25: a coin flip's).
    pub fn brier(&self) -> Option<f64> {
        (self.predicted > 0).then(|| self.brier_sum / self.predicted as f64)
    }
}

/// The replay of many rounds.
#[derive(Debug, Clone, Serialize)]
pub struct RangeReport {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub queue: Option<String>,
    pub what_if: Vec<String>,
    pub rounds: Vec<RangeLine>,
    pub identical_rounds: usize,
    pub stored: Totals,
    pub replay: Totals,
}

/// One round of a range.
#[derive(Debug, Clone, Serialize)]
pub struct RangeLine {
    pub round_id: i64,
    pub queue: String,
    pub pool: usize,
    pub stored_matched: usize,
    pub replay_matched: usize,
    pub stored_score: Option<f64>,
    pub replay_score: Option<f64>,
    pub identical: bool,
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
        self.totals.predictions.add(&side.predictions);
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

/// Replay every round with a snapshot committed in `[from, to)` (of `queue` if given),
/// calling `on_round` after each; the totals of both sides.
pub async fn replay_range(
    db: &PgPool,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    queue: Option<&str>,
    args: &ReplayOptions,
    mut on_round: impl FnMut(&RangeLine),
) -> anyhow::Result<RangeReport> {
    if from >= to {
        bail!("--from ({from}) must be before --to ({to})");
    }
    let ids = db::rounds_between(db, from, to, queue).await?;
    if ids.is_empty() {
        bail!(
            "no round with a snapshot was committed between {from} and {to}{}",
            queue.map(|q| format!(" in queue {q}")).unwrap_or_default()
        );
    }
    let (mut stored_acc, mut replay_acc) = (Acc::default(), Acc::default());
    let mut lines = Vec::new();
    let mut what_if = Vec::new();
    for id in ids {
        let stored = load(db, id).await?;
        let config = effective_config(&stored, args)?;
        let (replay, stored) = replay_off_runtime(stored, config, args).await?;
        let reported = db::report::round_results(db, id).await?;
        stored_acc
            .totals
            .results
            .get_or_insert_with(Observed::default)
            .add(&reported);
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
        on_round(&line);
        lines.push(line);
    }
    let report = RangeReport {
        from,
        to,
        queue: queue.map(str::to_string),
        what_if,
        identical_rounds: lines.iter().filter(|l| l.identical).count(),
        rounds: lines,
        stored: stored_acc.finish(),
        replay: replay_acc.finish(),
    };
    Ok(report)
}
