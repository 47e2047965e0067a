//! Notifications between logins: each login hears, on a channel no other login can name,
//! only the matches that hold its players and the countdown of queues where it has
//! players waiting; and a login that stalls PostgreSQL's notification queue (LISTEN, then
//! stay inside a transaction while notifications pile up) stops no enqueue and no round:
//! past `matchmaker.notify_queue_limit` nothing is sent, and once the stuck session ends
//! notifications flow again.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::round::RoundReport;
use matchmaker::daemon::worker::QueueWorker;
use serde_json::Value;
use sqlx::postgres::PgListener;
use sqlx::{Connection, PgConnection, PgPool};

use crate::support::*;

/// q: 3v3 peer-to-peer, a round every 10 minutes (run by moving the clock); players of
/// one `band` only meet each other.
const QUEUES: &str = include_str!("configs/tenancy_notify.toml");

struct World {
    clock: ManualClock,
    worker: QueueWorker,
}

impl World {
    /// The queue's leader, on a pool of its own (connected now: after any setting the
    /// test made for the database).
    async fn new(tdb: &TestDb) -> World {
        World::with(tdb, QUEUES).await
    }

    async fn with(tdb: &TestDb, queues: &str) -> World {
        let pool = tdb.new_pool(2).await;
        let Leader { clock, worker, .. } = leader(&pool, queues, "q", "tenancy").await;
        World { clock, worker }
    }

    async fn round(&mut self) -> RoundReport {
        self.clock.advance(Duration::from_secs(601));
        expect_round(self.worker.step().await.unwrap(), "q")
    }
}

/// A player of `q` in the band of their skill (500 points wide).
async fn enqueue_banded(client: &PgPool, player: &str, skill: f64) {
    let band = (skill / 500.0).floor().to_string();
    enqueue(client, "q", player, skill)
        .latency("eu", 30.0)
        .attributes(serde_json::json!({ "band": band }))
        .await;
}

async fn channel_of(client: &PgPool) -> String {
    queue_channel(client, "q").await
}

async fn listener_of(client: &PgPool) -> PgListener {
    let channel = channel_of(client).await;
    let mut listener = PgListener::connect_with(client).await.unwrap();
    listener.listen(&channel).await.unwrap();
    listener
}

/// Every notification that arrives until none has come for half a second.
async fn drain(listener: &mut PgListener) -> Vec<Value> {
    let mut notes = Vec::new();
    while let Ok(note) = tokio::time::timeout(Duration::from_millis(500), listener.recv()).await {
        let note = note.expect("the listener's connection");
        notes.push(serde_json::from_str(note.payload()).expect("JSON payload"));
    }
    notes
}

fn matches_in(notes: &[Value]) -> BTreeSet<i64> {
    notes
        .iter()
        .filter(|n| n["event"] == "match")
        .map(|n| n["match_id"].as_i64().unwrap())
        .collect()
}

/// match_id -> the logins of its players.
async fn logins_by_match(db: &PgPool) -> BTreeMap<i64, BTreeSet<String>> {
    let rows: Vec<(i64, String)> = sqlx::query_as(
        "SELECT mp.match_id, e.owner FROM match_players mp
           JOIN queue_entries e ON e.entry_id = mp.entry_id",
    )
    .fetch_all(db)
    .await
    .unwrap();
    let mut by_match: BTreeMap<i64, BTreeSet<String>> = BTreeMap::new();
    for (m, owner) in rows {
        by_match.entry(m).or_default().insert(owner);
    }
    by_match
}

