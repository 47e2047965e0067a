//! One queue's worker: keeps the lease, looks at the pool, decides, runs the round, and
//! keeps the countdown in `queue_state` up to date. [`QueueWorker::step`] is one look at
//! the queue with the clock's current time; the daemon calls it on wake-ups (timer,
//! NOTIFY, config change), tests call it directly with a manual clock.

use std::sync::Arc;

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::countdown::{self, Countdown};
use super::lease::{LeaseHandle, keep_lease};
use super::metrics::{self, ErrorKind};
use super::outcome::{RoundError, RoundReport};
use super::round::RoundRunner;
use super::trigger::{Decision, QueueView, decide};
use crate::config::QueueConfig;
use crate::db::{self, DbError, Lease, QueueStateRow, RoundTrigger, WaitingFor};

/// What one step did.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// Another replica holds the lease.
    Standby,
    Ran(RoundReport),
    /// The countdown the step wrote (see `trigger::Decision::Wait`).
    Waiting {
        next_round_at: Option<DateTime<Utc>>,
        waiting_for: WaitingFor,
        players_missing: usize,
        latest_round_at: Option<DateTime<Utc>>,
    },
}

impl StepOutcome {
    /// When to look again at the latest (None: only an arrival or a change can start a
    /// round): right after a round; while waiting, the next round's moment while it lies
    /// ahead, else the latest round's.
    pub fn wake_at(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match *self {
            StepOutcome::Standby => None,
            StepOutcome::Ran(_) => Some(now),
            StepOutcome::Waiting {
                next_round_at,
                latest_round_at,
                ..
            } => next_round_at.filter(|at| *at > now).or(latest_round_at),
        }
    }
}

pub struct QueueWorker {
    pub queue: String,
    pub holder: String,
    runner: RoundRunner,
    lease_ttl: Duration,
    lease: LeaseHandle,
    config: Arc<QueueConfig>,
    leadership: Leadership,
    /// The config hash we last published in `queues` under our current term.
    published: Option<String>,
    last_tidy: Option<std::time::Instant>,
    /// The pooled players of this leader's recent rounds, for the wait estimate.
    wait_model: super::wait_estimate::WaitModel,
    /// When this worker last ran an immediate backfill round (`backfill.spacing`).
    last_backfill_round: Option<DateTime<Utc>>,
}

/// Whether this replica leads the queue. Every change of state goes through
/// [`QueueWorker::enter_term`] (Following -> Leading, or one term to the next) and
/// [`QueueWorker::lose_lease`] / [`QueueWorker::stand_by`] (Leading -> Following).
enum Leadership {
    /// Another replica holds the lease (or nobody took it yet).
    Following,
    Leading(Box<Term>),
}

impl Leadership {
    /// The term this look leads: a leader's step enters it ([`QueueWorker::enter_term`])
    /// before anything reads it.
    fn term(&mut self) -> &mut Term {
        match self {
            Leadership::Leading(term) => term,
            Leadership::Following => unreachable!("a leader's step runs in its term"),
        }
    }
}

/// One term of leadership: the countdown this leader continues and what it learnt of
/// the pool. A new term starts from what the last leader left in `queue_state`.
struct Term {
    term: i64,
    next_due: Option<DateTime<Utc>>,
    last_round_at: Option<DateTime<Utc>>,
    /// Players enqueued up to this instant have been in a round: the start of this
    /// leader's last round, or the last round a new term found committed (None: no
    /// round yet). Only a player enqueued since can start a max-wait round before the
    /// tick (see `trigger`).
    pooled_until: Option<DateTime<Utc>>,
    pool_after_last_round: Option<usize>,
    last_written: Option<QueueStateRow>,
    last_pool_size: Option<usize>,
    /// The highest entry id seen by this leader's enqueue count (see `db::entries_since`).
    enqueue_mark: Option<i64>,
}

/// How often a leader expires tickets and closes broken parties between rounds.
const TIDY_EVERY: Duration = Duration::from_secs(1);

impl QueueWorker {
    pub fn new(
        queue: &str,
        holder: &str,
        runner: RoundRunner,
        config: Arc<QueueConfig>,
        lease_ttl: Duration,
    ) -> Self {
        QueueWorker {
            queue: queue.to_string(),
            holder: holder.to_string(),
            runner,
            lease_ttl,
            lease: LeaseHandle::default(),
            config,
            leadership: Leadership::Following,
            published: None,
            last_tidy: None,
            wait_model: Default::default(),
            last_backfill_round: None,
        }
    }

