//! Everything a login names is its own: two client logins, each a game backend, against
//! the daemon's queue workers. Player ids and backfill session ids live in the login's
//! namespace, as party ids do: both logins may queue `alice` (in one queue or in two) and
//! ask a backfill for session `s1`; neither is refused, withdrawn, locked out, cancelled
//! or told anything because of the other. Numbers are stored in canonical form, so a
//! number written with a huge scale costs a round nothing more.

use matchmaker::daemon::round::RoundReport;
use matchmaker::db::enqueue as front;
use serde_json::json;
use sqlx::PgPool;

use crate::support::*;

/// Queues x and y: 2v2 on dedicated servers in one region, a round every second.
const QUEUES: &str = include_str!("configs/tenancy_ids.toml");

/// The workers of x and y on one manual clock, and two client logins, a and b.
struct Tenants {
    d: Daemon,
    a: PgPool,
    b: PgPool,
    a_name: String,
    b_name: String,
}

impl Tenants {
    async fn start() -> Tenants {
        let d = Daemon::start(QUEUES, "tenancy").await;
        // Each in both roles: a game backend that also runs its game servers, so the
        // same login names players and backfill sessions.
        let (a_name, a) = client_server_login(&d.tdb, 2).await;
        let (b_name, b) = client_server_login(&d.tdb, 2).await;
        Tenants {
            d,
            a,
            b,
            a_name,
            b_name,
        }
    }

    fn db(&self) -> &PgPool {
        self.d.db()
    }

    /// The next tick, and a round of `queue` that must run.
    async fn round(&mut self, queue: &str) -> RoundReport {
        self.d.round(queue).await
    }
}

/// Solo players through `enqueue()`, as `login`; none may be refused.
async fn solos(login: &PgPool, queue: &str, ids: &[&str]) {
    for (i, id) in ids.iter().enumerate() {
        front::enqueue(login, queue, &solo_player(id, 1500.0 + 10.0 * i as f64))
            .await
            .unwrap_or_else(|e| panic!("enqueue {id} into {queue}: {e}"));
    }
}

/// (queue, player, status, match_id) of every row `login` reads in player_status.
async fn status_rows(login: &PgPool) -> Vec<(String, String, String, Option<i64>)> {
    sqlx::query_as(
        "SELECT queue, player_id, status, match_id FROM player_status ORDER BY queue, player_id",
    )
    .fetch_all(login)
    .await
    .unwrap()
}

/// `player`'s status in `queue` as `login` reads it.
async fn status_of(
    login: &PgPool,
    queue: &str,
    player: &str,
) -> (String, Option<i64>, Option<String>) {
    sqlx::query_as(
        "SELECT status, match_id, reason FROM player_status WHERE queue = $1 AND player_id = $2",
    )
    .bind(queue)
    .bind(player)
    .fetch_one(login)
    .await
    .unwrap()
}

#[tokio::test]
async fn two_logins_each_queue_alice_and_both_are_matched() {
    let mut t = Tenants::start().await;
    solos(&t.a, "x", &["alice", "a1", "a2", "a3"]).await;
    // b's alice is b's own: not "already queued", in solo or in a party.
    solos(&t.b, "x", &["alice", "b1"]).await;
    front::enqueue_party(
        &t.b,
        "x",
        "crew",
        &[solo_player("b2", 1500.0), solo_player("b3", 1500.0)],
    )
    .await
    .expect("b's party");
    front::enqueue_party(
        &t.a,
        "y",
        "crew",
        &[solo_player("alice", 1500.0), solo_player("a4", 1500.0)],
    )
    .await
    .expect("a's alice in a party of another queue, and a's party crew");

    // Each login keeps its own alice alive; neither reaches the other's.
    let kept: i32 = sqlx::query_scalar("SELECT keep_alive(ARRAY['alice'], 'x')")
        .fetch_one(&t.b)
        .await
        .unwrap();
    assert_eq!(kept, 1, "b's alice in x only");

    let report = t.round("x").await;
    assert_eq!(report.matched, 8, "{report:?}");
    for login in [&t.a, &t.b] {
        let (status, match_id, _) = status_of(login, "x", "alice").await;
        assert_eq!(status, "matched");
        assert!(match_id.is_some());
    }
    // a's alice was matched in x: a's own entry in y is withdrawn with her (and her
    // party), as the same login's player.
    let (status, _, reason) = status_of(&t.a, "y", "alice").await;
    assert_eq!(status, "withdrawn", "{reason:?}");

    // The round knew them apart: two entries named alice, two histories.
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT e.owner, mp.player_id FROM match_players mp
           JOIN queue_entries e USING (entry_id)
          WHERE mp.player_id = 'alice' ORDER BY e.owner",
    )
    .fetch_all(t.db())
    .await
    .unwrap();
    let mut owners = vec![t.a_name.clone(), t.b_name.clone()];
    owners.sort();
    assert_eq!(
        rows.iter().map(|(o, _)| o.clone()).collect::<Vec<_>>(),
        owners
    );
    let histories: i64 = count(
        t.db(),
        "SELECT count(*) FROM recent_matches WHERE player_id = 'alice'",
    )
    .await;
    assert_eq!(histories, 2);
    assert_contract_invariants(t.db()).await;
}

