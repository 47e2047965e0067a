//! Backfill of running sessions (`request_backfill`, `core::backfill`), against a real
//! PostgreSQL: a session that lost
//! a player is refilled by the leader's immediate backfill round (the schedule far away)
//! with the close candidate, not the far one, its members untouched; parties stay whole;
//! a scheduled round fills and forms new matches from one pool; a cancel during the round
//! drops the fill; a 16v16 session is refilled through the lobby path; an expired
//! request says why; malformed requests are refused readably
//! and write nothing; a login neither sees nor cancels another login's request. Players
//! are enqueued by a client login, requests made by a game server's login
//! (matchmaker_server).

use std::sync::Arc;
use std::time::Duration;

use matchmaker::config::{Config, QueueConfig};
use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::round::{RoundRunner, SolvedRound};
use matchmaker::daemon::worker::{QueueWorker, StepOutcome};
use matchmaker::db::{Lease, RoundTrigger};
use serde_json::{Value, json};
use sqlx::PgPool;
use sqlx::postgres::PgListener;

use crate::support::*;

/// q: 2 teams of 3, peer-to-peer, a round every 10 minutes (never during a test unless
/// the clock is moved), backfill on with its defaults.
const QUEUES: &str = include_str!("configs/backfill.toml");

struct World {
    tdb: TestDb,
    clock: ManualClock,
    worker: QueueWorker,
    config: Arc<QueueConfig>,
}

impl World {
    async fn new() -> World {
        let tdb = fresh_db().await;
        let Leader {
            clock,
            worker,
            config,
            ..
        } = leader(&tdb.pool, QUEUES, "q", "bf").await;
        World {
            tdb,
            clock,
            worker,
            config,
        }
    }

    fn db(&self) -> &PgPool {
        &self.tdb.pool
    }

    /// The backfill round up to its commit: the runner, the worker's lease, the solve.
    async fn solve_backfill(&self) -> (RoundRunner, Lease, SolvedRound) {
        let runner = RoundRunner::new(self.db().clone(), Arc::new(self.clock.clone()));
        let lease = self.worker.keep_lease().await.unwrap().expect("leading");
        let prepared = runner
            .prepare("q", self.config.clone(), RoundTrigger::Backfill)
            .await
            .unwrap();
        let solved = runner.solve(prepared).await.unwrap();
        (runner, lease, solved)
    }
}

/// Members a, b, c on team 0 and d, e on team 1 (one left team 1), all 1500 at 30 ms.
fn lost_one() -> Value {
    let m = |id: &str, team: i32| json!({"player_id": id, "team": team, "skill": 1500, "latencies": {"eu": 30}});
    json!([m("a", 0), m("b", 0), m("c", 0), m("d", 1), m("e", 1)])
}

/// A world where a client has queued `near` (1500, 30 ms from eu) and a game server asks
/// a fill for `session`, which lost a player ([`lost_one`]): the world, the client's and
/// the server's pools, the request's id.
async fn near_and_a_request(session: &str) -> (World, PgPool, PgPool, i64) {
    let w = World::new().await;
    let (_, client) = client_login(&w.tdb, 2).await;
    let (_, server) = server_login(&w.tdb, 2).await;
    enqueue(&client, "q", "near", 1500.0)
        .latency("eu", 30.0)
        .await;
    let id = request_backfill(&server, "q", session, &lost_one(), &[0, 1], "30 seconds")
        .await
        .unwrap();
    (w, client, server, id)
}

/// The worker's next step must be an immediate backfill round (a second later: they
/// are spaced by `backfill.spacing`).
async fn backfill_round(w: &mut World) -> matchmaker::daemon::round::RoundReport {
    w.clock.advance(secs(1));
    match w.worker.step().await.unwrap() {
        StepOutcome::Ran(r) if r.trigger == RoundTrigger::Backfill => r,
        other => panic!("expected an immediate backfill round, got {other:?}"),
    }
}

