//! One round of one queue: snapshot -> solve -> commit, each a separate step so that tests
//! can act between them (e.g. cancel a player while "the solver runs").
//!
//! The solver runs on a blocking thread (it is CPU work, seconds long) and carries the
//! round's tracing span with it. Rows that fail conversion, and players the core rejects
//! or refuses as malformed, are marked rejected with the reason while the rest of the
//! pool is matched.

use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use tracing::Instrument;

use super::clock::Clock;
use super::cores::SolverCores;
use super::countdown;
pub use super::outcome::{RoundError, RoundReport};
use crate::config::QueueConfig;
use crate::db::{self, Lease, RoundRecord, RoundTrigger, Snapshot};
use matchmaker_optimizer::{
    self as optimizer, Pool, PoolError, Rejection, RoundOutcome, SolveOptions,
};

/// After the snapshot.
pub struct PreparedRound {
    pub queue: String,
    pub config: Arc<QueueConfig>,
    /// The config as the round's record stores it.
    pub recorded_config: db::RoundConfig,
    pub trigger: RoundTrigger,
    pub started_at: DateTime<Utc>,
    pub snapshot_at: DateTime<Utc>,
    pub snapshot: Snapshot,
    pub pool: Pool,
    pub rejected: Vec<Rejection>,
    /// The queue's open backfill requests as the core's sessions (none when backfill is
    /// off).
    pub backfill: db::BackfillSessions,
    /// Ready game servers per region, when the queue requires servers.
    pub servers: Option<optimizer::servers::Supply>,
    pub snapshot_ms: f64,
    started: Instant,
}

/// After the solve.
pub struct SolvedRound {
    pub prepared: PreparedRound,
    pub outcome: RoundOutcome,
    /// Conversion failures, malformed players and the core's rejections.
    pub rejected: Vec<Rejection>,
    pub seed: u64,
    pub solve_ms: f64,
    /// What the solver saw, stored with the round for replay and explain (None: an
    /// immediate backfill round, which runs no search).
    pub replay: Option<db::ReplayRecord>,
    /// The backfill requests filled, and why the others were not.
    pub backfill: db::BackfillRecord,
    /// Matches formed but not placed for want of a ready server.
    pub unplaced_matches: usize,
}

/// Runs rounds against one database with one clock, their solves sharing one budget of
/// solver cores (clones share it too: the daemon clones one runner into every queue).
#[derive(Clone)]
pub struct RoundRunner {
    pub db: PgPool,
    pub clock: Arc<dyn Clock>,
    pub cores: SolverCores,
}

impl RoundRunner {
    /// A runner whose solves share this machine's cores.
    pub fn new(db: PgPool, clock: Arc<dyn Clock>) -> Self {
        RoundRunner {
            db,
            clock,
            cores: SolverCores::of_this_machine(),
        }
    }

    /// The same runner with the solves sharing `cores` instead.
    pub fn with_cores(mut self, cores: SolverCores) -> Self {
        self.cores = cores;
        self
    }

    /// The whole round; the lease fences the commit.
    pub async fn run(
        &self,
        queue: &str,
        config: Arc<QueueConfig>,
        trigger: RoundTrigger,
        lease: &Lease,
    ) -> Result<RoundReport, RoundError> {
        let span = tracing::info_span!(
            "round",
            queue,
            trigger = trigger.as_str(),
            term = lease.term
        );
        async {
            // A backfill round keeps the scheduled rounds' countdown as it is.
            if trigger != RoundTrigger::Backfill {
                self.announce(queue, &config, lease).await;
            }
            let prepared = self.prepare(queue, config, trigger).await?;
            let solved = self.solve(prepared).await?;
            self.commit(solved, lease).await
        }
        .instrument(span)
        .await
    }