#[tokio::test]
async fn a_match_in_one_queue_withdraws_the_same_logins_alice_only() {
    let mut t = Tenants::start().await;
    // a's alice waits in y, where nobody else is.
    solos(&t.a, "y", &["alice"]).await;
    // b's alice is matched in x.
    solos(&t.b, "x", &["alice", "b1", "b2", "b3"]).await;
    let report = t.round("x").await;
    assert_eq!(report.matched, 4, "{report:?}");
    assert_eq!(report.withdrawn, 0, "{report:?}");

    let (status, match_id, reason) = status_of(&t.a, "y", "alice").await;
    assert_eq!(status, "queued", "{reason:?}");
    assert_eq!(match_id, None);
    let still: i64 = count(
        t.db(),
        "SELECT count(*) FROM queue_entries WHERE queue = 'y' AND status = 'queued'",
    )
    .await;
    assert_eq!(still, 1);
    // a's cancel of alice reaches a's own entry, and says so.
    let cancelled = cancel(&t.a, "alice").await;
    assert_eq!(cancelled, 1);
    assert_contract_invariants(t.db()).await;
}

#[tokio::test]
async fn a_login_holding_its_own_alice_does_not_hold_anothers() {
    let mut t = Tenants::start().await;
    solos(&t.b, "y", &["alice"]).await;
    // b holds its alice's row in y in an open transaction (a keep_alive not committed).
    let mut held = t.b.begin().await.unwrap();
    let kept: i32 = sqlx::query_scalar("SELECT keep_alive(ARRAY['alice'], 'y')")
        .fetch_one(&mut *held)
        .await
        .unwrap();
    assert_eq!(kept, 1);

    solos(&t.a, "x", &["alice", "a1", "a2", "a3"]).await;
    let report = t.round("x").await;
    assert_eq!(report.matched, 4, "a's alice is matched: {report:?}");
    assert_eq!(report.dropped_by_cancel, 0, "{report:?}");
    let (status, _, _) = status_of(&t.a, "x", "alice").await;
    assert_eq!(status, "matched");
    held.commit().await.unwrap();
    let (status, _, _) = status_of(&t.b, "y", "alice").await;
    assert_eq!(status, "queued", "b's alice is not withdrawn by a's match");
}

#[tokio::test]
async fn two_logins_each_ask_a_backfill_for_session_s1() {
    let t = Tenants::start().await;
    let ask = "SELECT request_backfill('x', 's1', '[{\"player_id\": \"alice\", \"team\": 0, \
               \"skill\": 1500, \"latencies\": {\"eu\": 20}}, {\"player_id\": \"m2\", \"team\": 1, \
               \"skill\": 1500, \"latencies\": {\"eu\": 20}}]', '{1,1}')";
    let a_request: i64 = sqlx::query_scalar(ask).fetch_one(&t.a).await.unwrap();
    let b_request: i64 = sqlx::query_scalar(ask)
        .fetch_one(&t.b)
        .await
        .expect("b's session s1 is b's own");
    assert_ne!(a_request, b_request);
    // A second request of the same login for its own open session is refused, naming only
    // its own.
    let again = sqlx::query_scalar::<_, i64>(ask)
        .fetch_one(&t.b)
        .await
        .unwrap_err();
    assert_eq!(
        db_error(&again),
        (
            "22023".to_string(),
            "session_id = 's1': already has an open backfill request in queue x (cancel it first)"
                .to_string()
        )
    );
    // b cannot cancel a's request; each sees its own.
    let cancelled: bool = sqlx::query_scalar("SELECT cancel_backfill($1)")
        .bind(a_request)
        .fetch_one(&t.b)
        .await
        .unwrap();
    assert!(!cancelled);
    for (login, mine) in [(&t.a, a_request), (&t.b, b_request)] {
        let seen: Vec<(i64, String)> =
            sqlx::query_as("SELECT request_id, status FROM backfill_status")
                .fetch_all(login)
                .await
                .unwrap();
        assert_eq!(seen, [(mine, "open".to_string())]);
    }
    let cancelled: bool = sqlx::query_scalar("SELECT cancel_backfill($1)")
        .bind(a_request)
        .fetch_one(&t.a)
        .await
        .unwrap();
    assert!(cancelled);
}