#[tokio::test]
async fn a_session_that_lost_a_player_is_refilled_at_once_by_a_close_player() {
    let mut w = World::new().await;
    let (_, client) = client_login(&w.tdb, 2).await;
    let (_, server) = server_login(&w.tdb, 2).await;
    enqueue(&client, "q", "far", 2900.0)
        .latency("eu", 260.0)
        .await;
    enqueue(&client, "q", "near", 1520.0)
        .latency("eu", 35.0)
        .await;
    let before: (Option<chrono::DateTime<chrono::Utc>>, Option<i64>) =
        sqlx::query_as("SELECT next_round_at, last_round_id FROM queue_state WHERE queue = 'q'")
            .fetch_one(w.db())
            .await
            .unwrap();
    let (mut listener, channel) = listen_to(&client, "q").await;
    // The game server hears of its fill on its own channel.
    let server_channel = queue_channel(&server, "q").await;
    assert_ne!(server_channel, channel);
    let mut server_listener = PgListener::connect_with(&server).await.unwrap();
    server_listener.listen(&server_channel).await.unwrap();

    let id = request_backfill(&server, "q", "game-1", &lost_one(), &[0, 1], "30 seconds")
        .await
        .unwrap();
    // The clock has not moved: the schedule is 10 minutes away, the round is the
    // request's own, on the worker's first look.
    let report = backfill_round(&mut w).await;
    assert_eq!(report.backfilled, 1, "{report:?}");
    assert_eq!(report.matched, 1, "{report:?}");

    let (st, reason, filled_by) = backfill_status(&server, id).await.unwrap();
    assert_eq!(st, "filled", "{reason:?}");
    assert_eq!(filled_by, vec!["near".to_string()]);
    let near: (String, Option<String>, Option<i32>) = sqlx::query_as(
        "SELECT status, session_id, team FROM player_status WHERE player_id = 'near'",
    )
    .fetch_one(&client)
    .await
    .unwrap();
    assert_eq!(near, ("matched".into(), Some("game-1".into()), Some(1)));
    let far: String =
        sqlx::query_scalar("SELECT status FROM player_status WHERE player_id = 'far'")
            .fetch_one(&client)
            .await
            .unwrap();
    assert_eq!(far, "queued");

    // The old members are untouched: nobody enqueued or matched them.
    let members_written: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM queue_entries WHERE player_id IN ('a','b','c','d','e'))
              + (SELECT count(*) FROM match_players WHERE player_id IN ('a','b','c','d','e'))",
    )
    .fetch_one(w.db())
    .await
    .unwrap();
    assert_eq!(members_written, 0);
    // The scheduled rounds' countdown did not move.
    let after: (Option<chrono::DateTime<chrono::Utc>>, Option<i64>) =
        sqlx::query_as("SELECT next_round_at, last_round_id FROM queue_state WHERE queue = 'q'")
            .fetch_one(w.db())
            .await
            .unwrap();
    assert_eq!(after, before);

    // One notification for the fill, event backfill, naming the new player.
    let note = tokio::time::timeout(Duration::from_secs(5), listener.recv())
        .await
        .expect("a backfill notification")
        .unwrap();
    let payload: Value = serde_json::from_str(note.payload()).unwrap();
    assert_eq!(payload["event"], "backfill", "{payload}");
    assert_eq!(payload["players"][0]["player_id"], "near", "{payload}");
    assert_eq!(payload["players"][0]["team"], 1, "{payload}");
    let note = tokio::time::timeout(Duration::from_secs(5), server_listener.recv())
        .await
        .expect("the server's backfill notification")
        .unwrap();
    let told: Value = serde_json::from_str(note.payload()).unwrap();
    assert_eq!(
        told, payload,
        "the server is told what the player's backend is"
    );
    assert_nobody_matched_twice(w.db()).await;
    // The fill is the new player's last match (`recent_matches`).
    assert_recent_matches_agree(w.db(), w.config.history_matches()).await;

    // Nothing left to fill: the next look waits for the schedule.
    let next = w.worker.step().await.unwrap();
    assert!(matches!(next, StepOutcome::Waiting { .. }), "{next:?}");
}

