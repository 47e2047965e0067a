//! `matchmaker-lab failover`, shortened: a real pg_auto_failover formation (monitor,
//! primary, synchronous standby) under two daemon replicas and client load loses its
//! primary's machine mid-round with ready checks pending, takes the lost node back as its
//! standby, then performs a switchover. Nothing a client was told is lost, nothing is
//! applied twice, and the first round after each event comes within the formation's
//! failover time plus a lease TTL and a round.
//!
//! It needs `pg_autoctl` (Debian: `postgresql-15-auto-failover`) and fails, naming the
//! package, without it.

use std::time::Duration;

use matchmaker_lab::failover::{self, EventKind, FailoverOptions};
use matchmaker_lab::formation::Formation;

use crate::support::TIMING;

/// The lease TTL of the run's config (5 s) plus a round and the watcher's probes.
const DAEMON_SHARE: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_primary_and_a_switchover_lose_nothing_and_rounds_resume_after_the_formation_fails_over()
 {
    if let Err(e) = Formation::find_binaries() {
        panic!("the failover test runs a real pg_auto_failover formation: {e:#}");
    }
    let _timed = TIMING.write().await;
    let options = FailoverOptions {
        warmup: Duration::from_secs(12),
        settle: Duration::from_secs(10),
        ..FailoverOptions::default()
    };
    let report = failover::failover(&options, &crate::product_binary(), |line| {
        eprintln!("{line}")
    })
    .await
    .expect("the failover run");
    report.print();

    let loss = report
        .event(EventKind::PrimaryLost)
        .expect("the primary was lost");
    assert!(
        loss.in_round && !loss.pending.is_empty(),
        "the primary was lost outside a round or without pending ready checks: {loss:?}"
    );
    assert!(
        loss.seen_before > 0,
        "no client had seen a match before the loss"
    );
    let switchover = report
        .event(EventKind::Switchover)
        .expect("the switchover was performed");
    for event in [loss, switchover] {
        let first = event.first_round.expect("a round after the event");
        let failover = event.failover.expect("a node took writes after the event");
        // The formation's own failover time is its timeouts' (about 50 s by default for a
        // lost primary); the matchmaker's share is a lease TTL plus a round.
        let bound = failover + DAEMON_SHARE;
        assert!(
            first <= bound,
            "{:?}: first round {first:?} after it, {failover:?} after it a node took writes: \
             over the formation's failover time plus {DAEMON_SHARE:?}",
            event.kind
        );
        assert_ne!(
            Some(&event.from),
            event.to.as_ref(),
            "{:?}: the primary did not move",
            event.kind
        );
    }
    assert!(
        report.ledger.retried_calls > 0,
        "no client call met the outage: the loss did not reach the clients"
    );
    let violations: Vec<_> = report
        .violations()
        .into_iter()
        .filter(|(_, n)| *n != 0)
        .collect();
    assert!(
        violations.is_empty(),
        "violations: {violations:?} (logs: {})",
        report.logs.display()
    );
}
