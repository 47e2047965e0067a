//! The synchronous standby stops flushing, for `matchmaker-lab failure-modes`: its WAL
//! receiver alone, or its whole machine, is stopped (SIGSTOP, so its connections stay open
//! and unanswered) while the load runs, then let run again.
//!
//! A synchronous commit on the primary waits for the standby to flush its WAL, so every
//! commit (rounds, lease renewals, client calls) waits while the standby does not. The
//! run times how long a commit started at the freeze waits, counts the rounds that became
//! visible meanwhile, reads from the monitor whether and when it dropped the standby from
//! the quorum (`wait_primary`), and after the thaw times the first round and the
//! formation's return to primary and secondary.
//!
//! The way out of a stalled receiver is the operator's: drop the standby from the
//! synchronous quorum (`pg_autoctl set node replication-quorum false`), and the primary
//! stops waiting for it. A run can take it mid-freeze and time the held commit's return;
//! the standby is put back in the quorum after the thaw.

use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use sqlx::{Connection, PgConnection, PgPool};

use matchmaker_testkit::fleet::Replica;

use crate::failover::{self, Shared, fmt_secs};
use crate::failure_modes::{Calls, HEALTHY_BOUND, calls_now, committed_between, wait_for_healthy};
use crate::formation::{self, Formation, Freeze};

/// What a replica logs when a step it gave up had commits waiting for the standby.
pub const STANDBY_WAIT_LOGGED: &str = "commits are waiting for the synchronous standby";

/// A commit held this long has outlasted a replica's step (a lease TTL of 5 s and a
/// round's budget in the run's config), which the replica gives up and explains.
const GIVEN_UP_AFTER: Duration = Duration::from_secs(10);

/// How long after the thaw a commit started at the freeze may still wait.
const COMMIT_AFTER_THAW_BOUND: Duration = Duration::from_secs(60);

/// How long after the way out a commit held by the standby may still wait.
const WAY_OUT_BOUND: Duration = Duration::from_secs(15);

/// The standby frozen, then thawed.
#[derive(Debug, Clone)]
pub struct StandbyFreeze {
    pub part: Freeze,
    pub standby: String,
    pub frozen_for: Duration,
    /// From the freeze until the standby was out of the synchronous quorum (the
    /// operator's way out), if the run took it.
    pub way_out: Option<Duration>,
    /// From the freeze until a commit on the primary started then came back; None if it
    /// had not within [`COMMIT_AFTER_THAW_BOUND`] of the thaw.
    pub commit_waited: Option<Duration>,
    /// From the freeze until the monitor assigned the primary `wait_primary` (commits no
    /// longer waiting for the standby), if it did before the thaw.
    pub wait_primary: Option<Duration>,
    /// Rounds committed in as long a window before the freeze, and that became visible
    /// on the primary during it.
    pub rounds_before: i64,
    pub rounds: i64,
    pub calls: Calls,
    /// Lines the replicas logged during the freeze naming the standby as what holds
    /// their commits ([`STANDBY_WAIT_LOGGED`]).
    pub named_in_logs: usize,
    /// From the thaw: until the first round committed, until the monitor reports a
    /// primary and a secondary, both healthy.
    pub first_round: Option<Duration>,
    pub healthy: Option<Duration>,
}

impl StandbyFreeze {
    pub fn what(&self) -> &'static str {
        match (self.part, self.way_out) {
            (Freeze::WalReceiver, None) => "the standby's WAL receiver",
            (Freeze::WalReceiver, Some(_)) => "the standby's WAL receiver, with the way out",
            (Freeze::Machine, _) => "the standby's machine",
        }
    }

    /// From the way out until the held commit came back.
    pub fn way_out_to_commit(&self) -> Option<Duration> {
        Some(self.commit_waited?.saturating_sub(self.way_out?))
    }

    pub fn print(&self, row: &impl Fn(&str, String)) {
        println!(
            "  {} ({}) stopped for {:.0} s:",
            self.what(),
            self.standby,
            self.frozen_for.as_secs_f64()
        );
        row(
            "  a commit on the primary started at the freeze, waited",
            fmt_secs(self.commit_waited),
        );
        if let Some(way_out) = self.way_out {
            row(
                "  freeze -> the standby out of the quorum",
                fmt_secs(Some(way_out)),
            );
            row(
                "  out of the quorum -> the held commit returned",
                fmt_secs(self.way_out_to_commit()),
            );
        }
        row(
            "  freeze -> the monitor assigns wait_primary",
            self.wait_primary.map_or("no".into(), |d| fmt_secs(Some(d))),
        );
        row(
            "  rounds visible before (as long a window) / during",
            format!("{} / {}", self.rounds_before, self.rounds),
        );
        row(
            "  client calls / failed attempts",
            format!("{} / {}", self.calls.calls, self.calls.failed_attempts),
        );
        row(
            "  replicas' log lines naming the standby",
            self.named_in_logs.to_string(),
        );
        row("  thaw -> first round", fmt_secs(self.first_round));
        row(
            "  thaw -> primary + secondary again",
            fmt_secs(self.healthy),
        );
    }

    /// This failure's checks: (name, count), all must be 0.
    pub fn checks(&self) -> Vec<(String, i64)> {
        let what = self.what();
        let mut checks = vec![
            (
                format!(
                    "{what} thawed: a commit still waiting {} s later",
                    COMMIT_AFTER_THAW_BOUND.as_secs()
                ),
                i64::from(self.commit_waited.is_none()),
            ),
            (
                format!("{what}: commits held, and no replica said the standby held them"),
                i64::from(
                    self.commit_waited.is_some_and(|d| d >= GIVEN_UP_AFTER)
                        && self.named_in_logs == 0,
                ),
            ),
            (
                format!("{what} thawed: no round within 60 s"),
                i64::from(self.first_round.is_none_or(|d| d > Duration::from_secs(60))),
            ),
            (
                format!(
                    "{what} thawed: not primary + secondary within {} s",
                    HEALTHY_BOUND.as_secs()
                ),
                i64::from(self.healthy.is_none()),
            ),
        ];
        if self.way_out.is_some() {
            checks.push((
                format!(
                    "{what}: a commit still held {} s after the way out",
                    WAY_OUT_BOUND.as_secs()
                ),
                i64::from(self.way_out_to_commit().is_none_or(|d| d > WAY_OUT_BOUND)),
            ));
        }
        checks
    }
}