#[tokio::test]
async fn parties_stay_whole() {
    let mut w = World::new().await;
    let (_, client) = client_login(&w.tdb, 2).await;
    let (_, server) = server_login(&w.tdb, 2).await;
    // one slot on each team: the close duo cannot be split, two farther solos fill
    enqueue_party(&client, "q", "duo")
        .members(&["d1", "d2"], 1500.0)
        .await;
    enqueue(&client, "q", "s1", 1700.0)
        .latency("eu", 30.0)
        .await;
    enqueue(&client, "q", "s2", 1300.0)
        .latency("eu", 30.0)
        .await;
    let m = |id: &str, team: i32| json!({"player_id": id, "team": team, "skill": 1500, "latencies": {"eu": 30}});
    let members = json!([m("a", 0), m("b", 0), m("c", 1), m("d", 1)]);
    let id = request_backfill(&server, "q", "game-2", &members, &[1, 1], "30 seconds")
        .await
        .unwrap();
    backfill_round(&mut w).await;
    let (st, _, mut filled_by) = backfill_status(&server, id).await.unwrap();
    assert_eq!(st, "filled");
    filled_by.sort();
    assert_eq!(filled_by, vec!["s1".to_string(), "s2".to_string()]);
    let teams: Vec<i32> = sqlx::query_scalar(
        "SELECT team FROM player_status WHERE player_id IN ('s1', 's2') ORDER BY team",
    )
    .fetch_all(&client)
    .await
    .unwrap();
    assert_eq!(teams, vec![0, 1]);
    let duo: Vec<String> =
        sqlx::query_scalar("SELECT status FROM player_status WHERE party_id = 'duo'")
            .fetch_all(&client)
            .await
            .unwrap();
    assert_eq!(duo, vec!["queued".to_string(), "queued".to_string()]);

    // Two open slots on team 1: the duo fills them together.
    let members = json!([m("x", 0), m("y", 0), m("z", 0), m("v", 1)]);
    let id = request_backfill(&server, "q", "game-3", &members, &[0, 2], "30 seconds")
        .await
        .unwrap();
    backfill_round(&mut w).await;
    let (st, _, filled_by) = backfill_status(&server, id).await.unwrap();
    assert_eq!(st, "filled");
    assert_eq!(filled_by, vec!["d1".to_string(), "d2".to_string()]);
    assert_nobody_matched_twice(w.db()).await;
    assert_recent_matches_agree(w.db(), w.config.history_matches()).await;
}

#[tokio::test]
async fn a_scheduled_round_fills_and_forms_new_matches_from_one_pool() {
    let mut w = World::new().await;
    let (_, client) = client_login(&w.tdb, 2).await;
    let (_, server) = server_login(&w.tdb, 2).await;
    for i in 0..7 {
        enqueue(&client, "q", &format!("p{i}"), 1400.0 + 30.0 * i as f64)
            .latency("eu", 30.0)
            .await;
    }
    // The request arrives with the tick due: the scheduled round takes it.
    let id = request_backfill(&server, "q", "game-4", &lost_one(), &[0, 1], "30 seconds")
        .await
        .unwrap();
    w.clock.advance(Duration::from_secs(601));
    let report = match w.worker.step().await.unwrap() {
        StepOutcome::Ran(r) => r,
        other => panic!("expected a round, got {other:?}"),
    };
    assert_eq!(report.trigger, RoundTrigger::Schedule);
    assert_eq!(report.backfilled, 1, "{report:?}");
    assert_eq!(report.matches, 2, "one fill and one new match: {report:?}");
    assert_eq!(report.matched, 7, "{report:?}");
    let (st, _, filled_by) = backfill_status(&server, id).await.unwrap();
    assert_eq!(st, "filled");
    let in_new_match: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM match_players mp JOIN matches m USING (match_id)
          WHERE m.session_id IS NULL AND mp.player_id = $1",
    )
    .bind(&filled_by[0])
    .fetch_one(w.db())
    .await
    .unwrap();
    assert_eq!(in_new_match, 0);
    assert_nobody_matched_twice(w.db()).await;
    assert_contract_invariants(w.db()).await;
    // The fault audit reads the fill (one player, team 1) as the request's open slots, and
    // the new match as the queue's format.
    let entries: Vec<i64> = sqlx::query_scalar("SELECT entry_id FROM queue_entries")
        .fetch_all(w.db())
        .await
        .unwrap();
    let audit = audit::audit(
        w.db(),
        audit::Expected {
            entries: &entries,
            cancelled_players: &[],
        },
    )
    .await
    .unwrap();
    assert_eq!(audit.short_matches, 0, "{audit}");
}

