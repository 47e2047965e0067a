//! The daemon's Prometheus metrics: names, descriptions, buckets, and the few functions
//! the daemon's shell calls to record them (the core records nothing).
//!
//! Recorded through the `metrics` facade; `matchmaker run --metrics-addr` installs the
//! Prometheus recorder ([`install_recorder`]) and serves its text on `/metrics`. Without a
//! recorder (the in-process tests, the other subcommands) every call here is a no-op.
//!
//! Queue gauges that only the queue's leader knows (pool size, seconds to the next round)
//! are NaN on a replica that does not lead the queue: `max by (queue)` over the replicas
//! gives the leader's figure.

use std::collections::BTreeMap;

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};

use super::cores::{CoreGrant, SolverCores};
use super::outcome::{RoundError, RoundReport};
use crate::db::{CommitReport, DbError};

pub const ROUNDS: &str = "matchmaker_rounds_total";
pub const ROUND_PHASE: &str = "matchmaker_round_phase_duration_seconds";
pub const ROUND_DURATION: &str = "matchmaker_round_duration_seconds";
pub const POOL_SIZE: &str = "matchmaker_pool_size";
pub const MATCHES: &str = "matchmaker_matches_total";
pub const MATCHED: &str = "matchmaker_players_matched_total";
pub const LEFT_OVER: &str = "matchmaker_players_left_over_total";
pub const LEFT_OVER_BY_REASON: &str = "matchmaker_players_left_over_by_reason_total";
pub const REJECTED: &str = "matchmaker_players_rejected_total";
pub const DROPPED_BY_CANCEL: &str = "matchmaker_players_dropped_by_cancel_total";
pub const EXPIRED: &str = "matchmaker_entries_expired_total";
pub const PARTY_CLOSED: &str = "matchmaker_entries_party_closed_total";
pub const ENQUEUED: &str = "matchmaker_entries_enqueued_total";
pub const WAIT: &str = "matchmaker_match_wait_seconds";
pub const MATCH_SCORE: &str = "matchmaker_match_score";
pub const ROUND_SCORE: &str = "matchmaker_round_score";
pub const FACTOR_AVERAGE: &str = "matchmaker_factor_score_average";
pub const LEASES_HELD: &str = "matchmaker_leases_held";
pub const REPLICAS_LIVE: &str = "matchmaker_replicas_live";
pub const LEASE_SHARE: &str = "matchmaker_lease_share";
pub const HAND_OVERS: &str = "matchmaker_lease_hand_overs_total";
pub const ERRORS: &str = "matchmaker_errors_total";
pub const NEXT_ROUND: &str = "matchmaker_next_round_in_seconds";
pub const CONFIG_RELOAD_OK: &str = "matchmaker_config_last_reload_successful";
pub const BUILD_INFO: &str = "matchmaker_build_info";
pub const SOLVER_CORES_BUSY: &str = "matchmaker_solver_cores_busy";
pub const SOLVER_CORES: &str = "matchmaker_solver_cores";
pub const SOLVES_BEYOND_BUDGET: &str = "matchmaker_solves_beyond_core_budget_total";
pub const READY_CHECKS: &str = "matchmaker_ready_checks_total";
pub const READY_ANSWERS: &str = "matchmaker_ready_check_answers_total";
pub const ACCEPT_TIME: &str = "matchmaker_ready_check_accept_seconds";
pub const PENDING_MATCHES: &str = "matchmaker_pending_matches";
pub const NOTIFY_QUEUE_USAGE: &str = "matchmaker_notification_queue_usage";
pub const RESULTS_APPLIED: &str = "matchmaker_results_applied_total";
pub const SERVERS: &str = "matchmaker_servers";
pub const NO_SERVER_MATCHES: &str = "matchmaker_no_server_matches_total";
pub const SERVERS_ALLOCATED: &str = "matchmaker_servers_allocated_total";
pub const SERVER_IDLE: &str = "matchmaker_server_idle_seconds";