#[tokio::test]
async fn no_lock_of_another_login_blocks_a_party() {
    let t = Tenants::start().await;
    let crew = |p: &str| {
        vec![
            solo_player(&format!("{p}1"), 1500.0),
            solo_player(&format!("{p}2"), 1500.0),
        ]
    };
    // b holds every advisory key it could compute for a's party (the login name shows in
    // pg_stat_activity), and has its own party crew in flight, uncommitted.
    let mut held = t.b.begin().await.unwrap();
    for key in [
        format!("x\u{1f}{}\u{1f}crew", t.a_name),
        format!("x{}crew", t.a_name),
        "crew".to_string(),
    ] {
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(&key)
            .execute(&mut *held)
            .await
            .unwrap();
    }
    front::enqueue_party(&mut *held, "x", "crew", &crew("b"))
        .await
        .expect("b's own party");
    // a's party crew goes in at once.
    let entered = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        front::enqueue_party(&t.a, "x", "crew", &crew("a")),
    )
    .await
    .expect("not blocked by b")
    .expect("not refused because of b");
    assert_eq!(entered.len(), 2);
    // Nor does b's open transaction over its own alice block a's alice.
    front::enqueue(&mut *held, "x", &solo_player("alice", 1500.0))
        .await
        .unwrap();
    tokio::time::timeout(
        std::time::Duration::from_secs(5),
        front::enqueue(&t.a, "x", &solo_player("alice", 1500.0)),
    )
    .await
    .expect("not blocked by b")
    .expect("not refused because of b");
    held.commit().await.unwrap();
    let queued: i64 = count(
        t.db(),
        "SELECT count(*) FROM queue_entries WHERE status = 'queued' AND queue = 'x'",
    )
    .await;
    assert_eq!(queued, 6);
}

#[tokio::test]
async fn no_lock_of_another_login_blocks_an_avoid() {
    let t = Tenants::start().await;
    // b holds the advisory key a per-login lock of a's player would use, and has its own
    // alice's avoid in flight, uncommitted.
    let mut held = t.b.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(format!("avoids\u{1f}{}\u{1f}alice", t.a_name))
        .execute(&mut *held)
        .await
        .unwrap();
    sqlx::query("SELECT avoid('alice', 'bob')")
        .execute(&mut *held)
        .await
        .unwrap();
    let kept: i32 = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        sqlx::query_scalar("SELECT avoid('alice', 'bob')").fetch_one(&t.a),
    )
    .await
    .expect("not blocked by b")
    .expect("not refused because of b");
    assert_eq!(kept, 1);
    held.commit().await.unwrap();
    // No function a client or game server may call takes an advisory lock: its key would
    // be computable by another login.
    let advisory: Vec<String> = sqlx::query_scalar(
        "SELECT p.proname::text FROM pg_proc p
          WHERE p.pronamespace = 'public'::regnamespace
            AND p.prosrc LIKE '%pg_advisory%'
            AND (has_function_privilege('matchmaker_client', p.oid, 'EXECUTE')
                 OR has_function_privilege('matchmaker_server', p.oid, 'EXECUTE'))",
    )
    .fetch_all(t.db())
    .await
    .unwrap();
    assert!(advisory.is_empty(), "{advisory:?}");
}