    /// Show the round as running in the countdown, fenced by `lease`. Only the countdown
    /// depends on it: a failed write is logged and the round goes on (its commit writes
    /// the next countdown, and the leader's next look rewrites the row).
    pub async fn announce(&self, queue: &str, config: &QueueConfig, lease: &Lease) {
        let now = self.clock.now();
        let row = countdown::state_row(queue, config, &countdown::Countdown::round_running(now));
        let written = db::queue_state::write_queue_state_fenced(
            &self.db,
            &row,
            now,
            lease,
            self.clock.lease_now(),
        )
        .await;
        match written {
            Ok(true) => {}
            Ok(false) => tracing::warn!(
                queue,
                "round not shown as running: the lease is no longer held"
            ),
            Err(e) => tracing::warn!(queue, error = %e, "round not shown as running"),
        }
    }

    /// Step 1: the snapshot, converted to the core's pool.
    pub async fn prepare(
        &self,
        queue: &str,
        config: Arc<QueueConfig>,
        trigger: RoundTrigger,
    ) -> Result<PreparedRound, RoundError> {
        let started = Instant::now();
        let started_at = self.clock.now();
        // Results reported since the last round move their players' ratings first: this
        // round plays everyone at their rating as it is now.
        if let Some(rating) = &config.rating {
            let applied =
                super::ratings::apply_results(&self.db, queue, rating, started_at).await?;
            if applied.results > 0 {
                tracing::info!(
                    queue,
                    results = applied.results,
                    refused = applied.refused,
                    "results applied to ratings"
                );
            }
        }
        let limits = db::InputLimits {
            snapshot: db::SnapshotLimits {
                max_players: config.round.max_round_size,
                history_matches: config.history_matches(),
                sit_out_after: config.limits.sit_out_after,
                max_avoids: config.model.avoids.max_per_player,
            },
            backfill: config
                .backfill
                .enabled
                .then(|| db::round_input::BackfillShare {
                    max_fill_share: config.limits.max_fill_share,
                    match_size: config.model.teams * config.model.team_size,
                }),
        };
        let mut input = db::read_round_input(&self.db, queue, limits, started_at).await?;
        let recorded_config = round_config(&config);
        let mut config = config;
        if let Some(rc) = &config.ready_check {
            let failing = db::ready_check::failing_logins(
                &self.db,
                queue,
                rc.isolate_after,
                rc.isolate_share,
                rc.isolate_half_life,
            )
            .await?;
            let isolated =
                super::ready_record::apply(&config, &input.snapshot, &mut input.pool, &failing);
            if let Some(isolated) = isolated {
                tracing::info!(queue, logins = ?failing, "logins failing their ready checks play among themselves");
                config = isolated;
            }
        }
        let servers = match config.servers.as_ref().filter(|s| s.required) {
            Some(s) => Some(db::servers::ready_supply(&self.db, s.ttl).await?),
            None => None,
        };
        let snapshot_at = self.clock.now();
        let snapshot_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(PreparedRound {
            queue: queue.to_string(),
            recorded_config,
            config,
            trigger,
            started_at,
            snapshot_at,
            snapshot: input.snapshot,
            pool: input.pool,
            rejected: input.rejected,
            backfill: input.backfill,
            servers,
            snapshot_ms,
            started,
        })
    }