/// Seconds: a snapshot or commit takes milliseconds, a solve up to its budget (seconds).
const PHASE_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Seconds from enqueue to match: a round every few minutes, max waits of minutes.
const WAIT_BUCKETS: &[f64] = &[
    1.0, 5.0, 10.0, 20.0, 30.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0, 900.0, 1800.0, 3600.0,
];
/// Match scores in [0, 1]; most good matches score high, so the top is finer.
const SCORE_BUCKETS: &[f64] = &[
    0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.975, 0.99, 1.0,
];

/// What went wrong, as the `kind` label of `matchmaker_errors_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A round failed on the database (connection, timeout, missing table...).
    RoundDb,
    /// The core refused a queue's round (a config problem).
    RoundCore,
    /// The solver's thread panicked.
    SolverThread,
    /// A round was solved but not committed: the lease changed hands meanwhile.
    LeaseLost,
    /// Renewing or taking a lease failed (database).
    Lease,
    /// The enqueue LISTEN connection failed or dropped.
    Listen,
    /// A changed config file was refused; the running config stays.
    ConfigRefused,
    /// Retiring a queue removed from the config failed.
    Retire,
    /// The schema lacks this binary's migrations.
    Schema,
    /// A step was given up while this login's commits waited for the synchronous standby.
    StandbyWait,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::RoundDb => "round_db",
            ErrorKind::RoundCore => "round_core",
            ErrorKind::SolverThread => "solver_thread",
            ErrorKind::LeaseLost => "lease_lost",
            ErrorKind::Lease => "lease",
            ErrorKind::Listen => "listen",
            ErrorKind::ConfigRefused => "config_refused",
            ErrorKind::Retire => "retire",
            ErrorKind::Schema => "schema",
            ErrorKind::StandbyWait => "standby_wait",
        }
    }

    /// The kind of a failed round.
    pub fn of_round(e: &RoundError) -> ErrorKind {
        match e {
            RoundError::Db(DbError::LeaseLost { .. }) => ErrorKind::LeaseLost,
            RoundError::Db(DbError::SchemaBehind { .. }) => ErrorKind::Schema,
            RoundError::Db(_) => ErrorKind::RoundDb,
            RoundError::Core { .. } => ErrorKind::RoundCore,
            RoundError::Join(_) => ErrorKind::SolverThread,
        }
    }
}

/// A solve took its cores (`grant`) from the shared budget.
pub fn record_solver_cores(cores: &SolverCores, grant: &CoreGrant) {
    gauge!(SOLVER_CORES).set(cores.total() as f64);
    gauge!(SOLVER_CORES_BUSY).set(cores.busy() as f64);
    if grant.beyond_budget() {
        counter!(SOLVES_BEYOND_BUDGET).increment(1);
    }
}

/// A solve gave its cores back.
/// Results a leader applied to `pool`'s ratings.
pub fn record_results_applied(pool: &str, rated: usize, refused: usize) {
    let pool = pool.to_string();
    counter!(RESULTS_APPLIED, "pool" => pool.clone(), "outcome" => "rated").increment(rated as u64);
    counter!(RESULTS_APPLIED, "pool" => pool, "outcome" => "refused").increment(refused as u64);
}

pub fn record_solver_cores_released(cores: &SolverCores) {
    gauge!(SOLVER_CORES_BUSY).set(cores.busy() as f64);
}

/// Every kind, so that `rate()` sees each counter from 0 rather than from its first error.
const ALL_KINDS: [ErrorKind; 10] = [
    ErrorKind::RoundDb,
    ErrorKind::RoundCore,
    ErrorKind::SolverThread,
    ErrorKind::LeaseLost,
    ErrorKind::Lease,
    ErrorKind::Listen,
    ErrorKind::ConfigRefused,
    ErrorKind::Retire,
    ErrorKind::Schema,
    ErrorKind::StandbyWait,
];

