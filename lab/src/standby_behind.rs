//! The primary lost while its standby is out of the quorum and behind, for
//! `matchmaker-lab failure-modes`: the standby's machine is stopped until the monitor
//! drops it from the quorum (`wait_primary`), the primary goes on committing unprotected
//! and writes `ballast` more WAL, then the primary's machine is lost as the standby runs
//! again, and after `outage` the primary's machine is started again.
//!
//! pg_auto_failover promotes only a standby in the `secondary` state, no more than
//! `promote_wal_log_threshold` (16 MB) behind the primary: this one is `catchingup`, so
//! no node takes writes until the old primary is back, and what was committed while the
//! standby was out of the quorum survives on it.

use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::Utc;
use sqlx::{Connection, PgConnection, PgPool};

use crate::failover::{self, fmt_secs};
use crate::failure_modes::{
    Committed, HEALTHY_BOUND, committed_between, probe_write, wait_for_healthy,
};
use crate::formation::{self, Formation, Freeze};
use crate::standby_freeze::wait_primary_since;

/// How long the standby's machine may stay stopped before the monitor drops it.
const WAIT_PRIMARY_BOUND: Duration = Duration::from_secs(90);

/// How long to wait for a round committed while the standby is out of the quorum.
const UNPROTECTED_ROUND_BOUND: Duration = Duration::from_secs(15);

/// The primary lost with its standby behind, then started again.
#[derive(Debug, Clone)]
pub struct StandbyBehind {
    pub primary: String,
    /// From the standby's stop until the monitor assigned `wait_primary`.
    pub wait_primary: Option<Duration>,
    /// WAL the standby lacked when the primary was lost (from the LSN it last reported to
    /// the monitor).
    pub behind_bytes: i64,
    /// Rounds committed while the standby was out of the quorum, before the loss: on the
    /// primary only.
    pub rounds_unprotected: i64,
    pub outage: Duration,
    /// A node that took writes while the primary was lost, and after how long.
    pub writes_during: Option<Duration>,
    /// From the primary's restart: the first write on it, the first round, the formation
    /// primary and secondary again.
    pub first_write: Option<Duration>,
    pub first_round: Option<Duration>,
    pub healthy: Option<Duration>,
    pub rounds_before: i64,
    pub rounds_kept: i64,
    pub matches_before: i64,
    pub matches_kept: i64,
}

impl StandbyBehind {
    pub fn print(&self, row: &impl Fn(&str, String)) {
        println!(
            "  the primary ({}) lost for {:.0} s with its standby out of the quorum and \
             {:.1} MB behind, then started again:",
            self.primary,
            self.outage.as_secs_f64(),
            self.behind_bytes as f64 / 1_048_576.0
        );
        row(
            "  standby stopped -> the monitor assigns wait_primary",
            fmt_secs(self.wait_primary),
        );
        row(
            "  rounds committed out of the quorum, before the loss",
            self.rounds_unprotected.to_string(),
        );
        row(
            "  a node took writes while the primary was lost",
            self.writes_during
                .map_or("no".into(), |d| format!("after {}", fmt_secs(Some(d)))),
        );
        row("  restart -> first write", fmt_secs(self.first_write));
        row("  restart -> first round", fmt_secs(self.first_round));
        row("  restart -> primary + secondary", fmt_secs(self.healthy));
        row(
            "  rounds / matches kept of those before the loss",
            format!(
                "{} of {} / {} of {}",
                self.rounds_kept, self.rounds_before, self.matches_kept, self.matches_before
            ),
        );
    }

    /// This failure's checks: (name, count), all must be 0.
    pub fn checks(&self) -> Vec<(String, i64)> {
        vec![
            (
                "primary lost, standby behind: the monitor never dropped the stopped standby"
                    .into(),
                i64::from(self.wait_primary.is_none()),
            ),
            (
                "primary lost, standby behind: rounds committed before the loss now missing".into(),
                self.rounds_before - self.rounds_kept,
            ),
            (
                "primary lost, standby behind: matches committed before the loss now missing"
                    .into(),
                self.matches_before - self.matches_kept,
            ),
            (
                "primary lost, standby behind: no round within 60 s of its restart".into(),
                i64::from(self.first_round.is_none_or(|d| d > Duration::from_secs(60))),
            ),
            (
                format!(
                    "primary lost, standby behind: not primary + secondary within {} s",
                    HEALTHY_BOUND.as_secs()
                ),
                i64::from(self.healthy.is_none()),
            ),
        ]
    }
}

