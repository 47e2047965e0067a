//! `matchmaker-lab failure-modes`, shortened: on a real pg_auto_failover formation
//! (monitor, primary, synchronous standby) under two daemon replicas and client load, the
//! monitor is lost and rounds, matches and client calls go on against the primary; replay
//! is paused on the standby and commits go on; the standby's WAL receiver is stopped
//! and commits wait until it runs again, then its machine is stopped and commits wait
//! until the monitor drops it from the quorum; the receiver stopped again, dropping the
//! standby from the quorum (the operator's way out) releases them; the primary is lost
//! while its standby is out of the quorum and no node takes writes until it is back; both
//! data nodes are lost and started again and rounds resume with nothing committed before
//! lost. What the clients were told is audited after all of them.
//!
//! It needs `pg_autoctl` (Debian: `postgresql-15-auto-failover`) and fails, naming the
//! package, without it.

use std::time::Duration;

use matchmaker_lab::failure_modes::{self, FailureModesOptions};
use matchmaker_lab::formation::Formation;

use crate::support::TIMING;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_monitor_a_lagging_or_frozen_standby_and_both_nodes_restarted_lose_nothing() {
    if let Err(e) = Formation::find_binaries() {
        panic!("the failure modes test runs a real pg_auto_failover formation: {e:#}");
    }
    let _timed = TIMING.write().await;
    let options = FailureModesOptions {
        warmup: Duration::from_secs(10),
        // Past the keepers' network_partition_timeout (20 s).
        monitor_outage: Duration::from_secs(25),
        standby_pause: Duration::from_secs(10),
        receiver_freeze: Duration::from_secs(10),
        // Past the monitor's node_considered_unhealthy_timeout (20 s) and its health
        // checks.
        machine_freeze: Duration::from_secs(40),
        way_out_after: Duration::from_secs(4),
        behind_outage: Duration::from_secs(30),
        nodes_outage: Duration::from_secs(10),
        settle: Duration::from_secs(6),
        ..FailureModesOptions::default()
    };
    let report = failure_modes::failure_modes(&options, &crate::product_binary(), |line| {
        eprintln!("{line}")
    })
    .await
    .expect("the failure modes run");
    report.print();

    let monitor = &report.monitor;
    assert!(
        monitor.rounds > 0 && monitor.matches > 0,
        "nothing committed while the monitor was away: {monitor:?}"
    );
    assert!(
        monitor.calls.calls > 0 && monitor.calls.failed_attempts == 0,
        "client calls failed while the monitor was away: {monitor:?}"
    );
    assert!(
        monitor.healthy.is_some(),
        "the formation did not report a primary and a secondary after the monitor came back"
    );

    let pause = &report.pause;
    assert!(
        pause.rounds > 0 && pause.calls.failed_attempts == 0,
        "commits stopped while replay was paused on the standby: {pause:?}"
    );
    assert!(
        pause.rounds_behind > 0 && pause.stale_by > Duration::ZERO,
        "the paused standby was not behind: {pause:?}"
    );
    assert!(pause.caught_up.is_some(), "the standby never caught up");

    // A standby that stops flushing holds every commit: the monitor does not drop one
    // whose node stays healthy, and drops one that stops answering after its timeout.
    let receiver = &report.receiver;
    let held = receiver
        .commit_waited
        .expect("a commit came back after the thaw");
    assert!(
        held + Duration::from_secs(1) >= receiver.frozen_for && receiver.rounds == 0,
        "commits went on while the standby's WAL receiver was stopped: {receiver:?}"
    );
    assert!(
        receiver.wait_primary.is_none(),
        "the monitor dropped a standby whose node stayed healthy: {receiver:?}"
    );
    assert!(
        receiver.named_in_logs > 0,
        "no replica said the standby held its commits: {receiver:?}"
    );
    let machine = &report.machine;
    let (held, dropped) = (
        machine.commit_waited.expect("a commit came back"),
        machine.wait_primary,
    );
    assert!(
        dropped.is_some() && held < machine.frozen_for && machine.rounds > 0,
        "the monitor did not drop the frozen standby from the quorum before the thaw: {machine:?}"
    );
    // The way out of a stalled receiver: the standby dropped from the quorum releases
    // the held commits, and rounds go on before the receiver runs again.
    let way_out = &report.way_out;
    assert!(
        way_out
            .way_out_to_commit()
            .is_some_and(|d| d < Duration::from_secs(10))
            && way_out.rounds > 0,
        "dropping the stalled standby from the quorum did not release the commits: {way_out:?}"
    );
    // The primary lost while its standby was out of the quorum: no node takes writes
    // (pg_auto_failover promotes only a caught-up standby) until the primary is back,
    // with everything it committed.
    let behind = &report.behind;
    assert!(
        behind.behind_bytes > 16 << 20 && behind.rounds_unprotected > 0,
        "the standby was not out of the quorum and behind when the primary was lost: {behind:?}"
    );
    assert!(
        behind.writes_during.is_none(),
        "a standby out of the quorum was promoted: {behind:?}"
    );
    for frozen in [receiver, machine, way_out] {
        assert!(
            frozen.first_round.is_some() && frozen.healthy.is_some(),
            "no round or no healthy formation after {} was thawed: {frozen:?}",
            frozen.what()
        );
    }

    let nodes = &report.nodes;
    assert_eq!(
        (nodes.rounds_kept, nodes.matches_kept),
        (nodes.rounds_before, nodes.matches_before),
        "rounds or matches committed before both nodes were lost are gone"
    );
    let (first_write, first_round) = (
        nodes
            .first_write
            .expect("a node took writes after the restart"),
        nodes.first_round.expect("a round after the restart"),
    );
    assert!(
        first_round <= first_write + failure_modes::ROUND_AFTER_WRITE_BOUND,
        "first round {first_round:?} after the restart, writes after {first_write:?}"
    );
    // The clients' pool waits up to 30 s for a connection, so a call either waits the
    // outage out or fails and is repeated: both make it as long.
    assert!(
        nodes.longest_call >= options.nodes_outage,
        "no client call met the outage of both nodes: the longest took {:?}",
        nodes.longest_call
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