/// Install the Prometheus recorder as the process's `metrics` recorder and describe every
/// metric. Once per process; the handle renders `/metrics`.
pub fn install_recorder() -> Result<PrometheusHandle, BuildError> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(ROUND_PHASE.into()), PHASE_BUCKETS)?
        .set_buckets_for_metric(Matcher::Full(ROUND_DURATION.into()), PHASE_BUCKETS)?
        .set_buckets_for_metric(Matcher::Full(WAIT.into()), WAIT_BUCKETS)?
        .set_buckets_for_metric(Matcher::Full(SERVER_IDLE.into()), WAIT_BUCKETS)?
        .set_buckets_for_metric(Matcher::Full(MATCH_SCORE.into()), SCORE_BUCKETS)?
        .install_recorder()?;
    describe();
    gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
    for kind in ALL_KINDS {
        counter!(ERRORS, "kind" => kind.as_str()).increment(0);
    }
    Ok(handle)
}

fn describe() {
    describe_gauge!(
        SOLVER_CORES_BUSY,
        "Cores of the shared solver budget granted to solves running now."
    );
    describe_gauge!(
        SOLVER_CORES,
        "Size of the shared solver budget ([daemon] solver_threads)."
    );
    describe_counter!(
        SOLVES_BEYOND_BUDGET,
        "Solves that found every solver core taken and ran on one thread beyond the budget."
    );
    describe_counter!(ROUNDS, "Rounds committed, by queue and trigger.");
    describe_histogram!(
        ROUND_PHASE,
        "Duration of each phase of a committed round (snapshot, solve, commit), seconds."
    );
    describe_histogram!(
        ROUND_DURATION,
        "Duration of a committed round, snapshot to commit, seconds."
    );
    describe_gauge!(
        POOL_SIZE,
        "Players queued, as the queue's leader last counted (NaN on a replica not leading it)."
    );
    describe_counter!(MATCHES, "Matches committed.");
    describe_counter!(MATCHED, "Players matched by committed rounds.");
    describe_counter!(
        LEFT_OVER,
        "Players a committed round left queued for a later round."
    );
    describe_counter!(
        LEFT_OVER_BY_REASON,
        "Players a committed round left queued, by the reason kind queue_entries.left_over \
         holds (no_valid_match, no_host, outscored, filtered, avoided, floor, ...)."
    );
    describe_counter!(
        REJECTED,
        "Entries rejected by a round (unusable for the queue), with the reason in the table."
    );
    describe_counter!(
        DROPPED_BY_CANCEL,
        "Players whose match was dropped at commit because a match-mate left during the solve."
    );
    describe_counter!(
        EXPIRED,
        "Queued entries expired by the leader (no keep_alive within the ticket TTL)."
    );
    describe_counter!(
        PARTY_CLOSED,
        "Queued entries closed because a party member left the queue."
    );
    describe_counter!(
        ENQUEUED,
        "Entries seen entering the queue, counted by the queue's leader at each look."
    );
    describe_histogram!(
        WAIT,
        "Matched players' wait from enqueue to match, seconds."
    );
    describe_histogram!(MATCH_SCORE, "Score of each committed match, 0 to 1.");
    describe_gauge!(
        ROUND_SCORE,
        "Score of the queue's last committed round, 0 to 1."
    );
    describe_gauge!(
        FACTOR_AVERAGE,
        "Average score of each factor over the matches of the queue's last round, 0 to 1."
    );
    describe_gauge!(
        LEASES_HELD,
        "1 while this replica holds the queue's leader lease."
    );
    describe_gauge!(
        REPLICAS_LIVE,
        "Live replicas (unexpired heartbeats) this replica counted at its last look."
    );
    describe_gauge!(
        LEASE_SHARE,
        "How many queues this replica should lead: its share of the queues among the live \
         replicas."
    );
    describe_counter!(
        HAND_OVERS,
        "Leases this replica gave up between rounds to a replica below its share."
    );
    describe_counter!(
        ERRORS,
        "Errors by kind; the log has each one with its cause."
    );
    describe_gauge!(
        NEXT_ROUND,
        "Seconds until the queue's next possible round as the countdown shows it (0: the \
         tick has passed and the round waits only for players; NaN: unknown, or not \
         leading the queue)."
    );
    describe_gauge!(
        CONFIG_RELOAD_OK,
        "1 if the last config reload was applied (or none was tried), 0 if it was refused."
    );
    describe_gauge!(BUILD_INFO, "Always 1; the version in its label.");
    describe_counter!(
        RESULTS_APPLIED,
        "Reported results applied to the ratings of a rating pool, by outcome (rated, \
         refused: the model could not rate it)."
    );
    describe_gauge!(
        SERVERS,
        "Game servers per region and state (ready, silent: ready but not heard from within \
         the ttl, allocated), as the leader of a queue that requires servers last read them."
    );
    describe_counter!(
        NO_SERVER_MATCHES,
        "Matches a round formed but could not place for want of a ready game server (their \
         players stay queued)."
    );
    describe_counter!(
        SERVERS_ALLOCATED,
        "Game servers allocated to new matches by round commits."
    );
    describe_histogram!(
        SERVER_IDLE,
        "Seconds from a game server becoming free (server_ready) to its allocation."
    );
    describe_counter!(
        READY_CHECKS,
        "Ready checks resolved, by queue and outcome (ready, cancelled)."
    );
    describe_counter!(
        READY_ANSWERS,
        "Players of resolved ready checks by answer (accepted, declined, unanswered): the \
         accept rate is accepted over their sum."
    );
    describe_histogram!(
        ACCEPT_TIME,
        "Seconds from a match to each player's accept, of resolved ready checks."
    );
    describe_gauge!(
        PENDING_MATCHES,
        "Matches waiting for their ready check, as the queue's leader last counted them."
    );
    describe_gauge!(
        NOTIFY_QUEUE_USAGE,
        "How full PostgreSQL's notification queue is (0-1), at the leadership loop's last \
         look; past matchmaker.notify_queue_limit (default 0.5) no notification is sent."
    );
}

