//! A ticket's life as the daemon runs it, players enqueued through the front door: one
//! match per player across queues (the other entries withdrawn), parties whole in every
//! case (two queues, a cancel, a locked member, a malformed member), expiry on the
//! database's clock, a lease lost before the commit, a cancel racing a commit, and queues
//! added and retired by a reload.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::SubsecRound;
use matchmaker::config::Config;
use matchmaker::daemon::DaemonOptions;
use matchmaker::daemon::clock::Clock;
use matchmaker::daemon::round::SolvedRound;
use matchmaker::daemon::worker::StepOutcome;
use matchmaker::db::{self, RoundTrigger, enqueue as front};
use sqlx::PgPool;

use crate::support::*;

/// Queues a and b, 2 teams of 3 each, a round every second.
const TWO_QUEUES: &str = include_str!("configs/two_queues.toml");

/// The workers of a and b, and the test's pool.
async fn two_queues() -> (Daemon, PgPool) {
    let d = Daemon::start(TWO_QUEUES, "lifecycle").await;
    let db = d.db().clone();
    (d, db)
}

/// Solo players through `enqueue()`.
async fn solos(db: &PgPool, queue: &str, ids: &[&str]) {
    for (i, id) in ids.iter().enumerate() {
        front::enqueue(db, queue, &solo_player(id, 1400.0 + 30.0 * i as f64))
            .await
            .unwrap_or_else(|e| panic!("enqueue {id} into {queue}: {e}"));
    }
}

#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
struct Entry {
    queue: String,
    status: String,
    match_id: Option<i64>,
    team: Option<i32>,
    reject_reason: Option<String>,
}

/// A player's entries, oldest first.
async fn entries(db: &PgPool, player: &str) -> Vec<Entry> {
    sqlx::query_as(
        "SELECT queue, status, match_id, team, reject_reason FROM queue_entries
          WHERE player_id = $1 ORDER BY entry_id",
    )
    .bind(player)
    .fetch_all(db)
    .await
    .unwrap()
}

/// The one entry of `player` in `queue`.
async fn entry(db: &PgPool, player: &str, queue: &str) -> Entry {
    let all: Vec<Entry> = entries(db, player)
        .await
        .into_iter()
        .filter(|e| e.queue == queue)
        .collect();
    assert_eq!(all.len(), 1, "{player} in {queue}: {all:?}");
    all.into_iter().next().unwrap()
}