#[tokio::test]
async fn a_cancel_during_the_round_drops_the_fill_and_the_request_stays_open() {
    let (w, client, server, id) = near_and_a_request("game-5").await;
    let (runner, lease, solved) = w.solve_backfill().await;
    assert_eq!(solved.backfill.fills.len(), 1);
    let cancelled: i32 = sqlx::query_scalar("SELECT cancel('near', 'q')")
        .fetch_one(&client)
        .await
        .unwrap();
    assert_eq!(cancelled, 1);
    let report = runner.commit(solved, &lease).await.unwrap();
    assert_eq!(report.backfilled, 0);
    let (st, reason, filled_by) = backfill_status(&server, id).await.unwrap();
    assert_eq!(st, "open");
    assert!(reason.unwrap().contains("fill was dropped"));
    assert!(filled_by.is_empty());
}

/// A request cancelled, expired or locked (its client's call in flight) between the
/// round's snapshot and its commit: the fill is dropped, the candidate stays queued, and
/// the request keeps what happened to it (a locked one stays open and is filled later).
#[tokio::test]
async fn a_request_closed_or_locked_during_the_round_drops_its_fill() {
    for case in ["cancelled", "expired", "locked"] {
        let (mut w, _client, server, id) = near_and_a_request("game-10").await;
        let (runner, lease, solved) = w.solve_backfill().await;
        assert_eq!(solved.backfill.fills.len(), 1, "{case}");

        let mut holder = None;
        match case {
            "cancelled" => {
                let cancelled: bool = sqlx::query_scalar("SELECT cancel_backfill($1)")
                    .bind(id)
                    .fetch_one(&server)
                    .await
                    .unwrap();
                assert!(cancelled);
            }
            "expired" => {
                sqlx::query(
                    "UPDATE backfill_requests SET expires_at = now() - interval '1 second'
                      WHERE request_id = $1",
                )
                .bind(id)
                .execute(w.db())
                .await
                .unwrap();
            }
            _ => {
                let mut tx = w.db().begin().await.unwrap();
                sqlx::query("SELECT 1 FROM backfill_requests WHERE request_id = $1 FOR UPDATE")
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                holder = Some(tx);
            }
        }
        let report = tokio::time::timeout(Duration::from_secs(10), runner.commit(solved, &lease))
            .await
            .unwrap_or_else(|_| panic!("{case}: the commit waited for the request's lock"))
            .unwrap();
        if let Some(tx) = holder {
            tx.rollback().await.unwrap();
        }
        assert_eq!(
            (report.backfilled, report.matched),
            (0, 0),
            "{case}: {report:?}"
        );
        let near: String =
            sqlx::query_scalar("SELECT status FROM queue_entries WHERE player_id = 'near'")
                .fetch_one(w.db())
                .await
                .unwrap();
        assert_eq!(near, "queued", "{case}: the candidate still waits");
        let (st, _, filled_by) = backfill_status(&server, id).await.unwrap();
        assert!(filled_by.is_empty(), "{case}: {filled_by:?}");
        let stored: (String, Option<i64>) =
            sqlx::query_as("SELECT status, match_id FROM backfill_requests WHERE request_id = $1")
                .bind(id)
                .fetch_one(w.db())
                .await
                .unwrap();
        match case {
            "cancelled" => assert_eq!(
                (st.as_str(), stored),
                ("cancelled", ("cancelled".into(), None))
            ),
            "expired" => assert_eq!(st, "expired"),
            _ => {
                assert_eq!((st.as_str(), stored), ("open", ("open".into(), None)));
                // Unlocked, the next backfill round (its retry delay later) fills it.
                w.clock.advance(Duration::from_secs(6));
                let report = backfill_round(&mut w).await;
                assert_eq!(report.backfilled, 1, "{report:?}");
                let (st, _, filled_by) = backfill_status(&server, id).await.unwrap();
                assert_eq!(
                    (st.as_str(), filled_by),
                    ("filled", vec!["near".to_string()])
                );
            }
        }
        assert_eq!(
            count(
                w.db(),
                "SELECT count(*) FROM match_players WHERE player_id = 'near'"
            )
            .await,
            i64::from(case == "locked"),
            "{case}"
        );
    }
}