/// A resolution of a queue's ready checks.
pub fn record_ready_checks(queue: &str, r: &crate::db::ready_check::Resolved) {
    let q = queue.to_string();
    counter!(READY_CHECKS, "queue" => q.clone(), "outcome" => "ready")
        .increment(r.ready.len() as u64);
    counter!(READY_CHECKS, "queue" => q.clone(), "outcome" => "cancelled")
        .increment(r.cancelled.len() as u64);
    for (answer, n) in [
        ("accepted", r.accepted),
        ("declined", r.declined),
        ("unanswered", r.unanswered),
    ] {
        counter!(READY_ANSWERS, "queue" => q.clone(), "answer" => answer).increment(n as u64);
    }
    let accept = histogram!(ACCEPT_TIME, "queue" => q.clone());
    for s in &r.accept_seconds {
        accept.record(*s);
    }
    gauge!(PENDING_MATCHES, "queue" => q).set(r.pending as f64);
}

/// The fleet as a queue's leader read it after its round.
pub fn record_fleet(fleet: &[crate::db::servers::FleetRegion]) {
    for r in fleet {
        for (state, n) in [
            ("ready", r.ready),
            ("silent", r.silent),
            ("allocated", r.allocated),
        ] {
            gauge!(SERVERS, "region" => r.region.clone(), "state" => state).set(n as f64);
        }
    }
}

pub fn record_error(kind: ErrorKind) {
    counter!(ERRORS, "kind" => kind.as_str()).increment(1);
}

/// A committed round: counters and phase histograms.
pub fn record_round(report: &RoundReport) {
    let queue = report.queue.clone();
    counter!(ROUNDS, "queue" => queue.clone(), "trigger" => report.trigger.as_str()).increment(1);
    for (phase, ms) in [
        ("snapshot", report.snapshot_ms),
        ("solve", report.solve_ms),
        ("commit", report.commit_ms),
    ] {
        histogram!(ROUND_PHASE, "queue" => queue.clone(), "phase" => phase).record(ms / 1000.0);
    }
    histogram!(ROUND_DURATION, "queue" => queue.clone()).record(report.elapsed_ms / 1000.0);
    counter!(MATCHES, "queue" => queue.clone()).increment(report.matches as u64);
    counter!(MATCHED, "queue" => queue.clone()).increment(report.matched as u64);
    counter!(LEFT_OVER, "queue" => queue.clone()).increment(report.left_over as u64);
    counter!(REJECTED, "queue" => queue.clone()).increment(report.rejected as u64);
    counter!(DROPPED_BY_CANCEL, "queue" => queue.clone())
        .increment(report.dropped_by_cancel as u64);
}