#[tokio::test]
async fn each_login_hears_only_its_own_matches_on_a_channel_no_other_login_can_name() {
    let tdb = fresh_db().await;
    let mut w = World::new(&tdb).await;
    let (a, client_a) = client_login(&tdb, 2).await;
    let (b, client_b) = client_login(&tdb, 2).await;
    let (_, client_c) = client_login(&tdb, 2).await;
    let mut hear_a = listener_of(&client_a).await;
    let mut hear_b = listener_of(&client_b).await;
    let mut hear_c = listener_of(&client_c).await;

    // Three skill bands: A's own match, B's own match, and one both share.
    for i in 0..6 {
        enqueue_banded(&client_a, &format!("p{i}"), 1000.0 + i as f64).await;
        enqueue_banded(&client_b, &format!("p{i}"), 2400.0 + i as f64).await;
    }
    for i in 6..9 {
        enqueue_banded(&client_a, &format!("p{i}"), 1700.0 + i as f64).await;
        enqueue_banded(&client_b, &format!("p{i}"), 1700.0 + i as f64).await;
    }
    // And one of A's far from everyone: left over, A still has a player waiting.
    enqueue_banded(&client_a, "far", 4500.0).await;
    let before_a = drain(&mut hear_a).await;
    let before_b = drain(&mut hear_b).await;
    assert!(
        before_a.iter().all(|n| n["event"] == "countdown"),
        "{before_a:?}"
    );
    assert!(
        before_b.iter().all(|n| n["event"] == "countdown"),
        "{before_b:?}"
    );

    let r = w.round().await;
    assert_eq!(r.matched, 18, "{r:?}");
    let by_match = logins_by_match(&tdb.pool).await;
    let of = |login: &str| -> BTreeSet<i64> {
        by_match
            .iter()
            .filter(|(_, logins)| logins.contains(login))
            .map(|(m, _)| *m)
            .collect()
    };
    let notes_a = drain(&mut hear_a).await;
    let notes_b = drain(&mut hear_b).await;
    assert_eq!(matches_in(&notes_a), of(&a), "{notes_a:?}");
    assert_eq!(matches_in(&notes_b), of(&b), "{notes_b:?}");
    // The test tells something apart: each login has a match the other is not in, and
    // a match both are in is told to both.
    assert!(of(&a) != of(&b), "{by_match:?}");
    assert!(!of(&a).is_disjoint(&of(&b)), "{by_match:?}");
    // The countdown after the round goes to logins with a player still waiting: A's
    // "far", nobody of B's. C queued nobody: it heard nothing at all.
    let after_round = |notes: &[Value]| {
        notes
            .iter()
            .any(|n| n["event"] == "countdown" && n["cause"] == "round")
    };
    assert!(after_round(&notes_a), "{notes_a:?}");
    assert!(!after_round(&notes_b), "{notes_b:?}");
    let notes_c = drain(&mut hear_c).await;
    assert!(notes_c.is_empty(), "{notes_c:?}");

    // B can neither read the key nor name A's channel, nor see A's LISTEN.
    for sql in [
        format!("SELECT matchmaker_login_channel('{a}', 'q')"),
        "SELECT key FROM channel_key".to_string(),
    ] {
        let err = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .execute(&client_b)
            .await
            .unwrap_err();
        assert_eq!(db_error(&err).0, "42501", "{sql}");
    }
    let seen: Vec<Option<String>> =
        sqlx::query_scalar("SELECT query FROM pg_stat_activity WHERE usename = $1")
            .bind(&a)
            .fetch_all(&client_b)
            .await
            .unwrap();
    assert!(!seen.is_empty());
    assert!(
        seen.iter()
            .all(|q| q.as_deref() == Some("<insufficient privilege>")),
        "{seen:?}"
    );
    let channel_a = channel_of(&client_a).await;
    let listening: Vec<String> = sqlx::query_scalar("SELECT pg_listening_channels()")
        .fetch_all(&client_b)
        .await
        .unwrap();
    assert!(!listening.contains(&channel_a), "{listening:?}");
}

#[tokio::test]
async fn a_ready_check_and_its_cancellation_tell_each_login_of_its_own_players() {
    let tdb = fresh_db().await;
    let queues = format!("{QUEUES}[queues.q.ready_check]\ntimeout = \"1m\"\n");
    let mut w = World::with(&tdb, &queues).await;
    let (_, client_a) = client_login(&tdb, 2).await;
    let (_, client_b) = client_login(&tdb, 2).await;
    let mut hear_a = listener_of(&client_a).await;
    let mut hear_b = listener_of(&client_b).await;
    // One match of three of A's and three of B's, all named alike.
    for i in 0..3 {
        enqueue_banded(&client_a, &format!("p{i}"), 1500.0 + i as f64).await;
        enqueue_banded(&client_b, &format!("p{i}"), 1500.0 + i as f64).await;
    }
    drain(&mut hear_a).await;
    drain(&mut hear_b).await;
    let r = w.round().await;
    assert_eq!((r.matches, r.matched), (1, 6), "{r:?}");
    let match_id: i64 = sqlx::query_scalar("SELECT match_id FROM matches")
        .fetch_one(&tdb.pool)
        .await
        .unwrap();
    for hear in [&mut hear_a, &mut hear_b] {
        let notes = drain(hear).await;
        let checks: Vec<&Value> = notes
            .iter()
            .filter(|n| n["event"] == "ready_check")
            .collect();
        assert_eq!(checks.len(), 1, "{notes:?}");
        assert_eq!(checks[0]["match_id"], match_id);
        assert!(checks[0]["answer_by"].is_string(), "{notes:?}");
    }

    // A's three and B's p1 accept, then B's p0 declines: the match is cancelled. A hears
    // its three players queued again; B hears of its own: p1 queued again, p0 and p2
    // (who had not answered) out.
    for (client, player) in [
        (&client_a, "p0"),
        (&client_a, "p1"),
        (&client_a, "p2"),
        (&client_b, "p1"),
    ] {
        let said: String = sqlx::query_scalar("SELECT accept_match($1, $2)")
            .bind(player)
            .bind(match_id)
            .fetch_one(client)
            .await
            .unwrap();
        assert_eq!(said, "accepted");
    }
    let said: String = sqlx::query_scalar("SELECT decline_match('p0', $1)")
        .bind(match_id)
        .fetch_one(&client_b)
        .await
        .unwrap();
    assert_eq!(said, "declined");
    w.worker.step().await.unwrap();
    let cancelled = |notes: Vec<Value>| -> Value {
        let mut c: Vec<Value> = notes
            .into_iter()
            .filter(|n| n["event"] == "cancelled")
            .collect();
        assert_eq!(c.len(), 1, "{c:?}");
        c.remove(0)
    };
    let to_a = cancelled(drain(&mut hear_a).await);
    let to_b = cancelled(drain(&mut hear_b).await);
    assert_eq!(to_a["match_id"], match_id);
    assert_eq!(
        to_a["requeued"],
        serde_json::json!(["p0", "p1", "p2"]),
        "{to_a}"
    );
    assert_eq!(to_a["declined"], serde_json::json!([]), "{to_a}");
    assert_eq!(to_b["requeued"], serde_json::json!(["p1"]), "{to_b}");
    assert_eq!(to_b["declined"], serde_json::json!(["p0", "p2"]), "{to_b}");
    // The record keeps all six answers, the second of each id under its entry.
    let answers: Value = sqlx::query_scalar("SELECT answers FROM matches WHERE match_id = $1")
        .bind(match_id)
        .fetch_one(&tdb.pool)
        .await
        .unwrap();
    let answers = answers.as_object().unwrap();
    assert_eq!(answers.len(), 6, "{answers:?}");
    assert_eq!(
        answers.values().filter(|a| *a == "accepted").count(),
        4,
        "{answers:?}"
    );
}