    /// Step 2: the solver, off the async runtime, within the queue's time budget, on the
    /// cores the shared budget grants it (`round.threads` at most; see `cores`).
    pub async fn solve(&self, mut prepared: PreparedRound) -> Result<SolvedRound, RoundError> {
        let config = prepared.config.clone();
        let seed = config
            .round
            .seed
            .unwrap_or_else(|| derive_seed(&prepared.queue, prepared.started_at));
        let grant = self.cores.grant(config.round.threads);
        super::metrics::record_solver_cores(&self.cores, &grant);
        let options = SolveOptions {
            strategy: config.round.strategy,
            budget: config.round.solve_budget(),
            seed,
            threads: Some(grant.threads()),
            moves_per_restart: config.round.moves_per_restart,
            ..SolveOptions::default()
        };
        let pool = prepared.pool.clone();
        let queue = prepared.queue.clone();
        let backfill_only = prepared.trigger == RoundTrigger::Backfill;
        let sessions = std::mem::take(&mut prepared.backfill.sessions);
        let supply = prepared.servers.clone();
        let span = tracing::Span::current();
        let started = Instant::now();
        let cores = self.cores.clone();
        let result = tokio::task::spawn_blocking(move || {
            span.in_scope(|| {
                // Backfill first: running sessions are short of players now, and a fill
                // is cheap and bounded; the search gets the rest of the pool (and the
                // whole budget), so nobody is both in a fill and in a new match.
                let limits = optimizer::backfill::BackfillLimits {
                    min_score: config.backfill.min_score,
                };
                let filled =
                    optimizer::backfill::fill_sessions(&sessions, &pool, &config.model, &limits);
                let (fills, unfilled, rest) = match filled {
                    Ok(b) => (b.fills, b.unfilled, b.rest),
                    Err(e) => {
                        drop(grant);
                        super::metrics::record_solver_cores_released(&cores);
                        return Err(e);
                    }
                };
                let solved = if backfill_only {
                    Ok((backfill_outcome(&rest, &options, started), Vec::new(), rest))
                } else {
                    solve_rejecting_malformed(rest, &config.model, &options)
                };
                // the cores go back as soon as the search ends (also when it failed)
                drop(grant);
                super::metrics::record_solver_cores_released(&cores);
                let (outcome, malformed, pool) = solved?;
                // After the solve, on the same thread: what `replay` and `explain` need.
                let mut replay = (!backfill_only)
                    .then(|| replay_record(&queue, &config, &options, &pool, &outcome));
                let (outcome, unplaced) = match &supply {
                    Some(supply) if !backfill_only => {
                        let placed = optimizer::servers::place_on_servers(
                            &pool,
                            &config.model,
                            outcome,
                            supply,
                        )?;
                        if let Some(replay) = &mut replay {
                            replay.left_over.extend(placed.left_over);
                            replay.servers = Some(supply.clone());
                        }
                        (placed.outcome, placed.unplaced)
                    }
                    _ => (outcome, 0),
                };
                let solve_ms = started.elapsed().as_secs_f64() * 1000.0;
                Ok::<_, PoolError>((
                    outcome, malformed, replay, solve_ms, fills, unfilled, unplaced,
                ))
            })
        })
        .await?;
        let (outcome, malformed, replay, solve_ms, fills, unfilled, unplaced_matches) = result
            .map_err(|source| RoundError::Core {
                queue: prepared.queue.clone(),
                source,
            })?;
        let requests = &prepared.backfill;
        let backfill = db::BackfillRecord {
            fills: fills
                .into_iter()
                .map(|f| {
                    let (request_id, session_id) = requests.request(&f.session);
                    db::BackfillFill {
                        request_id,
                        session_id,
                        outcome: f.outcome,
                    }
                })
                .collect(),
            unfilled: unfilled
                .into_iter()
                .map(|u| (requests.request(&u.session).0, u.reason))
                // A request the core cannot read is left open with why (it expires with
                // it).
                .chain(requests.unreadable.iter().cloned())
                .collect(),
        };
        let mut rejected = prepared.rejected.clone();
        rejected.extend(malformed);
        rejected.extend(outcome.rejected.iter().cloned());
        Ok(SolvedRound {
            prepared,
            outcome,
            rejected,
            seed,
            solve_ms,
            replay,
            backfill,
            unplaced_matches,
        })
    }