/// What a round's commit wrote: match scores, waits, the round's score and per-factor
/// means.
pub fn record_commit(queue: &str, commit: &CommitReport) {
    let queue = queue.to_string();
    let scores = histogram!(MATCH_SCORE, "queue" => queue.clone());
    for score in &commit.match_scores {
        scores.record(*score);
    }
    let waits = histogram!(WAIT, "queue" => queue.clone());
    for wait in &commit.wait_seconds {
        waits.record(*wait);
    }
    for (reason, n) in &commit.left_over_by_kind {
        counter!(LEFT_OVER_BY_REASON, "queue" => queue.clone(), "reason" => *reason)
            .increment(*n as u64);
    }
    if let Some(score) = commit.score {
        gauge!(ROUND_SCORE, "queue" => queue.clone()).set(score);
    }
    if commit.no_server_matches > 0 {
        counter!(NO_SERVER_MATCHES, "queue" => queue.clone())
            .increment(commit.no_server_matches as u64);
    }
    if !commit.server_idle_seconds.is_empty() {
        counter!(SERVERS_ALLOCATED, "queue" => queue.clone())
            .increment(commit.server_idle_seconds.len() as u64);
        let idle = histogram!(SERVER_IDLE, "queue" => queue.clone());
        for s in &commit.server_idle_seconds {
            idle.record(*s);
        }
    }
    record_factor_averages(&queue, &commit.factor_averages);
}

fn record_factor_averages(queue: &str, averages: &BTreeMap<String, f64>) {
    for (factor, value) in averages {
        gauge!(FACTOR_AVERAGE, "queue" => queue.to_string(), "factor" => factor.clone())
            .set(*value);
    }
}

/// The queue's pool size as its leader counted it; `None`: not leading (NaN).
pub fn record_pool_size(queue: &str, size: Option<usize>) {
    gauge!(POOL_SIZE, "queue" => queue.to_string()).set(size.map_or(f64::NAN, |s| s as f64));
}

pub fn record_lease(queue: &str, held: bool) {
    gauge!(LEASES_HELD, "queue" => queue.to_string()).set(if held { 1.0 } else { 0.0 });
}

/// The live replicas and this replica's share of the queues, at a look of the leadership
/// loop.
pub fn record_share(replicas: usize, share: usize) {
    gauge!(REPLICAS_LIVE).set(replicas as f64);
    gauge!(LEASE_SHARE).set(share as f64);
}

pub fn record_notification_queue(usage: f64) {
    gauge!(NOTIFY_QUEUE_USAGE).set(usage);
}

pub fn record_hand_over(queue: &str) {
    counter!(HAND_OVERS, "queue" => queue.to_string()).increment(1);
}

pub fn record_tidied(queue: &str, expired: u64, party_closed: u64) {
    counter!(EXPIRED, "queue" => queue.to_string()).increment(expired);
    counter!(PARTY_CLOSED, "queue" => queue.to_string()).increment(party_closed);
}

pub fn record_enqueued(queue: &str, entries: u64) {
    counter!(ENQUEUED, "queue" => queue.to_string()).increment(entries);
}

/// Seconds to the next round; `None`: unknown (NaN).
pub fn record_next_round(queue: &str, seconds: Option<f64>) {
    gauge!(NEXT_ROUND, "queue" => queue.to_string()).set(seconds.unwrap_or(f64::NAN));
}

pub fn record_config_reload(ok: bool) {
    gauge!(CONFIG_RELOAD_OK).set(if ok { 1.0 } else { 0.0 });
}
