//! `matchmaker-lab failure-modes --only partition`, shortened: two daemon replicas, each
//! in a network namespace of its own, and client load on a private server. The route of
//! the replica leading `ready` is cut mid-round for 30 s: the other replica takes its
//! queues within a lease TTL, no session of the cut-off replica holds a lock anyone waits
//! on for long, and after the heal it is back within seconds. Then every route is cut for
//! 20 s: no round commits, and rounds resume within a lease TTL and a round of the heal.
//! Nothing a client was told is lost, no entry is in two matches, no live lease is taken.
//!
//! It needs root (CAP_NET_ADMIN) and iproute2 for the namespaces, and fails, saying so,
//! without them.

use std::time::Duration;

use matchmaker_lab::partition::{self, PartitionOptions};
use matchmaker_lab::route::Route;

use crate::support::TIMING;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_cut_off_from_the_database_loses_its_queues_within_a_lease_and_is_back_soon_after_the_heal()
 {
    if let Err(e) = Route::create() {
        panic!("the partition test cuts replicas' routes to the database: {e:#}");
    }
    let _timed = TIMING.write().await;
    let options = PartitionOptions {
        warmup: Duration::from_secs(8),
        // Long enough that TCP's retransmissions back off past the bounds below: a
        // statement waiting on them would show.
        cut: Duration::from_secs(30),
        cut_all: Duration::from_secs(20),
        settle: Duration::from_secs(6),
        ..PartitionOptions::default()
    };
    let report = partition::partition(&options, &crate::product_binary(), |line| {
        eprintln!("{line}")
    })
    .await
    .expect("the partition run");
    report.print();

    let one = &report.one;
    assert!(
        one.in_round,
        "the route was cut outside a round of ready: {one:?}"
    );
    let first_round = one
        .first_round
        .expect("a round on the cut-off leader's queues");
    assert!(
        first_round <= partition::ROUND_AFTER_CUT_BOUND,
        "the first round on the cut-off leader's queues came {first_round:?} after the cut"
    );
    assert_eq!(
        one.rounds_after_cut, 0,
        "the cut-off replica committed rounds"
    );
    assert!(
        one.sessions.longest_blocked <= partition::BLOCKED_BOUND,
        "a session waited {:?} on a lock of the cut-off replica",
        one.sessions.longest_blocked
    );
    let back = one
        .back
        .expect("the cut-off replica heartbeats after the heal");
    assert!(
        back <= partition::BACK_BOUND,
        "the cut-off replica was back {back:?} after the heal"
    );
    assert!(
        one.round_again.is_some(),
        "the cut-off replica led no round within 20 s of the heal: {one:?}"
    );

    let all = &report.all;
    assert_eq!(
        all.rounds_during, 0,
        "rounds committed while every route was cut"
    );
    let first = all.first_round.expect("a round after every route healed");
    assert!(
        first <= partition::ROUND_AFTER_HEAL_BOUND,
        "the first round came {first:?} after every route healed"
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