#[tokio::test]
async fn an_expired_request_says_why() {
    let mut w = World::new().await;
    let (_, client) = client_login(&w.tdb, 2).await;
    let (_, server) = server_login(&w.tdb, 2).await;
    // Only a party of three is queued: it never fits one open slot.
    enqueue_party(&client, "q", "trio")
        .members(&["t1", "t2", "t3"], 1500.0)
        .await;
    let id = request_backfill(&server, "q", "game-6", &lost_one(), &[0, 1], "3 seconds")
        .await
        .unwrap();
    backfill_round(&mut w).await;
    // Read while the request is live by its stored expiry, whatever the round took.
    let (st, reason, live): (String, Option<String>, bool) = sqlx::query_as(
        "SELECT s.status, s.reason, clock_timestamp() < b.expires_at
           FROM backfill_status s JOIN backfill_requests b USING (request_id)
          WHERE request_id = $1",
    )
    .bind(id)
    .fetch_one(w.db())
    .await
    .unwrap();
    assert!(live, "the backfill round took the request's whole 3 s");
    assert_eq!(st, "open");
    assert!(
        reason.as_deref().unwrap().contains("larger than 1"),
        "{reason:?}"
    );
    // Expiry is the database's clock: just past the stored expiry, it reads expired.
    let left: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM expires_at - clock_timestamp())::float8
           FROM backfill_requests WHERE request_id = $1",
    )
    .bind(id)
    .fetch_one(w.db())
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs_f64(left.max(0.0) + 0.1)).await;
    let (st, reason, _) = backfill_status(&server, id).await.unwrap();
    assert_eq!(st, "expired");
    let reason = reason.unwrap();
    assert!(reason.starts_with("expired: nothing filled it"), "{reason}");
    assert!(reason.contains("larger than 1"), "{reason}");
    // The leader closes it in the table with the same words.
    w.clock.advance(Duration::from_secs(5));
    w.worker.step().await.unwrap();
    let stored: (String, String) =
        sqlx::query_as("SELECT status, reason FROM backfill_requests WHERE request_id = $1")
            .bind(id)
            .fetch_one(w.db())
            .await
            .unwrap();
    assert_eq!(stored.0, "expired");
    assert_eq!(stored.1, reason);
    // Nothing was matched.
    let matched: i64 = count(w.db(), "SELECT count(*) FROM match_players").await;
    assert_eq!(matched, 0);
}