    /// Expire tickets and close broken parties of this queue (see `db::tickets`).
    async fn tidy(&mut self) -> Result<(), DbError> {
        let tidied = db::tickets::tidy_queue(&self.runner.db, &self.queue).await?;
        let expired = db::backfill::expire_backfills(&self.runner.db, &self.queue).await?;
        if expired > 0 {
            tracing::info!(queue = %self.queue, expired, "backfill requests expired");
        }
        self.last_tidy = Some(std::time::Instant::now());
        metrics::record_tidied(&self.queue, tidied.expired, tidied.party_closed);
        if tidied != db::tickets::Tidied::default() {
            tracing::info!(
                queue = %self.queue,
                expired = tidied.expired,
                party_closed = tidied.party_closed,
                "tickets closed"
            );
        }
        Ok(())
    }

    /// Resolve this queue's decided ready checks (see `db::ready_check`).
    async fn resolve_ready_checks(&self, lease: &Lease) -> Result<(), DbError> {
        let rules = db::ready_check::ReadyCheckRules {
            history_matches: self.config.history_matches(),
            decline_cooldown: self.config.ready_check.as_ref().map(|r| r.decline_cooldown),
            record_half_life: self
                .config
                .ready_check
                .as_ref()
                .map_or(Duration::from_secs(600), |r| r.isolate_half_life),
        };
        let resolved = db::ready_check::resolve_ready_checks(
            &self.runner.db,
            &self.queue,
            lease,
            self.runner.clock.lease_now(),
            rules,
        )
        .await?;
        metrics::record_ready_checks(&self.queue, &resolved);
        if !resolved.ready.is_empty() {
            tracing::info!(queue = %self.queue, matches = ?resolved.ready, "matches ready: every player accepted");
        }
        for c in &resolved.cancelled {
            tracing::info!(
                queue = %self.queue,
                match_id = c.match_id,
                reason = %c.reason,
                requeued = c.requeued.len(),
                declined = c.declined.len(),
                "match cancelled by its ready check"
            );
        }
        Ok(())
    }

    /// Learn from a scheduled round's pool and publish the wait estimate's model.
    async fn learn_waits(&mut self, report: &RoundReport) -> Result<(), DbError> {
        let now = self.runner.clock.now();
        let follow_up = self.wait_model.observe(now, report.pooled.clone());
        let interval_s = report
            .next_round_at
            .map(|at| (at - now).num_milliseconds() as f64 / 1000.0)
            .filter(|s| *s > 0.0)
            .unwrap_or(120.0);
        let max_rounds = (self.config.model.max_wait.as_secs_f64() / interval_s).max(1.0);
        if let Some((model, median)) = self.wait_model.to_json(interval_s, max_rounds) {
            db::queue_state::write_wait_model(&self.runner.db, &self.queue, &model, median).await?;
        }
        if let Some(follow_up) = follow_up {
            let follow_up = serde_json::to_value(follow_up).unwrap_or_default();
            db::queue_state::write_wait_follow_up(&self.runner.db, report.round_id, &follow_up)
                .await?;
        }
        Ok(())
    }

    pub fn lease_handle(&self) -> LeaseHandle {
        self.lease.clone()
    }

    /// Use `handle` for this queue's lease ([`LeaseHandle::balanced`] under `daemon::run`:
    /// the replica's leadership loop decides which queues it takes).
    pub fn with_lease_handle(mut self, handle: LeaseHandle) -> Self {
        self.lease = handle;
        self
    }

    pub fn config(&self) -> &Arc<QueueConfig> {
        &self.config
    }

    /// Renew or take the lease now (the daemon also does this on a timer).
    pub async fn keep_lease(&self) -> Result<Option<Lease>, DbError> {
        let now = self.runner.clock.lease_now();
        keep_lease(
            &self.runner.db,
            &self.lease,
            &self.queue,
            &self.holder,
            self.lease_ttl,
            now,
        )
        .await
    }

    /// A new config for this queue; applies from the next round. The countdown follows a
    /// schedule change at once (next tick counted from the last round).
    pub fn set_config(&mut self, config: Arc<QueueConfig>) {
        if config.hash() == self.config.hash() {
            return;
        }
        self.config = config;
        if let Leadership::Leading(term) = &mut self.leadership {
            let from = term
                .last_round_at
                .unwrap_or_else(|| self.runner.clock.now());
            term.next_due = Some(countdown::next_tick(&self.config, from));
            term.last_written = None;
            term.pool_after_last_round = None;
        }
    }

    /// One look at the queue: lease, pool, decision, and the round if one is due.
    pub async fn step(&mut self) -> Result<StepOutcome, RoundError> {
        let handle = self.lease.clone();
        let _step = handle.0.step.lock().await;
        if handle.hand_over_requested() {
            // Between rounds by definition: give the queue to a replica below its share.
            let now = self.runner.clock.lease_now();
            if handle
                .hand_over_locked(&self.runner.db, now)
                .await?
                .is_some()
            {
                super::leadership::notify(&self.runner.db, &self.holder).await;
            }
            self.stand_by();
            return Ok(StepOutcome::Standby);
        }
        let Some(lease) = self.keep_lease().await? else {
            self.stand_by();
            return Ok(StepOutcome::Standby);
        };
        match self.lead(&lease).await {
            Err(e) if e.is_lease_lost() => {
                self.lose_lease(&e).await;
                Ok(StepOutcome::Standby)
            }
            other => other,
        }
    }