#[tokio::test]
async fn nothing_b_can_call_or_read_shows_as_entries_matches_or_sessions() {
    let mut t = Tenants::start().await;
    solos(&t.a, "x", &["alice", "a1", "a2", "a3"]).await;
    solos(&t.a, "y", &["alice", "carol"]).await;
    let a_request: i64 = sqlx::query_scalar(
        "SELECT request_backfill('y', 's1', '[{\"player_id\": \"m1\", \"team\": 0, \
         \"skill\": 1500, \"latencies\": {\"eu\": 20}}]', '{1,2}')",
    )
    .fetch_one(&t.a)
    .await
    .unwrap();
    let report = t.round("x").await;
    assert_eq!(report.matched, 4, "{report:?}");

    // The views: nothing of a's.
    assert!(status_rows(&t.b).await.is_empty());
    for view in ["match_details", "backfill_status"] {
        let n: i64 =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {view}")))
                .fetch_one(&t.b)
                .await
                .unwrap();
        assert_eq!(n, 0, "{view}");
    }
    // EXPLAIN ANALYZE of a view counts rows of every login, and shows no value of a's.
    for view in [
        "player_status",
        "match_details",
        "queue_countdown",
        "queue_catalog",
        "avoid_list",
        "backfill_status",
    ] {
        let plan: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "EXPLAIN (ANALYZE, VERBOSE) SELECT * FROM {view}"
        )))
        .fetch_all(&t.b)
        .await
        .unwrap();
        let plan = plan.join("\n");
        for secret in ["alice", "carol", "'s1'", "'m1'"] {
            assert!(!plan.contains(secret), "{view} shows {secret}:\n{plan}");
        }
    }
    // The functions: b's calls on alice, carol and s1 reach nothing of a's, and are
    // neither refused nor told apart from a name nobody uses.
    for sql in [
        "SELECT cancel('alice')",
        "SELECT cancel('carol', 'y')",
        "SELECT keep_alive(ARRAY['alice', 'carol', 'a1'])",
    ] {
        let n: i32 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&t.b)
            .await
            .unwrap();
        assert_eq!(n, 0, "{sql}");
    }
    let cancelled: bool = sqlx::query_scalar("SELECT cancel_backfill($1)")
        .bind(a_request)
        .fetch_one(&t.b)
        .await
        .unwrap();
    assert!(!cancelled);
    solos(&t.b, "y", &["carol"]).await;
    // b's refusal of its own duplicate is about b's entry only.
    let again = front::enqueue(&t.b, "y", &solo_player("carol", 1500.0))
        .await
        .unwrap_err();
    assert!(
        again
            .to_string()
            .contains("player_id = 'carol': is already queued in queue y"),
        "{again}"
    );
    // a's rows are as a left them.
    let (status, _, _) = status_of(&t.a, "y", "carol").await;
    assert_eq!(status, "queued");
    let (status, _, _) = status_of(&t.a, "y", "alice").await;
    assert_eq!(status, "withdrawn");
    let open: Vec<(i64, String)> = sqlx::query_as("SELECT request_id, status FROM backfill_status")
        .fetch_all(&t.a)
        .await
        .unwrap();
    assert_eq!(open, [(a_request, "open".to_string())]);
}

/// EXPLAIN ANALYZE of `view` filtered on `column = value`, as `login`, with the value
/// and the timings taken out: what the plan counts (rows, rows removed, loops).
async fn counted_plan(login: &PgPool, view: &str, column: &str, value: &str) -> String {
    let query = format!("SELECT * FROM {view} WHERE {column} = {value}");
    counted(login, &query, value).await
}

/// EXPLAIN ANALYZE of `query` as `login`, with `value` and the timings taken out.
async fn counted(login: &PgPool, query: &str, value: &str) -> String {
    let plan: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {query}"
    )))
    .fetch_all(login)
    .await
    .unwrap();
    plan.join("\n").replace(value, "?")
}