#[tokio::test]
async fn malformed_requests_are_refused_readably_and_touch_nothing() {
    let w = World::new().await;
    let (_, server) = server_login(&w.tdb, 2).await;
    let m = |id: &str, team: Value| json!({"player_id": id, "team": team, "skill": 1500});
    let five = lost_one();
    let long = "x".repeat(65);
    type Case<'a> = (&'a str, String, Value, Vec<i32>, &'a str, String);
    let six = json!([
        m("a", json!(0)),
        m("b", json!(0)),
        m("c", json!(0)),
        m("d", json!(1)),
        m("e", json!(1)),
        m("f", json!(1))
    ]);
    let cases: Vec<Case> = vec![
        // (queue, session, members, open, expires_in, the whole refusal)
        (
            "nope",
            "s".into(),
            five.clone(),
            vec![0, 1],
            "30s",
            "queue = 'nope': unknown queue; queues: q".into(),
        ),
        (
            "q",
            long.clone(),
            five.clone(),
            vec![0, 1],
            "30s",
            format!("session_id = '{long}': is longer than 64 characters"),
        ),
        (
            "q",
            "s".into(),
            five.clone(),
            vec![0, 1, 0],
            "30s",
            "open_slots = {0,1,0}: must be an array of 2 numbers, the free slots of each \
             team of queue q"
                .into(),
        ),
        (
            "q",
            "s".into(),
            five.clone(),
            vec![1, 1],
            "30s",
            "open_slots[0] = 1: team 0 has 3 members: members + open slots must be 3 \
             (team_size of queue q)"
                .into(),
        ),
        (
            "q",
            "s".into(),
            five.clone(),
            vec![0, -1],
            "30s",
            "open_slots[1] = -1: must be between 0 and 3 (team_size)".into(),
        ),
        (
            "q",
            "s".into(),
            five.clone(),
            vec![0, 0],
            "30s",
            "open_slots = {0,0}: has no open slot (nothing to backfill)".into(),
        ),
        (
            "q",
            "s".into(),
            five.clone(),
            vec![0, 1],
            "2 hours",
            "expires_in = '02:00:00': must be between 1 second and 1 hour".into(),
        ),
        (
            "q",
            "s".into(),
            five.clone(),
            vec![0, 1],
            "0 seconds",
            "expires_in = '00:00:00': must be between 1 second and 1 hour".into(),
        ),
        (
            "q",
            "s".into(),
            json!([m("a", json!(2))]),
            vec![2, 3],
            "30s",
            "members[].team = 2: must be a team index from 0 to 1 (queue q has 2 teams)".into(),
        ),
        (
            "q",
            "s".into(),
            json!([m("a", json!(0)), m("a", json!(1))]),
            vec![2, 2],
            "30s",
            "members[].player_id = 'a': appears twice in the session".into(),
        ),
        (
            "q",
            "s".into(),
            json!([]),
            vec![3, 3],
            "30s",
            "members = 0 members: a session in queue q has 1 to 5 members when it asks for a \
             backfill"
                .into(),
        ),
        (
            "q",
            "s".into(),
            six,
            vec![1, 0],
            "30s",
            "members = 6 members: a session in queue q has 1 to 5 members when it asks for a \
             backfill"
                .into(),
        ),
        (
            "q",
            "s".into(),
            json!([{"player_id": "a", "team": 0, "skill": "high"}]),
            vec![2, 3],
            "30s",
            "members[].skill = \"high\": must be a number".into(),
        ),
        (
            "q",
            "s".into(),
            json!([{"player_id": "a", "team": 0, "skill": 1, "mmr": 3}]),
            vec![2, 3],
            "30s",
            "members[].mmr = 3: unknown field (player_id, team, skill, skill_sigma, latencies, \
             peer_pings, roles, side, attributes)"
                .into(),
        ),
        (
            "q",
            "s".into(),
            json!([{"player_id": "a", "team": 0, "skill": 1, "latencies": {"eu": -5}}]),
            vec![2, 3],
            "30s",
            "latencies.eu = -5: must be between 0 and 10000 ms".into(),
        ),
    ];
    for (queue, session, members, open, expires, refusal) in cases {
        let err =
            sqlx::query_scalar::<_, i64>("SELECT request_backfill($1, $2, $3, $4, $5::interval)")
                .bind(queue)
                .bind(&session)
                .bind(sqlx::types::Json(&members))
                .bind(&open)
                .bind(expires)
                .fetch_one(&server)
                .await
                .expect_err(&refusal);
        let (code, message) = db_error(&err);
        assert_eq!(code, "22023", "{message}");
        assert_eq!(message, refusal);
    }
    // A second open request for one session.
    request_backfill(&server, "q", "dup", &five, &[0, 1], "30s")
        .await
        .unwrap();
    let err = request_backfill(&server, "q", "dup", &five, &[0, 1], "30s")
        .await
        .unwrap_err();
    let (code, message) = db_error(&err);
    assert_eq!(code, "22023");
    assert_eq!(
        message,
        "session_id = 'dup': already has an open backfill request in queue q (cancel it first)"
    );
    let rows: i64 = count(w.db(), "SELECT count(*) FROM backfill_requests").await;
    assert_eq!(rows, 1, "only the one valid request was written");
}

#[tokio::test]
async fn a_login_cannot_see_or_cancel_another_logins_request() {
    let w = World::new().await;
    let (_, alice) = server_login(&w.tdb, 2).await;
    let (_, mallory) = server_login(&w.tdb, 2).await;
    let id = request_backfill(&alice, "q", "game-7", &lost_one(), &[0, 1], "30 seconds")
        .await
        .unwrap();
    assert!(backfill_status(&mallory, id).await.is_none());
    let seen: i64 = count(&mallory, "SELECT count(*) FROM backfill_status").await;
    assert_eq!(seen, 0);
    let cancelled: bool = sqlx::query_scalar("SELECT cancel_backfill($1)")
        .bind(id)
        .fetch_one(&mallory)
        .await
        .unwrap();
    assert!(!cancelled);
    for sql in [
        "SELECT count(*) FROM backfill_requests",
        "UPDATE backfill_requests SET status = 'cancelled', reason = 'x'",
    ] {
        let err = sqlx::query(sql).execute(&mallory).await.unwrap_err();
        assert_eq!(db_error(&err).0, "42501", "{sql}");
    }
    assert_eq!(backfill_status(&alice, id).await.unwrap().0, "open");
    let cancelled: bool = sqlx::query_scalar("SELECT cancel_backfill($1)")
        .bind(id)
        .fetch_one(&alice)
        .await
        .unwrap();
    assert!(cancelled);
    let (st, reason, _) = backfill_status(&alice, id).await.unwrap();
    assert_eq!(
        (st.as_str(), reason.as_deref()),
        ("cancelled", Some("cancelled by the client"))
    );
}