    /// One look as the holder of `lease`. Fails with a lost lease when a fenced write
    /// (the ready checks, the round's commit) found another replica leading.
    async fn lead(&mut self, lease: &Lease) -> Result<StepOutcome, RoundError> {
        let now = self.runner.clock.now();
        self.publish(lease.term).await?;
        // Expiry and broken parties: at most once a second (a burst of enqueue NOTIFYs
        // wakes the worker every 250 ms), and always right before a round.
        if self.last_tidy.is_none_or(|at| at.elapsed() >= TIDY_EVERY) {
            self.tidy().await?;
        }
        // Pending matches are resolved at every look (a decline's NOTIFY wakes the
        // worker), also when the config no longer has a ready check.
        self.resolve_ready_checks(lease).await?;
        self.enter_term(lease.term, now).await?;
        let view = self.look_at_pool(now).await?;
        match decide(&self.config, &view) {
            Decision::Run(trigger) => self.run_round(trigger, lease).await,
            Decision::Wait {
                next_round_at,
                waiting_for,
                players_missing,
                latest_round_at,
            } => {
                let countdown = Countdown {
                    next_round_at,
                    waiting_for,
                    players_missing,
                    latest_round_at,
                    round_started_at: None,
                };
                // A backfill request waits for no schedule: an immediate round that only
                // fills requests (the rest of the pool, the countdown, the round timers
                // stay as they are).
                let b = &self.config.backfill;
                let spaced = self.last_backfill_round.is_none_or(|at| {
                    now - at >= chrono::Duration::from_std(b.spacing).unwrap_or_default()
                });
                if b.enabled
                    && view.pool_size > 0
                    && spaced
                    && db::backfill::backfill_due(&self.runner.db, &self.queue, b.delay).await?
                {
                    self.last_backfill_round = Some(now);
                    self.leadership.term().last_written = None;
                    let mut report = self
                        .runner
                        .run(
                            &self.queue,
                            self.config.clone(),
                            RoundTrigger::Backfill,
                            lease,
                        )
                        .await?;
                    report.next_round_at = next_round_at;
                    return Ok(StepOutcome::Ran(report));
                }
                self.write_countdown(&countdown, view.pool_size, now)
                    .await?;
                Ok(StepOutcome::Waiting {
                    next_round_at,
                    waiting_for,
                    players_missing,
                    latest_round_at,
                })
            }
        }
    }

    /// Whether we lead `term` already.
    fn leads(&self, term: i64) -> bool {
        matches!(&self.leadership, Leadership::Leading(t) if t.term == term)
    }

    /// Another replica leads, or will: what this replica knew of the queue is dropped.
    fn stand_by(&mut self) {
        self.leadership = Leadership::Following;
    }

    /// A fenced write found the lease gone: forget it and stand by.
    async fn lose_lease(&mut self, e: &RoundError) {
        tracing::warn!(queue = %self.queue, "lease lost, standing by: {e}");
        metrics::record_error(ErrorKind::LeaseLost);
        metrics::record_lease(&self.queue, false);
        *self.lease.0.lease.lock().await = None;
        self.stand_by();
    }

    /// What clients may enqueue follows the config of the queue's leader: published once
    /// a term, and again at a config change.
    async fn publish(&mut self, term: i64) -> Result<(), DbError> {
        if !self.leads(term) {
            self.published = None;
        }
        let hash = self.config.hash();
        if self.published.as_ref() != Some(&hash) {
            db::queues::publish_queue(&self.runner.db, &self.queue, &*self.config, &self.holder)
                .await?;
            self.published = Some(hash);
        }
        Ok(())
    }

    /// Newly leading (or a new term): continue the countdown players already see.
    async fn enter_term(&mut self, term: i64, now: DateTime<Utc>) -> Result<(), DbError> {
        if self.leads(term) {
            return Ok(());
        }
        let stored = db::queue_state::read_queue_state(&self.runner.db, &self.queue).await?;
        let last_round_at = stored.as_ref().and_then(|s| s.last_round_at);
        let tick_after_last = last_round_at.map(|at| countdown::next_tick(&self.config, at));
        let next_due = match stored {
            // The announced tick, if it was announced for this very config.
            Some(s)
                if s.waiting_for == WaitingFor::Schedule.as_str()
                    && s.config_hash == self.config.hash()
                    && s.next_round_at.is_some() =>
            {
                s.next_round_at.unwrap_or(now)
            }
            // The tick has passed already (the queue waits for players).
            Some(s) if s.waiting_for != WaitingFor::Schedule.as_str() => {
                tick_after_last.unwrap_or(now)
            }
            _ => tick_after_last.unwrap_or_else(|| countdown::next_tick(&self.config, now)),
        };
        self.leadership = Leadership::Leading(Box::new(Term {
            term,
            next_due: Some(next_due),
            last_round_at,
            // Its commit time: a player enqueued during that round counts as pooled by
            // it, so they wait for the tick rather than start a round before it.
            pooled_until: last_round_at,
            pool_after_last_round: None,
            last_written: None,
            last_pool_size: None,
            // Count from here: what arrived before this term was the last leader's.
            enqueue_mark: None,
        }));
        Ok(())
    }