/// A guessed predicate is no oracle: as b, EXPLAIN ANALYZE of each client view filtered
/// on one of a's ids counts exactly what it counts for an id nobody uses.
#[tokio::test]
async fn explain_of_a_client_view_does_not_tell_another_logins_ids_from_unused_ones() {
    let mut t = Tenants::start().await;
    solos(&t.a, "x", &["alice", "a1", "a2", "a3"]).await;
    solos(&t.a, "y", &["carol"]).await;
    sqlx::query("SELECT avoid('carol', 'dave')")
        .execute(&t.a)
        .await
        .unwrap();
    let request: i64 = sqlx::query_scalar(
        "SELECT request_backfill('y', 's1', '[{\"player_id\": \"m1\", \"team\": 0, \
         \"skill\": 1500, \"latencies\": {\"eu\": 20}}]', '{1,2}')",
    )
    .fetch_one(&t.a)
    .await
    .unwrap();
    let report = t.round("x").await;
    assert_eq!(report.matched, 4, "{report:?}");
    let a_match_id: i64 =
        sqlx::query_scalar("SELECT match_id FROM match_details WHERE player_id = 'alice'")
            .fetch_one(&t.a)
            .await
            .unwrap();

    // (view, column, one of a's values, a value nobody uses), as SQL literals.
    // Numbers as '<n>'::bigint, which the plan prints as written.
    let (a_match, request) = (
        format!("'{a_match_id}'::bigint"),
        format!("'{request}'::bigint"),
    );
    let unused_id = "'987654321'::bigint";
    let guesses = [
        ("player_status", "player_id", "'alice'", "'nobody'"),
        ("player_status", "player_id", "'carol'", "'nobody'"),
        ("match_details", "player_id", "'alice'", "'nobody'"),
        ("match_details", "match_id", &a_match, unused_id),
        ("backfill_status", "session_id", "'s1'", "'s9'"),
        ("backfill_status", "request_id", &request, unused_id),
        ("avoid_list", "player_id", "'carol'", "'nobody'"),
        ("avoid_list", "avoided_player_id", "'dave'", "'nobody'"),
    ];
    let mut leaks = Vec::new();
    for (view, column, taken, unused) in guesses {
        let on_taken = counted_plan(&t.b, view, column, taken).await;
        let on_unused = counted_plan(&t.b, view, column, unused).await;
        assert!(
            on_taken.contains("Function Scan"),
            "a client's {view} reads the caller-only function:\n{on_taken}"
        );
        if on_taken != on_unused {
            leaks.push(format!(
                "{view}.{column} = {taken}:\n{on_taken}\n{view}.{column} = {unused}:\n{on_unused}"
            ));
        }
    }
    // The keyed reads a client polls with: no rows and the same plan either way.
    let keyed = [
        ("player_status", "'alice'", "'nobody'"),
        (
            "player_status",
            "'{alice,carol}'::text[]",
            "'{nobody}'::text[]",
        ),
        ("match_details", a_match.as_str(), unused_id),
        ("player_matches", "'alice'", "'nobody'"),
        ("backfill_status", request.as_str(), unused_id),
    ];
    for (function, taken, unused) in keyed {
        let call = |value: &str| format!("SELECT count(*) FROM {function}({value})");
        let rows: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(call(taken)))
            .fetch_one(&t.b)
            .await
            .unwrap();
        assert_eq!(rows, 0, "{function}({taken}) as b");
        let on_taken = counted(&t.b, &call(taken), taken).await;
        let on_unused = counted(&t.b, &call(unused), unused).await;
        if on_taken != on_unused {
            leaks.push(format!(
                "{function}({taken}):\n{on_taken}\n{function}({unused}):\n{on_unused}"
            ));
        }
    }
    // And a owns them: the keyed reads find a's rows for a.
    let found: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM player_status('{alice,carol}'::text[]))
              + (SELECT count(*) FROM match_details($1::bigint))
              + (SELECT count(*) FROM player_matches('alice'))",
    )
    .bind(a_match_id)
    .fetch_one(&t.a)
    .await
    .unwrap();
    assert_eq!(
        found,
        2 + 4 + 1,
        "a reads its own rows through the keyed functions"
    );
    assert!(
        leaks.is_empty(),
        "b's plans tell a's ids apart:\n{}",
        leaks.join("\n\n")
    );
}