/// The daemon as deployed (wall clock, LISTEN/NOTIFY), polling hourly with an hourly
/// schedule: only the request's NOTIFY can start the round that fills it, and it must do
/// so within the queue's backfill delay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_running_daemon_refills_a_session_within_the_backfill_delay() {
    let _timing = TIMING.write().await;

    use std::time::Instant;
    let tdb = fresh_db().await;
    let config = Config::from_toml_str(
        "[daemon]\npoll_interval = \"1h\"\nlease_ttl = \"3s\"\nlease_renew = \"1s\"\n\
         [queues.q.round]\nevery = \"1h\"\nbudget = \"50ms\"\n\
         [queues.q.backfill]\ndelay = \"5s\"\n",
    )
    .unwrap();
    let delay = config.queues["q"].backfill.delay;
    let daemon = spawn_daemon(tdb.new_pool(4).await, config, "bf-daemon");
    wait_until_serving(&tdb.pool, 1).await;
    let (_, client) = client_login(&tdb, 2).await;
    let (_, server) = server_login(&tdb, 2).await;
    enqueue(&client, "q", "far", 2900.0)
        .latency("eu", 260.0)
        .await;
    enqueue(&client, "q", "near", 1520.0)
        .latency("eu", 35.0)
        .await;

    let asked = Instant::now();
    let id = request_backfill(&server, "q", "game-9", &lost_one(), &[0, 1], "30 seconds")
        .await
        .unwrap();
    let filled = loop {
        let s = backfill_status(&server, id).await.unwrap();
        if s.0 != "open" || asked.elapsed() > delay {
            break s;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(filled.0, "filled", "within {delay:?}: {filled:?}");
    assert_eq!(filled.2, vec!["near".to_string()]);
    let trigger: String = sqlx::query_scalar("SELECT trigger FROM rounds")
        .fetch_one(&tdb.pool)
        .await
        .unwrap();
    assert_eq!(trigger, "backfill");

    daemon.stop().await;
}

/// A game server's login asking fills for many sessions at once takes at most its share
/// of the players over a minute, not its share of every one of the immediate rounds
/// that follow each other: with twelve players queued and twelve sessions short of one,
/// it gets half of them (`limits.max_fill_share` 0.5), however many rounds run.
#[tokio::test]
async fn a_login_fills_at_most_its_share_of_a_minute_not_of_every_round() {
    let mut w = World::new().await;
    let (_, client) = client_login(&w.tdb, 2).await;
    let (_, server) = server_login(&w.tdb, 2).await;
    for i in 0..12 {
        enqueue(&client, "q", &format!("p{i:02}"), 1500.0)
            .latency("eu", 30.0)
            .await;
    }
    for s in 0..12 {
        request_backfill(
            &server,
            "q",
            &format!("s{s}"),
            &lost_one(),
            &[0, 1],
            "30 seconds",
        )
        .await
        .unwrap();
    }
    for _ in 0..12 {
        w.clock.advance(secs(1));
        w.worker.step().await.unwrap();
    }
    let filled: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM player_status WHERE status = 'matched' AND session_id IS NOT NULL",
    )
    .fetch_one(&client)
    .await
    .unwrap();
    assert!(
        (1..=6).contains(&filled),
        "{filled} of the 12 players went to the one login's sessions"
    );
}

/// On a rated queue a session may name its members with skill NULL, as enqueue may:
/// they play at their ratings as they are now (here 2500, from their results under the
/// server's login), so the fill is the queued player near that rating.
#[tokio::test]
async fn on_a_rated_queue_members_without_a_skill_play_at_their_ratings() {
    let tdb = fresh_db().await;
    let toml = format!("{QUEUES}[queues.q.rating]\n");
    let Leader {
        clock, mut worker, ..
    } = leader(&tdb.pool, &toml, "q", "bf-rated").await;
    let (_, client) = client_login(&tdb, 2).await;
    let (server_name, server) = server_login(&tdb, 2).await;
    enqueue(&client, "q", "average", 1500.0)
        .latency("eu", 30.0)
        .await;
    enqueue(&client, "q", "strong", 2500.0)
        .latency("eu", 30.0)
        .await;
    for id in ["a", "b", "c", "d", "e"] {
        sqlx::query(
            "INSERT INTO ratings (owner, player_id, pool, rating, uncertainty, updated_at)
             VALUES ($1, $2, 'q', 2500, 50, now())",
        )
        .bind(&server_name)
        .bind(id)
        .execute(&tdb.pool)
        .await
        .unwrap();
    }
    let m = |id: &str, team: i32| json!({"player_id": id, "team": team, "latencies": {"eu": 30}});
    let members = json!([m("a", 0), m("b", 0), m("c", 0), m("d", 1), m("e", 1)]);
    let id = request_backfill(&server, "q", "rated-1", &members, &[0, 1], "30 seconds")
        .await
        .unwrap();
    clock.advance(secs(1));
    match worker.step().await.unwrap() {
        StepOutcome::Ran(r) if r.trigger == RoundTrigger::Backfill => {}
        other => panic!("expected an immediate backfill round, got {other:?}"),
    }
    let status = backfill_status(&server, id).await.unwrap();
    assert_eq!(status.0, "filled", "{status:?}");
    assert_eq!(status.2, vec!["strong".to_string()]);
}