    /// Step 3: the commit, fenced by `lease`.
    pub async fn commit(
        &self,
        solved: SolvedRound,
        lease: &Lease,
    ) -> Result<RoundReport, RoundError> {
        let p = &solved.prepared;
        let committed_at = self.clock.now();
        let next_state = countdown::after_round(&p.queue, &p.config, committed_at);
        let record = RoundRecord::new(
            &p.snapshot,
            p.trigger,
            lease,
            &p.recorded_config,
            &solved.outcome,
            &next_state,
            committed_at,
        )
        .with_lease_now(self.clock.lease_now())
        .with_times(p.started_at, p.snapshot_at, p.snapshot_ms, solved.solve_ms)
        .with_seed(solved.seed)
        .with_rejected(&solved.rejected)
        .with_replay(solved.replay.as_ref())
        .with_backfill(&solved.backfill)
        .with_unplaced_matches(solved.unplaced_matches);
        let report = db::commit_round(&self.db, &record).await?;
        super::metrics::record_commit(&p.queue, &report);
        if p.recorded_config.servers_ttl.is_some() {
            match db::servers::fleet(&self.db).await {
                Ok(fleet) => super::metrics::record_fleet(&fleet),
                Err(e) => tracing::warn!(queue = %p.queue, error = %e, "fleet not read"),
            }
        }
        let report = RoundReport {
            queue: p.queue.clone(),
            trigger: p.trigger,
            round_id: report.round_id,
            players: p.snapshot.entries.len(),
            matches: report.match_count,
            matched: report.matched,
            left_over: report.left_over,
            rejected: report.rejected,
            dropped_by_cancel: report.dropped_by_cancel,
            withdrawn: report.withdrawn,
            backfilled: report.backfilled,
            sat_out: p.snapshot.sat_out,
            score: report.score,
            snapshot_ms: p.snapshot_ms,
            solve_ms: solved.solve_ms,
            commit_ms: report.commit_ms,
            elapsed_ms: p.started.elapsed().as_secs_f64() * 1000.0,
            next_round_at: next_state.next_round_at,
            pooled: pooled_players(&p.snapshot, &solved.outcome, committed_at),
        };
        tracing::info!(
            queue = %report.queue,
            trigger = %report.trigger,
            round_id = report.round_id,
            players = report.players,
            matches = report.matches,
            matched = report.matched,
            left_over = report.left_over,
            rejected = report.rejected,
            dropped_by_cancel = report.dropped_by_cancel,
            withdrawn = report.withdrawn,
            backfilled = report.backfilled,
            sat_out = report.sat_out,
            score = report.score.map(|s| (s * 10_000.0).round() / 10_000.0),
            snapshot_ms = report.snapshot_ms.round(),
            solve_ms = report.solve_ms.round(),
            commit_ms = report.commit_ms.round(),
            elapsed_ms = report.elapsed_ms.round(),
            "round committed"
        );
        super::metrics::record_round(&report);
        Ok(report)
    }
}

/// The queue's config as a round's record stores it.
pub fn round_config(config: &QueueConfig) -> db::RoundConfig {
    db::RoundConfig {
        hash: config.hash(),
        json: config.to_json(),
        history_matches: config.history_matches(),
        ready_timeout: config.ready_check.as_ref().map(|r| r.timeout),
        servers_ttl: config
            .servers
            .as_ref()
            .filter(|s| s.required)
            .map(|s| s.ttl),
        win_model: win_model(config),
    }
}

/// How the queue predicts a match's win probabilities: its rating model on a rated
/// queue, else its predicted-fairness factor.
pub fn win_model(config: &QueueConfig) -> db::WinModel {
    match &config.rating {
        Some(rating) => db::WinModel {
            beta: rating.model().beta,
            default_sigma: rating.initial_uncertainty,
        },
        None => db::WinModel {
            beta: config.model.predicted_fairness.beta,
            default_sigma: config.model.predicted_fairness.default_sigma,
        },
    }
}

/// The round's replay record: the pool the solver was given, the effective config as a
/// config file, the budget, and why each left-over player was not matched.
pub fn replay_record(
    queue: &str,
    config: &QueueConfig,
    options: &SolveOptions,
    pool: &Pool,
    outcome: &RoundOutcome,
) -> db::ReplayRecord {
    let left_over =
        optimizer::explain_left_over(pool, &config.model, outcome).unwrap_or_else(|e| {
            // The pool was just solved, so this is not expected; the round still commits.
            tracing::warn!(error = %e, "left-over players not explained");
            Vec::new()
        });
    let (pool_lz4, pool_json_bytes) = db::round_snapshot::compress_pool(pool);
    db::ReplayRecord {
        pool_lz4,
        pool_players: pool.players.len(),
        pool_json_bytes,
        config_toml: config.to_toml(queue),
        budget: db::BudgetRecord::new(options.budget, options.moves_per_restart),
        strategy: options.strategy,
        threads: options.threads,
        left_over,
        servers: None,
    }
}