/// Stop `part` of the standby for `freeze` while the load runs, then let it run again;
/// time what waited. With `way_out_after`, the standby is dropped from the synchronous
/// quorum that long into the freeze, and put back after the thaw.
pub async fn freeze_standby(
    formation: &Formation,
    admin: &PgPool,
    replicas: &[Replica],
    ledger: &Shared,
    part: Freeze,
    freeze: Duration,
    way_out_after: Option<Duration>,
) -> anyhow::Result<StandbyFreeze> {
    if let Some(after) = way_out_after {
        anyhow::ensure!(
            after < freeze,
            "the way out ({after:?} after the stop) must come before the thaw ({freeze:?})"
        );
    }
    let primary = tokio::task::block_in_place(|| formation.writable_node())
        .context("no node of the formation takes writes")?;
    let standby = 1 - primary;
    let primary_url = formation.nodes[primary].url("postgres", formation::DATABASE);
    let mut on_primary = PgConnection::connect(&primary_url).await?;
    let named = || -> usize {
        replicas
            .iter()
            .map(|r| r.log_lines_containing(STANDBY_WAIT_LOGGED))
            .sum()
    };
    let named_before = named();

    let calls_before = calls_now(ledger);
    let at: DateTime<Utc> = Utc::now();
    let rounds_before = committed_between(admin, at - chrono::Duration::from_std(freeze)?, at)
        .await?
        .0;
    let rounds_at_freeze = visible_rounds(&mut on_primary).await?;
    let frozen = Instant::now();
    let stopped = formation.freeze(standby, part);
    anyhow::ensure!(
        !stopped.is_empty(),
        "nothing of {} to stop ({part:?})",
        formation.nodes[standby].name
    );
    let mut probe = PgConnection::connect(&primary_url).await?;
    let commit = tokio::spawn(async move {
        let done = sqlx::query("INSERT INTO failover_probe DEFAULT VALUES")
            .execute(&mut probe)
            .await
            .map(|_| frozen.elapsed());
        let _ = probe.close().await;
        done
    });
    let mut way_out = None;
    if let Some(after) = way_out_after {
        tokio::time::sleep(after.saturating_sub(frozen.elapsed())).await;
        tokio::task::block_in_place(|| formation.set_replication_quorum(standby, false))?;
        way_out = Some(frozen.elapsed());
    }
    tokio::time::sleep(freeze.saturating_sub(frozen.elapsed())).await;
    let rounds = visible_rounds(&mut on_primary).await? - rounds_at_freeze;
    let calls = calls_now(ledger).since(calls_before);
    let frozen_for = frozen.elapsed();
    let named_in_logs = named() - named_before;

    let thaw_at = Utc::now();
    let thawed = Instant::now();
    Formation::thaw(&stopped);
    let commit_waited = tokio::time::timeout(COMMIT_AFTER_THAW_BOUND, commit)
        .await
        .ok()
        .and_then(|joined| joined.ok())
        .and_then(|done| done.ok());
    if way_out.is_some() {
        tokio::task::block_in_place(|| formation.set_replication_quorum(standby, true))?;
    }
    let first_round = failover::first_round_after(admin.clone(), thaw_at).await;
    let healthy = wait_for_healthy(&formation.monitor_url(), thaw_at, HEALTHY_BOUND)
        .await
        .map(|_| thawed.elapsed());
    let wait_primary = wait_primary_since(&formation.monitor_url(), at, thaw_at).await;
    on_primary.close().await?;
    Ok(StandbyFreeze {
        part,
        standby: formation.nodes[standby].name.clone(),
        frozen_for,
        way_out,
        commit_waited,
        wait_primary,
        rounds_before,
        rounds,
        calls,
        named_in_logs,
        first_round,
        healthy,
    })
}

/// Rounds committed and visible on `conn`'s node (a round's `committed_at` is read before
/// its commit waits for the standby, so it cannot tell when the wait ended).
async fn visible_rounds(conn: &mut PgConnection) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar("SELECT count(*) FROM rounds")
        .fetch_one(conn)
        .await?)
}

/// From `since` until the monitor first assigned a node `wait_primary`, if before `until`.
pub(crate) async fn wait_primary_since(
    monitor_url: &str,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Option<Duration> {
    let mut conn = PgConnection::connect(monitor_url).await.ok()?;
    let first: Option<DateTime<Utc>> = sqlx::query_scalar(
        "SELECT min(eventtime) FROM pgautofailover.event
          WHERE eventtime > $1 AND eventtime <= $2 AND goalstate::text = 'wait_primary'",
    )
    .bind(since)
    .bind(until)
    .fetch_one(&mut conn)
    .await
    .ok()?;
    let _ = conn.close().await;
    first.and_then(|t| (t - since).to_std().ok())
}