#[tokio::test]
async fn a_player_in_two_queues_is_matched_once_and_withdrawn_from_the_other() {
    let (mut d, db) = two_queues().await;
    solos(&db, "a", &["x0", "x1", "x2", "x3", "x4", "x5"]).await;
    solos(&db, "b", &["x0", "b1", "b2", "b3", "b4", "b5"]).await;

    let report = d.round("a").await;
    assert_eq!((report.matched, report.withdrawn), (6, 1), "{report:?}");
    let won = entry(&db, "x0", "a").await;
    assert_eq!(won.status, "matched");
    let other = entry(&db, "x0", "b").await;
    assert_eq!(other.status, "withdrawn");
    assert_eq!(other.match_id, won.match_id, "names the match that won");
    assert_eq!(
        other.reject_reason,
        Some(format!(
            "matched in queue a (match {})",
            won.match_id.unwrap()
        ))
    );
    // What the client reads.
    let (status, reason): (String, String) = sqlx::query_as(
        "SELECT status, reason FROM player_status WHERE player_id = 'x0' AND queue = 'b'",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(status, "withdrawn");
    assert!(reason.starts_with("matched in queue a"), "{reason}");

    // b has five players left: no round until a sixth comes.
    d.clock.advance(secs(1));
    assert!(matches!(d.step("b").await, StepOutcome::Waiting { .. }));
    solos(&db, "b", &["b6"]).await;
    let report = d.round("b").await;
    assert_eq!((report.matched, report.withdrawn), (6, 0));
    assert_contract_invariants(&db).await;
}

#[tokio::test]
async fn a_player_whose_other_entry_is_locked_waits_in_both_queues() {
    let (mut d, db) = two_queues().await;
    solos(&db, "a", &["z0", "z1", "z2", "z3", "z4", "z5"]).await;
    solos(&db, "b", &["z0"]).await;

    // A client call holds z0's entry in b (as a keep-alive or a cancel in flight would)
    // while a's round commits: a cannot withdraw it, so z0 is not matched in a this round
    // and neither entry moves.
    let mut client = db.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM queue_entries WHERE player_id = 'z0' AND queue = 'b' FOR UPDATE")
        .execute(&mut *client)
        .await
        .unwrap();
    let report = d.round("a").await;
    assert_eq!((report.matched, report.withdrawn), (0, 0), "{report:?}");
    assert!(report.dropped_by_cancel > 0, "{report:?}");
    for queue in ["a", "b"] {
        assert_eq!(
            entry(&db, "z0", queue).await.status,
            "queued",
            "z0 in {queue}"
        );
    }
    client.rollback().await.unwrap();

    // Released: the next round matches z0 in a and withdraws the entry in b.
    d.clock.advance(secs(1));
    let report = d.round("a").await;
    assert_eq!((report.matched, report.withdrawn), (6, 1), "{report:?}");
    assert_eq!(entry(&db, "z0", "b").await.status, "withdrawn");
    assert_contract_invariants(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_queues_racing_for_one_player_never_both_match_them() {
    let (mut d, db) = two_queues().await;
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    for i in 0..4 {
        let shared = format!("y{i}");
        let a: Vec<String> = (1..6).map(|k| format!("ya{i}_{k}")).collect();
        let b: Vec<String> = (1..6).map(|k| format!("yb{i}_{k}")).collect();
        let with = |rest: &[String]| {
            let mut v = vec![shared.clone()];
            v.extend(rest.iter().cloned());
            v
        };
        let (in_a, in_b) = (with(&a), with(&b));
        solos(
            &db,
            "a",
            &in_a.iter().map(String::as_str).collect::<Vec<_>>(),
        )
        .await;
        solos(
            &db,
            "b",
            &in_b.iter().map(String::as_str).collect::<Vec<_>>(),
        )
        .await;

        d.clock.advance(secs(1));
        let mut wa = d.workers.remove("a").unwrap();
        let mut wb = d.workers.remove("b").unwrap();
        let (ra, rb) = tokio::join!(wa.step(), wb.step());
        d.workers.insert("a".into(), wa);
        d.workers.insert("b".into(), wb);
        ra.unwrap();
        rb.unwrap();

        let mine = entries(&db, &shared).await;
        let matched: Vec<&Entry> = mine.iter().filter(|e| e.status == "matched").collect();
        match matched.as_slice() {
            [] => {
                // Each commit held one entry and could not lock the other: both dropped
                // the match; the player waits in both queues.
                assert!(mine.iter().all(|e| e.status == "queued"), "{mine:?}");
                *outcomes.entry("neither").or_default() += 1;
            }
            [won] => {
                let lost = mine.iter().find(|e| e.queue != won.queue).unwrap();
                assert_eq!(lost.status, "withdrawn", "{mine:?}");
                assert_eq!(lost.match_id, won.match_id, "{mine:?}");
                *outcomes
                    .entry(if won.queue == "a" { "a" } else { "b" })
                    .or_default() += 1;
            }
            more => panic!("{shared} matched twice: {more:?}"),
        }
        assert_contract_invariants(&db).await;
        // Clear the queues for the next race.
        for p in in_a.iter().chain(&in_b) {
            front::cancel(&db, None, p).await.unwrap();
        }
    }
    eprintln!("two queues racing for one player, winner: {outcomes:?}");

    // The race made certain: both rounds snapshot and solve with the shared player
    // before either commits; then the commits race. One wins or neither does.
    let shared = "z";
    for q in ["a", "b"] {
        let mut ids = vec![shared.to_string()];
        ids.extend((1..6).map(|k| format!("z{q}_{k}")));
        solos(&db, q, &ids.iter().map(String::as_str).collect::<Vec<_>>()).await;
    }
    let mut solved = Vec::new();
    for q in ["a", "b"] {
        let prepared = d
            .runner
            .prepare(q, d.queue(q), RoundTrigger::Manual)
            .await
            .unwrap();
        let s = d.runner.solve(prepared).await.unwrap();
        let players: Vec<&String> = s
            .outcome
            .matches
            .iter()
            .flat_map(|m| m.teams.iter().flatten())
            .collect();
        assert!(
            players.iter().any(|p| *p == shared),
            "{q} proposed {players:?}"
        );
        solved.push(s);
    }
    let lease_a = d.workers["a"].keep_lease().await.unwrap().expect("a leads");
    let lease_b = d.workers["b"].keep_lease().await.unwrap().expect("b leads");
    let sb = solved.pop().unwrap();
    let sa = solved.pop().unwrap();
    let (ra, rb) = tokio::join!(d.runner.commit(sa, &lease_a), d.runner.commit(sb, &lease_b));
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    let mine = entries(&db, shared).await;
    let matched = mine.iter().filter(|e| e.status == "matched").count();
    assert!(matched <= 1, "{mine:?}");
    assert_eq!(ra.matched + rb.matched, 6 * matched, "{ra:?} {rb:?}");
    assert_contract_invariants(&db).await;
}

#[tokio::test]
async fn a_party_in_two_queues_plays_in_one_and_leaves_the_other_whole() {
    let (mut d, db) = two_queues().await;
    enqueue_party(&db, "a", "crew")
        .members(&["c1", "c2"], 1500.0)
        .await;
    enqueue_party(&db, "b", "crew")
        .members(&["c1", "c2"], 1500.0)
        .await;
    solos(&db, "a", &["a1", "a2", "a3", "a4"]).await;
    solos(&db, "b", &["b1", "b2", "b3", "b4"]).await;

    let report = d.round("a").await;
    assert_eq!((report.matched, report.withdrawn), (6, 2), "{report:?}");
    let c1 = entry(&db, "c1", "a").await;
    let c2 = entry(&db, "c2", "a").await;
    assert_eq!(
        (c1.status.as_str(), c1.match_id, c1.team),
        ("matched", c2.match_id, c2.team)
    );
    for member in ["c1", "c2"] {
        let other = entry(&db, member, "b").await;
        assert_eq!(other.status, "withdrawn", "{member}");
        assert_eq!(other.match_id, c1.match_id, "{member}");
        assert!(
            other
                .reject_reason
                .as_deref()
                .is_some_and(|r| r.starts_with("matched in queue a")),
            "{other:?}"
        );
    }
    // b's round finds four solos: no match, and no half of the party.
    d.clock.advance(secs(1));
    assert!(matches!(d.step("b").await, StepOutcome::Waiting { .. }));
    assert_contract_invariants(&db).await;
}

#[tokio::test]
async fn cancelling_one_member_cancels_the_party_in_every_queue() {
    let (mut d, db) = two_queues().await;
    enqueue_party(&db, "a", "trio")
        .members(&["t1", "t2", "t3"], 1500.0)
        .await;
    enqueue_party(&db, "a", "duo")
        .members(&["d1", "d2"], 1500.0)
        .await;
    enqueue_party(&db, "b", "duo")
        .members(&["d1", "d2"], 1500.0)
        .await;
    solos(&db, "a", &["s1", "s2", "s3"]).await;

    assert_eq!(front::cancel(&db, Some("a"), "t2").await.unwrap(), 3);
    assert_eq!(
        front::cancel(&db, None, "d2").await.unwrap(),
        4,
        "both queues"
    );
    for (p, reason) in [
        ("t1", "party member t2 cancelled"),
        ("t2", "cancelled by the client"),
        ("t3", "party member t2 cancelled"),
    ] {
        let e = entry(&db, p, "a").await;
        assert_eq!(
            (e.status.as_str(), e.reject_reason.as_deref()),
            ("cancelled", Some(reason))
        );
    }
    for q in ["a", "b"] {
        assert_eq!(entry(&db, "d1", q).await.status, "cancelled");
        assert_eq!(entry(&db, "d2", q).await.status, "cancelled");
    }
    // Three solos wait; three more make a match of solos only.
    d.clock.advance(secs(1));
    assert!(matches!(d.step("a").await, StepOutcome::Waiting { .. }));
    solos(&db, "a", &["s4", "s5", "s6"]).await;
    let report = d.round("a").await;
    assert_eq!((report.players, report.matched), (6, 6), "{report:?}");
    assert_contract_invariants(&db).await;
}

#[tokio::test]
async fn tickets_expire_on_the_database_clock_unless_kept_alive() {
    let mut d = Daemon::start(
        "[queues.q]\n[queues.q.round]\nevery = \"1s\"\nbudget = \"50ms\"\n\
         [queues.q.tickets]\nttl = \"60s\"\n",
        "lifecycle",
    )
    .await;
    let db = d.db().clone();
    solos(&db, "q", &["gone", "kept"]).await;
    // The rules read only the stored expiry against the database clock, so the test moves
    // `gone`'s expiry into the past instead of sleeping through a TTL: no window a loaded
    // machine can miss.
    let expiry = |player: &'static str| {
        let db = db.clone();
        async move {
            sqlx::query_scalar::<_, chrono::DateTime<chrono::Utc>>(
                "SELECT expires_at FROM queue_entries WHERE player_id = $1",
            )
            .bind(player)
            .fetch_one(&db)
            .await
            .unwrap()
        }
    };
    let ran_out = expiry("gone").await;
    assert_eq!(
        expiry("kept").await.round_subsecs(0),
        ran_out.round_subsecs(0)
    );
    let ttl_left: f64 =
        sqlx::query_scalar("SELECT extract(epoch FROM $1 - clock_timestamp())::float8")
            .bind(ran_out)
            .fetch_one(&db)
            .await
            .unwrap();
    assert!(
        (45.0..=60.0).contains(&ttl_left),
        "a fresh ticket lives the queue's ttl: {ttl_left} s left"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        front::keep_alive(&db, Some("q"), &["kept".to_string()])
            .await
            .unwrap(),
        1
    );
    let kept_until = expiry("kept").await;
    assert!(
        kept_until >= ran_out + chrono::Duration::seconds(1),
        "keep_alive moved the expiry from {ran_out} to {kept_until}"
    );
    sqlx::query(
        "UPDATE queue_entries SET expires_at = clock_timestamp() - interval '1 millisecond' \
         WHERE player_id = 'gone'",
    )
    .execute(&db)
    .await
    .unwrap();

    // Past its TTL: clients read `expired` at once, before the daemon's sweep.
    let stored = entry(&db, "gone", "q").await;
    assert_eq!(stored.status, "queued", "not swept yet");
    let (status, reason): (String, String) =
        sqlx::query_as("SELECT status, reason FROM player_status WHERE player_id = 'gone'")
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!(status, "expired");
    assert_eq!(
        reason,
        "expired: no keep_alive within the queue's ticket_ttl"
    );
    assert_eq!(
        front::keep_alive(&db, Some("q"), &["gone".to_string()])
            .await
            .unwrap(),
        0,
        "an expired ticket is not revived"
    );

    // With five more, seven players are queued in the table; six are live.
    solos(&db, "q", &["f1", "f2", "f3", "f4", "f5"]).await;
    let report = d.round("q").await;
    assert_eq!((report.players, report.matched), (6, 6), "{report:?}");
    let gone = entry(&db, "gone", "q").await;
    assert_eq!(gone.status, "expired");
    assert!(gone.match_id.is_none());
    assert!(
        gone.reject_reason.as_deref().is_some_and(|r| r.starts_with(
            "expired: no keep_alive within the queue's ticket_ttl (ticket ran out at"
        )),
        "{gone:?}"
    );
    assert_eq!(entry(&db, "kept", "q").await.status, "matched");
    assert_eq!(front::cancel(&db, None, "gone").await.unwrap(), 0);
    assert_contract_invariants(&db).await;
    let late: bool = sqlx::query_scalar("SELECT clock_timestamp() >= $1")
        .bind(kept_until)
        .fetch_one(&db)
        .await
        .unwrap();
    assert!(
        !late,
        "the round ran before kept's ticket ran out at {kept_until}"
    );
}

#[tokio::test]
async fn a_party_with_a_member_locked_at_the_snapshot_sits_out_whole() {
    let (mut d, db) = two_queues().await;
    enqueue_party(&db, "a", "trio")
        .members(&["t1", "t2", "t3"], 1500.0)
        .await;
    solos(&db, "a", &["s1", "s2", "s3", "s4", "s5", "s6"]).await;

    // A call in flight holds one member's row while the round runs.
    let mut holder = d.tdb.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM queue_entries WHERE player_id = 't2' FOR UPDATE")
        .execute(&mut *holder)
        .await
        .unwrap();
    let report = d.round("a").await;
    assert_eq!((report.matched, report.sat_out), (6, 2), "{report:?}");
    for t in ["t1", "t2", "t3"] {
        assert_eq!(entry(&db, t, "a").await.status, "queued", "{t}");
    }
    holder.rollback().await.unwrap();

    // Released: the whole party plays in the next round, on one team.
    solos(&db, "a", &["s7", "s8", "s9"]).await;
    let report = d.round("a").await;
    assert_eq!((report.matched, report.sat_out), (6, 0), "{report:?}");
    let t1 = entry(&db, "t1", "a").await;
    for t in ["t2", "t3"] {
        let e = entry(&db, t, "a").await;
        assert_eq!(
            (e.status.as_str(), e.match_id, e.team),
            ("matched", t1.match_id, t1.team)
        );
    }
    assert_contract_invariants(&db).await;
}

#[tokio::test]
async fn a_member_the_core_refuses_takes_its_party_out_with_a_reason() {
    let (mut d, db) = two_queues().await;
    let now = chrono::Utc::now();
    // Written straight into the table (the daemon's own bulk tool): a party by party_id
    // whose member names a role queue a does not have.
    let mut wizard = player("m1", 1500.0, now);
    wizard.party = Some("mal".into());
    wizard.roles = vec!["wizard".into()];
    let mut mate = player("m2", 1500.0, now);
    mate.party = Some("mal".into());
    db::enqueue::enqueue_many(&db, "a", &[wizard, mate], now)
        .await
        .unwrap();
    // A party of the front door, one member's row changed around it afterwards.
    enqueue_party(&db, "a", "pk")
        .members(&["k1", "k2"], 1500.0)
        .await;
    sqlx::query("UPDATE queue_entries SET roles = '{wizard}' WHERE player_id = 'k1'")
        .execute(&db)
        .await
        .unwrap();
    solos(&db, "a", &["v1", "v2", "v3", "v4", "v5", "v6"]).await;

    let report = d.round("a").await;
    assert_eq!((report.matched, report.rejected), (6, 4), "{report:?}");
    for (member, mate) in [("m1", "m2"), ("k1", "k2")] {
        let bad = entry(&db, member, "a").await;
        assert_eq!(bad.status, "rejected");
        let why = bad.reject_reason.unwrap();
        assert!(why.contains("wizard"), "{member}: {why}");
        let other = entry(&db, mate, "a").await;
        assert_eq!(other.status, "rejected", "{mate}: never matched alone");
        assert_eq!(
            other.reject_reason,
            Some(format!("party member {member} was rejected ({why})"))
        );
    }
    assert_contract_invariants(&db).await;
}

#[tokio::test]
async fn a_lease_lost_before_the_commit_writes_nothing() {
    let (mut d, db) = two_queues().await;
    solos(&db, "a", &["l0", "l1", "l2", "l3", "l4", "l5"]).await;
    // Another holder's lease (the worker's was released: nobody holds a now).
    d.workers["a"].release().await.unwrap();
    let lease = db::acquire_lease(&db, "a", "paused", secs(15), d.clock.lease_now())
        .await
        .unwrap()
        .expect("a free lease");
    let solved = solve_one_match(&d, "a").await;

    // The holder pauses past its TTL; no standby took over.
    d.clock.advance(secs(16));
    let err = d.runner.commit(solved, &lease).await.unwrap_err();
    assert!(err.is_lease_lost(), "{err}");
    assert_eq!(count(&db, "SELECT count(*) FROM rounds").await, 0);
    assert_eq!(count(&db, "SELECT count(*) FROM matches").await, 0);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM queue_entries WHERE status = 'queued'"
        )
        .await,
        6
    );

    // The queue's worker takes the expired lease and runs the round.
    d.clock.advance(secs(1));
    let first = d.step("a").await;
    let report = match first {
        StepOutcome::Ran(report) => report,
        _ => d.round("a").await,
    };
    assert_eq!(report.matched, 6);
    let term: i64 = sqlx::query_scalar("SELECT term FROM leases WHERE queue = 'a'")
        .fetch_one(&db)
        .await
        .unwrap();
    assert!(term > lease.term);
    assert_contract_invariants(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_racing_a_commit_wins_whole_or_finds_nothing() {
    let d = Daemon::start(TWO_QUEUES, "lifecycle").await;
    let db = d.db().clone();
    let canceller = d.tdb.new_pool(2).await;
    d.workers["a"].release().await.unwrap();
    let lease = db::acquire_lease(&db, "a", "racer", secs(15), d.clock.lease_now())
        .await
        .unwrap()
        .expect("a free lease");
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    for i in 0..12 {
        let ids: Vec<String> = (0..6).map(|k| format!("r{i}_{k}")).collect();
        solos(
            &db,
            "a",
            &ids.iter().map(String::as_str).collect::<Vec<_>>(),
        )
        .await;
        let solved = solve_one_match(&d, "a").await;

        let victim = ids[0].clone();
        let delay = Duration::from_micros(400 * (i % 6) as u64);
        let cancel = {
            let canceller = canceller.clone();
            let victim = victim.clone();
            async move {
                tokio::time::sleep(delay).await;
                front::cancel(&canceller, Some("a"), &victim).await.unwrap()
            }
        };
        // The first two runs fix the order (cancel, then commit; commit, then cancel), so
        // both outcomes are shown to happen; the others race.
        let (report, cancelled) = match i {
            0 => {
                let cancelled = cancel.await;
                (d.runner.commit(solved, &lease).await, cancelled)
            }
            1 => {
                let report = d.runner.commit(solved, &lease).await;
                (report, cancel.await)
            }
            _ => tokio::join!(d.runner.commit(solved, &lease), cancel),
        };
        let report = report.unwrap();
        let victim_entry = entry(&db, &victim, "a").await;
        match cancelled {
            1 => {
                // The cancel won: the match is dropped whole, the others still wait.
                assert_eq!(victim_entry.status, "cancelled");
                assert_eq!(
                    (report.matched, report.dropped_by_cancel),
                    (0, 5),
                    "{report:?}"
                );
                for p in &ids[1..] {
                    assert_eq!(entry(&db, p, "a").await.status, "queued", "{p}");
                    front::cancel(&db, None, p).await.unwrap();
                }
                *outcomes.entry("cancelled").or_default() += 1;
            }
            0 => {
                // The commit won: the cancel found nothing queued.
                assert_eq!(victim_entry.status, "matched");
                assert_eq!(report.matched, 6, "{report:?}");
                *outcomes.entry("matched").or_default() += 1;
            }
            n => panic!("cancel returned {n}"),
        }
    }
    assert!(
        outcomes.get("cancelled").is_some_and(|n| *n >= 1)
            && outcomes.get("matched").is_some_and(|n| *n >= 1),
        "a cancel before the commit wins, one after it finds nothing: {outcomes:?}"
    );
    eprintln!("cancel racing a commit: {outcomes:?}");
    assert_contract_invariants(&db).await;
}

/// Poll until `sql` (a count) is `want`.
/// A manual round of `queue` prepared and solved, not committed: it forms one match.
async fn solve_one_match(d: &Daemon, queue: &str) -> SolvedRound {
    let prepared = d
        .runner
        .prepare(queue, d.queue(queue), RoundTrigger::Manual)
        .await
        .unwrap();
    let solved = d.runner.solve(prepared).await.unwrap();
    assert_eq!(solved.outcome.matches.len(), 1);
    solved
}

async fn wait_until(db: &PgPool, sql: &'static str, want: i64) {
    wait_for_count(db, sql, want, Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_publishes_new_queues_and_retires_removed_ones() {
    const DAEMON: &str =
        "[daemon]\npoll_interval = \"1s\"\nlease_ttl = \"3s\"\nlease_renew = \"1s\"\n";
    let queues = |names: &[&str]| {
        let mut toml = format!("default_queue = \"{}\"\n{DAEMON}", names[0]);
        for n in names {
            toml.push_str(&format!(
                "[queues.{n}]\n[queues.{n}.round]\nevery = \"1h\"\nbudget = \"50ms\"\n"
            ));
        }
        toml
    };
    let tdb = fresh_db().await;
    let db = tdb.pool.clone();
    // A queue an earlier config served, with a player still waiting in it.
    let old = Config::from_toml_str(&queues(&["z"])).unwrap();
    db::queues::publish_queue(&db, "z", &old.queues["z"], "old-daemon")
        .await
        .unwrap();
    solos(&db, "z", &["z1"]).await;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("matchmaker.toml");
    std::fs::write(&path, queues(&["a", "b"])).unwrap();
    let options = DaemonOptions {
        holder: "reloader".into(),
        config_path: Some(path.clone()),
        ..DaemonOptions::default()
    };
    let config = Config::load(&path).unwrap();
    let task = spawn_daemon_with(tdb.new_pool(4).await, config, options);

    // At start: a and b published, z (no config lists it) retired with its player.
    wait_until(
        &db,
        "SELECT count(*) FROM queues WHERE active AND queue IN ('a', 'b')",
        2,
    )
    .await;
    wait_until(
        &db,
        "SELECT count(*) FROM queues WHERE queue = 'z' AND NOT active",
        1,
    )
    .await;
    let z1 = entry(&db, "z1", "z").await;
    assert_eq!(
        (z1.status.as_str(), z1.reject_reason.as_deref()),
        (
            "rejected",
            Some("queue z is not served: no matchmaker config lists it")
        )
    );

    let (_, client) = client_login(&tdb, 1).await;
    solos(&client, "a", &["a1"]).await;
    solos(&client, "b", &["b1", "b2"]).await;

    // The reload: c added, b removed.
    std::fs::write(&path, queues(&["a", "c"])).unwrap();
    wait_until(
        &db,
        "SELECT count(*) FROM queues WHERE queue = 'c' AND active",
        1,
    )
    .await;
    wait_until(
        &db,
        "SELECT count(*) FROM queues WHERE queue = 'b' AND NOT active",
        1,
    )
    .await;
    for p in ["b1", "b2"] {
        let e = entry(&db, p, "b").await;
        assert_eq!(
            (e.status.as_str(), e.reject_reason.as_deref()),
            (
                "rejected",
                Some("queue b was removed from the matchmaker's config")
            ),
            "{p}"
        );
    }
    let err = front::enqueue(&client, "b", &solo_player("b3", 1500.0))
        .await
        .expect_err("b is retired");
    assert!(
        err.to_string()
            .contains("queue = 'b': unknown queue; queues: a, c"),
        "{err}"
    );
    solos(&client, "c", &["c1"]).await;
    assert_eq!(entry(&db, "a1", "a").await.status, "queued", "a untouched");
    let catalog: Vec<String> = sqlx::query_scalar("SELECT queue FROM queue_catalog ORDER BY 1")
        .fetch_all(&client)
        .await
        .unwrap();
    assert_eq!(catalog, ["a", "c"]);

    task.stop().await;
    assert_contract_invariants(&db).await;
}