/// The outcome of an immediate backfill round: no search, every player left over.
fn backfill_outcome(rest: &Pool, options: &SolveOptions, started: Instant) -> RoundOutcome {
    let elapsed = started.elapsed();
    RoundOutcome {
        matches: Vec::new(),
        unmatched: rest.players.iter().map(|p| p.id.clone()).collect(),
        rejected: Vec::new(),
        score: 0.0,
        stats: optimizer::SolveStats {
            strategy: "backfill".to_string(),
            elapsed,
            elapsed_ms: elapsed.as_secs_f64() * 1e3,
            restarts: 0,
            moves_evaluated: 0,
            moves_rejected_by_bound: 0,
            moves_per_second: 0.0,
            time_to_best: elapsed,
            time_to_best_ms: elapsed.as_secs_f64() * 1e3,
            stop_reason: optimizer::StopReason::Exhausted,
            threads: 1,
            seed: options.seed,
            delta_checks: 0,
        },
    }
}

/// Solve; a player the core refuses as malformed is rejected with the core's message and
/// the round is solved again without them (never the whole round lost for one row).
/// Returns the pool the successful solve was given.
pub fn solve_rejecting_malformed(
    mut pool: Pool,
    model: &optimizer::QueueModel,
    options: &SolveOptions,
) -> Result<(RoundOutcome, Vec<Rejection>, Pool), PoolError> {
    let mut rejected = Vec::new();
    loop {
        let (id, reason) = match optimizer::solve(&pool, model, options) {
            Ok(outcome) => return Ok((outcome, rejected, pool)),
            Err(PoolError::Player { id, field, problem }) => (id, format!("{field}: {problem}")),
            Err(PoolError::PlayerIndex { index, problem }) if index < pool.players.len() => {
                (pool.players[index].id.clone(), format!("id: {problem}"))
            }
            Err(PoolError::History { index, problem }) if !pool.history.is_empty() => {
                tracing::warn!(index, %problem, "history refused by the core; solving without it");
                pool.history.clear();
                continue;
            }
            Err(other) => return Err(other),
        };
        let Some(party) = pool
            .players
            .iter()
            .find(|p| p.id == id)
            .map(|p| p.party.clone())
        else {
            // The core named a player we do not have: do not loop forever.
            return Err(PoolError::Player {
                id,
                field: "id",
                problem: reason,
            });
        };
        pool.players.retain(|p| p.id != id);
        if let Some(party) = party {
            // Never the rest of a party without the member: it sits out with them.
            let broken = [optimizer::BrokenParty {
                party,
                member: id.clone(),
                reason: reason.clone(),
            }];
            rejected.extend(optimizer::reject_parties(&mut pool.players, &broken));
        }
        rejected.push(Rejection { id, reason });
    }
}

/// A round's seed when the config fixes none: from the queue and the round's start time.
fn derive_seed(queue: &str, started_at: DateTime<Utc>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in queue.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h ^ started_at.timestamp_micros() as u64
}

/// The round's pooled players, for the wait estimate (`wait_estimate`): entry, party,
/// skill, region, whether the round matched them and how long they had waited.
fn pooled_players(
    snapshot: &db::Snapshot,
    outcome: &matchmaker_optimizer::RoundOutcome,
    at: DateTime<Utc>,
) -> Vec<super::wait_estimate::WaitObservation> {
    let matched: std::collections::HashSet<&str> = outcome
        .matches
        .iter()
        .flat_map(|m| m.teams.iter().flatten())
        .map(String::as_str)
        .collect();
    snapshot
        .entries
        .iter()
        .map(|e| super::wait_estimate::WaitObservation {
            entry_id: e.entry_id,
            owner: e.owner.clone(),
            party: e.party_key,
            skill: e.skill,
            region: super::wait_estimate::best_region(&e.latencies),
            matched: matched.contains(e.player_id.as_str()),
            waited_s: ((at - e.enqueued_at).num_milliseconds() as f64 / 1000.0).max(0.0),
        })
        .collect()
}