/// A 16v16 session that lost three players is refilled through the lobby path: the
/// three nearest solos, the strongest of them on the weaker team, the far player left
/// queued, the fill's score the completed lobby's.
#[tokio::test]
async fn a_16v16_session_is_refilled_by_the_nearest_players() {
    const BIG: &str = "[queues.big]\nteams = 2\nteam_size = 16\nnetwork = \"dedicated\"\n\
                       [queues.big.round]\nevery = \"10m\"\nbudget = \"50ms\"\nseed = 7\n\
                       [queues.big.tickets]\nregions = [\"eu\"]\n";
    let tdb = fresh_db().await;
    let Leader {
        clock, mut worker, ..
    } = leader(&tdb.pool, BIG, "big", "bf").await;
    let (_, client) = client_login(&tdb, 2).await;
    let (_, server) = server_login(&tdb, 2).await;
    for (id, skill) in [
        ("far", 2600.0),
        ("n1", 1520.0),
        ("n2", 1480.0),
        ("n3", 1530.0),
    ] {
        enqueue(&client, "big", id, skill).latency("eu", 30.0).await;
    }
    let member = |id: String, team: i32, skill: f64| json!({"player_id": id, "team": team, "skill": skill, "latencies": {"eu": 30}});
    let members: Vec<Value> = (0..15)
        .map(|i| member(format!("a{i}"), 0, 1560.0))
        .chain((0..14).map(|i| member(format!("b{i}"), 1, 1440.0)))
        .collect();
    let id = request_backfill(
        &server,
        "big",
        "conquest-1",
        &json!(members),
        &[1, 2],
        "30 seconds",
    )
    .await
    .unwrap();
    clock.advance(secs(1));
    let report = match worker.step().await.unwrap() {
        StepOutcome::Ran(r) if r.trigger == RoundTrigger::Backfill => r,
        other => panic!("expected an immediate backfill round, got {other:?}"),
    };
    assert_eq!(report.backfilled, 1, "{report:?}");
    let (st, reason, mut filled_by) = backfill_status(&server, id).await.unwrap();
    assert_eq!(st, "filled", "{reason:?}");
    filled_by.sort();
    assert_eq!(filled_by, ["n1", "n2", "n3"]);
    let placed: Vec<(String, String, Option<i32>)> = sqlx::query_as(
        "SELECT player_id, status, team FROM player_status WHERE queue = 'big' ORDER BY player_id",
    )
    .fetch_all(&client)
    .await
    .unwrap();
    let placed: Vec<(&str, &str, Option<i32>)> = placed
        .iter()
        .map(|(p, s, t)| (p.as_str(), s.as_str(), *t))
        .collect();
    assert_eq!(
        placed,
        [
            ("far", "queued", None),
            ("n1", "matched", Some(1)),
            ("n2", "matched", Some(0)),
            ("n3", "matched", Some(1)),
        ]
    );
    let (score, region): (f64, Option<String>) = sqlx::query_as(
        "SELECT m.score, m.region FROM matches m JOIN match_players mp USING (match_id)
          WHERE mp.player_id = 'n1'",
    )
    .fetch_one(&tdb.pool)
    .await
    .unwrap();
    assert!(score > 0.0 && score <= 1.0, "{score}");
    assert_eq!(region.as_deref(), Some("eu"));
    assert_nobody_matched_twice(&tdb.pool).await;
}