/// `n` notifications of 7000 bytes on `channel`, in transactions of 200.
async fn flood(conn: &mut PgConnection, channel: &str, n: usize) {
    for _ in 0..n / 200 {
        sqlx::query("SELECT pg_notify($1, repeat('x', 7000)) FROM generate_series(1, 200)")
            .bind(channel)
            .execute(&mut *conn)
            .await
            .unwrap();
    }
}

async fn usage(db: &PgPool) -> f64 {
    sqlx::query_scalar("SELECT pg_notification_queue_usage()")
        .fetch_one(db)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_stalled_notification_queue_stops_no_enqueue_and_no_round() {
    // Alone: the notification queue is the cluster's, and another test's stuck listener
    // would hold it past this test's limit.
    let _alone = crate::support::TIMING.write().await;
    let tdb = fresh_db().await;
    let (attacker, _) = client_login(&tdb, 1).await;
    let connect = || async { connect_as(&tdb, &attacker).await.unwrap() };
    // The attacker listens, then stays inside a transaction.
    let stuck = stuck_listener(&tdb, &attacker, "spam").await;
    let before = usage(&tdb.pool).await;
    let mut sender = connect().await;
    flood(&mut sender, "spam", 2000).await;
    let held = usage(&tdb.pool).await;
    assert!(held > before, "the flood is held: {before} -> {held}");

    // The 8 GB queue is not filled in a test: the limit is lowered to half of what the
    // flood holds, for this database's new sessions (the daemon's and the honest login's).
    let limit = before + (held - before) / 2.0;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE {} SET matchmaker.notify_queue_limit = '{limit}'",
        tdb.name
    )))
    .execute(&tdb.pool)
    .await
    .unwrap();
    let mut w = World::new(&tdb).await;
    let (_, honest) = client_login(&tdb, 2).await;
    let (usage_now, limit_now) = matchmaker::db::notify::queue_usage(&tdb.new_pool(1).await)
        .await
        .unwrap();
    assert!(usage_now >= limit_now, "{usage_now} past {limit_now}");
    let mut hear = listener_of(&honest).await;

    for i in 0..6 {
        enqueue_banded(&honest, &format!("a{i}"), 1500.0 + i as f64).await;
    }
    let r = w.round().await;
    assert_eq!((r.matches, r.matched), (1, 6), "{r:?}");
    let nothing = drain(&mut hear).await;
    assert!(
        nothing.is_empty(),
        "past the limit nothing is sent: {nothing:?}"
    );

    // The stuck session ends: its backlog goes with it, and notifications flow again.
    stuck.close().await.unwrap();
    let started = std::time::Instant::now();
    while usage(&tdb.pool).await >= limit {
        assert!(started.elapsed() < secs(10), "the backlog is freed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for i in 0..6 {
        enqueue_banded(&honest, &format!("b{i}"), 1500.0 + i as f64).await;
    }
    let r = w.round().await;
    assert_eq!((r.matches, r.matched), (1, 6), "{r:?}");
    let notes = drain(&mut hear).await;
    assert_eq!(matches_in(&notes).len(), 1, "{notes:?}");
    assert_nobody_matched_twice(&tdb.pool).await;
}