/// Stop the standby's machine until the monitor drops it, write `ballast_mb` MB of WAL on
/// the primary, lose the primary's machine and let the standby run again; after `outage`
/// start the primary's machine again and time what comes back.
pub async fn lose_primary_ahead_of_standby(
    formation: &mut Formation,
    admin: &PgPool,
    ballast_mb: u32,
    outage: Duration,
) -> anyhow::Result<StandbyBehind> {
    let primary = tokio::task::block_in_place(|| formation.writable_node())
        .context("no node of the formation takes writes")?;
    let standby = 1 - primary;
    let monitor_url = formation.monitor_url();
    let primary_url = formation.nodes[primary].url("postgres", formation::DATABASE);
    let standby_url = formation.nodes[standby].url("postgres", formation::DATABASE);

    let stopped_at = Utc::now();
    let stopped = Instant::now();
    let frozen = formation.freeze(standby, Freeze::Machine);
    anyhow::ensure!(!frozen.is_empty(), "nothing of the standby to stop");
    let wait_primary = loop {
        if let Some(d) = wait_primary_since(&monitor_url, stopped_at, Utc::now()).await {
            break Some(d);
        }
        if stopped.elapsed() > WAIT_PRIMARY_BOUND {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let dropped_at =
        stopped_at + chrono::Duration::from_std(wait_primary.unwrap_or(WAIT_PRIMARY_BOUND))?;

    let mut on_primary = PgConnection::connect(&primary_url).await?;
    // About 1 KB a row; the table goes with the run's database.
    sqlx::query("CREATE TABLE lab_ballast (g int, pad text)")
        .execute(&mut on_primary)
        .await?;
    sqlx::query(
        "INSERT INTO lab_ballast
         SELECT g, repeat(md5(g::text), 32) FROM generate_series(1, $1) g",
    )
    .bind(i64::from(ballast_mb) * 1000)
    .execute(&mut on_primary)
    .await?;
    let behind_bytes: i64 =
        sqlx::query_scalar("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::text::pg_lsn)::int8")
            .bind(reported_lsn(&monitor_url, formation.nodes[standby].port).await?)
            .fetch_one(&mut on_primary)
            .await?;
    on_primary.close().await?;
    // Rounds too go on unprotected before the loss.
    let until = Instant::now() + UNPROTECTED_ROUND_BOUND;
    let rounds_unprotected = loop {
        let (rounds, _) = committed_between(admin, dropped_at, Utc::now()).await?;
        if rounds > 0 || Instant::now() >= until {
            break rounds;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let before = Committed::now(admin).await?;

    let lost = Instant::now();
    formation.lose_machine(primary);
    Formation::thaw(&frozen);
    let writes_during = loop {
        if probe_write(&standby_url).await.is_ok() {
            break Some(lost.elapsed());
        }
        if lost.elapsed() >= outage {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    tokio::time::sleep(outage.saturating_sub(lost.elapsed())).await;
    let outage = lost.elapsed();

    let back = Instant::now();
    let back_at = Utc::now();
    formation.start_node(primary)?;
    let first_write = failover::first_write(primary_url, back).await;
    let first_round = failover::first_round_after(admin.clone(), back_at).await;
    let healthy = wait_for_healthy(&monitor_url, back_at, HEALTHY_BOUND)
        .await
        .map(|_| back.elapsed());
    let (rounds_kept, matches_kept) = before.kept(admin).await?;
    sqlx::query("DROP TABLE IF EXISTS lab_ballast")
        .execute(admin)
        .await?;
    Ok(StandbyBehind {
        primary: formation.nodes[primary].name.clone(),
        wait_primary,
        behind_bytes,
        rounds_unprotected,
        outage,
        writes_during,
        first_write,
        first_round,
        healthy,
        rounds_before: before.rounds,
        rounds_kept,
        matches_before: before.matches,
        matches_kept,
    })
}

/// The LSN the node on `port` last reported to the monitor.
async fn reported_lsn(monitor_url: &str, port: u16) -> anyhow::Result<String> {
    let mut conn = PgConnection::connect(monitor_url).await?;
    let lsn: String =
        sqlx::query_scalar("SELECT reportedlsn::text FROM pgautofailover.node WHERE nodeport = $1")
            .bind(i32::from(port))
            .fetch_one(&mut conn)
            .await?;
    conn.close().await?;
    Ok(lsn)
}