    /// What the trigger decides on: the pool now, against the countdown.
    async fn look_at_pool(&mut self, now: DateTime<Utc>) -> Result<QueueView, DbError> {
        let db = &self.runner.db;
        let term = self.leadership.term();
        let next_due = term.next_due.unwrap_or(now);
        let (new, mark) = db::entries_since(db, &self.queue, term.enqueue_mark).await?;
        metrics::record_enqueued(&self.queue, new);
        term.enqueue_mark = Some(mark);
        // Players a round left over wait for the tick, whatever their wait: only a player
        // no round has had yet can start a max-wait round before it (see `trigger`).
        let stats = db::pool_stats(db, &self.queue, term.pooled_until).await?;
        metrics::record_pool_size(&self.queue, Some(stats.size));
        Ok(QueueView {
            now,
            pool_size: stats.size,
            oldest_enqueued_at: stats.oldest_enqueued_at,
            oldest_fresh_enqueued_at: stats.oldest_fresh_enqueued_at,
            next_due,
            unchanged_since_last_round: term.pool_after_last_round == Some(stats.size),
        })
    }

    /// The round the trigger decided, and what this term learns from it.
    async fn run_round(
        &mut self,
        trigger: RoundTrigger,
        lease: &Lease,
    ) -> Result<StepOutcome, RoundError> {
        // The round shows itself as running; whatever happens to it, the next look
        // writes the countdown again.
        self.leadership.term().last_written = None;
        if self
            .last_tidy
            .is_none_or(|at| at.elapsed() >= Duration::from_millis(100))
        {
            self.tidy().await?;
        }
        let started_at = self.runner.clock.now();
        let report = self
            .runner
            .run(&self.queue, self.config.clone(), trigger, lease)
            .await?;
        let committed_at = self.runner.clock.now();
        let term = self.leadership.term();
        term.next_due = report.next_round_at;
        term.last_round_at = Some(committed_at);
        self.learn_waits(&report).await?;
        self.leadership.term().pooled_until = Some(started_at);
        let left = db::pool_stats(&self.runner.db, &self.queue, None)
            .await?
            .size;
        metrics::record_pool_size(&self.queue, Some(left));
        let term = self.leadership.term();
        term.pool_after_last_round = Some(left);
        term.last_written = None;
        Ok(StepOutcome::Ran(report))
    }

    /// Write the countdown players see, when it or the pool size changed.
    async fn write_countdown(
        &mut self,
        countdown: &Countdown,
        pool_size: usize,
        now: DateTime<Utc>,
    ) -> Result<(), DbError> {
        let row = countdown::state_row(&self.queue, &self.config, countdown);
        let term = self.leadership.term();
        if term.last_written.as_ref() != Some(&row) || term.last_pool_size != Some(pool_size) {
            db::write_queue_state(&self.runner.db, &row, None, now).await?;
            term.last_written = Some(row);
            term.last_pool_size = Some(pool_size);
        }
        Ok(())
    }

    /// The queue was removed from the config: if we lead it, retire it (enqueues refused,
    /// queued entries rejected with the reason). A replica still running the queue holds
    /// its lease, so it is never retired under a live leader.
    pub async fn retire(&self) -> Result<Option<u64>, DbError> {
        let Some(lease) = self.lease.current().await else {
            return Ok(None);
        };
        let reason = format!(
            "queue {} was removed from the matchmaker's config",
            lease.queue
        );
        let rejected = db::queues::retire_queue(&self.runner.db, &self.queue, &reason).await?;
        tracing::info!(queue = %self.queue, rejected, "queue retired: removed from the config");
        Ok(Some(rejected))
    }

    /// Give the lease up (shutdown).
    pub async fn release(&self) -> Result<(), DbError> {
        if let Some(lease) = self.lease.0.lease.lock().await.take() {
            db::release_lease(&self.runner.db, &lease, self.runner.clock.lease_now()).await?;
            metrics::record_lease(&self.queue, false);
            tracing::info!(queue = %self.queue, term = lease.term, "lease released");
        }
        Ok(())
    }
}