#[tokio::test]
async fn numbers_are_stored_canonical_whatever_their_scale() {
    let mut t = Tenants::start().await;
    // As the client role: zeros with a scale of 16383 (16,385 characters printed each),
    // a ping of 1e-300, and trailing zeros.
    sqlx::query(
        r#"SELECT enqueue('x', 'bomb', 1500, '{"eu": 0e-16383}', '{"a1": 1e-300, "a2": 20.50000}')"#,
    )
    .execute(&t.b)
    .await
    .unwrap();
    sqlx::query(
        r#"SELECT * FROM enqueue_party('x', 'crew', '[
            {"player_id": "p1", "skill": 0e-16383, "latencies": {"eu": 0e-16383}},
            {"player_id": "p2", "skill": 1500, "latencies": {"eu": 12.000000000000}}]')"#,
    )
    .execute(&t.b)
    .await
    .unwrap();
    sqlx::query(
        r#"SELECT request_backfill('x', 's1', '[
            {"player_id": "m1", "team": 0.000000, "skill": 0e-16383, "side": 1.0000000,
             "latencies": {"eu": 0e-16383}, "peer_pings": {"m2": 1e-300}},
            {"player_id": "m2", "team": 1, "skill": 1e-299, "skill_sigma": 0e-16383}]',
            '{1,1}')"#,
    )
    .execute(&t.b)
    .await
    .unwrap();
    let entries: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT player_id, latencies::text, peer_pings::text FROM queue_entries ORDER BY entry_id",
    )
    .fetch_all(t.db())
    .await
    .unwrap();
    assert_eq!(
        entries,
        [
            (
                "bomb".to_string(),
                r#"{"eu": 0}"#.to_string(),
                r#"{"a1": 0, "a2": 20.5}"#.to_string()
            ),
            (
                "p1".to_string(),
                r#"{"eu": 0}"#.to_string(),
                "{}".to_string()
            ),
            (
                "p2".to_string(),
                r#"{"eu": 12}"#.to_string(),
                "{}".to_string()
            ),
        ]
    );
    let members: String = sqlx::query_scalar("SELECT members::text FROM backfill_requests")
        .fetch_one(t.db())
        .await
        .unwrap();
    assert_eq!(
        members,
        r#"[{"side": 1, "team": 0, "skill": 0, "latencies": {"eu": 0}, "player_id": "m1", "peer_pings": {"m2": 0}}, {"team": 1, "skill": 0, "player_id": "m2", "skill_sigma": 0}]"#
    );
    // A round reads them as any player: the snapshot and the replay record stay small.
    solos(&t.a, "x", &["a1"]).await;
    let report = t.round("x").await;
    assert_eq!(report.players, 4, "{report:?}");
    let json_bytes: i32 = sqlx::query_scalar(
        "SELECT pool_json_bytes FROM round_snapshots ORDER BY round_id DESC LIMIT 1",
    )
    .fetch_one(t.db())
    .await
    .unwrap();
    assert!(json_bytes < 4000, "{json_bytes} bytes of pool JSON");
}

/// Each login's own party and solo ids, queued at once in one queue: nobody refused.
#[tokio::test]
async fn party_and_player_ids_of_two_logins_do_not_meet_in_refusals() {
    let t = Tenants::start().await;
    let members = json!([
        {"player_id": "alice", "skill": 1500, "latencies": {"eu": 20}},
        {"player_id": "bob", "skill": 1500, "latencies": {"eu": 20}}
    ]);
    for login in [&t.a, &t.b] {
        sqlx::query("SELECT * FROM enqueue_party('x', 'duo', $1)")
            .bind(sqlx::types::Json(&members))
            .execute(login)
            .await
            .expect("each login's duo");
    }
    // The same login's members again: refused, naming its own entries.
    let again = sqlx::query("SELECT * FROM enqueue_party('x', 'trio', $1)")
        .bind(sqlx::types::Json(&members))
        .execute(&t.b)
        .await
        .unwrap_err();
    assert_eq!(
        db_error(&again).1,
        "members[].player_id = 'alice', 'bob': is already queued in queue x (cancel it first)"
    );
    let _ = &t.b_name;
}

/// One match may hold both logins' alice: the round tells them apart, and each login's
/// roster shows the other alice as another player.
#[tokio::test]
async fn one_match_may_hold_two_logins_alice() {
    let mut t = Tenants::start().await;
    solos(&t.a, "x", &["alice", "a1"]).await;
    solos(&t.b, "x", &["alice", "b1"]).await;
    let report = t.round("x").await;
    assert_eq!((report.matches, report.matched), (1, 4), "{report:?}");
    for login in [&t.a, &t.b] {
        let (status, _, _) = status_of(login, "x", "alice").await;
        assert_eq!(status, "matched");
        let rows: Vec<(String, Vec<String>, Vec<String>)> = sqlx::query_as(
            "SELECT player_id, teammates, opponents FROM match_details
              WHERE player_id = 'alice' ORDER BY team",
        )
        .fetch_all(login)
        .await
        .unwrap();
        // Both alices are in the roster; each row's others are the 3 other players.
        assert_eq!(rows.len(), 2, "{rows:?}");
        for (_, mates, foes) in &rows {
            let mut others: Vec<&String> = mates.iter().chain(foes).collect();
            others.sort();
            assert_eq!(others.len(), 3, "{rows:?}");
            assert_eq!(
                others.iter().filter(|p| **p == "alice").count(),
                1,
                "{rows:?}"
            );
        }
    }
    assert_contract_invariants(t.db()).await;
}
