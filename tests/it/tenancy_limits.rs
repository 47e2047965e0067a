//! One login cannot slow or stop another's players: two client logins (an honest backend
//! A, an attacker B) and a game server's login against the queue's leader, its rounds
//! counted, not timed. B's flood of entries nobody can host takes one share of a capped
//! pool, and after `limits.sit_out_after` rounds none; a server's fake backfill requests
//! take at most `limits.max_fill_share` of a round; the client role cannot ask for
//! backfill; one login's avoids of made-up players stop at its quota while another's go
//! on; a login bounded as docs/operations.md says cannot hoard connections, hold a
//! transaction open or run a long statement; a notification flood leaves rounds
//! committing; large objects are closed.

use std::time::Duration;

use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::round::RoundReport;
use matchmaker::daemon::worker::{QueueWorker, StepOutcome};
use serde_json::json;
use sqlx::PgPool;

use crate::support::*;

/// q: 3v3 peer-to-peer, a round every 10 minutes (run by moving the clock), at most 36
/// players a round.
const QUEUES: &str = include_str!("configs/tenancy_limits.toml");

struct World {
    tdb: TestDb,
    clock: ManualClock,
    worker: QueueWorker,
}

impl World {
    async fn new() -> World {
        World::with(QUEUES).await
    }

    /// A world whose queue q is the `q` of `queues`.
    async fn with(queues: &str) -> World {
        let tdb = fresh_db().await;
        let Leader { clock, worker, .. } = leader(&tdb.pool, queues, "q", "tenancy").await;
        World { tdb, clock, worker }
    }

    fn db(&self) -> &PgPool {
        &self.tdb.pool
    }

    /// The next scheduled round.
    async fn round(&mut self) -> RoundReport {
        self.try_round()
            .await
            .unwrap_or_else(|| panic!("expected a round"))
    }

    /// The next scheduled round, if the pool holds a match's worth of players.
    async fn try_round(&mut self) -> Option<RoundReport> {
        self.clock.advance(Duration::from_secs(601));
        match self.worker.step().await.unwrap() {
            StepOutcome::Ran(r) => Some(r),
            StepOutcome::Waiting { .. } => None,
            other => panic!("expected a round, got {other:?}"),
        }
    }
}

/// `n` honest players of `client` (close to each other: anyone can host them).
async fn honest(client: &PgPool, prefix: &str, n: usize) {
    for i in 0..n {
        let skill = 1500.0 + (i % 7) as f64 * 10.0;
        enqueue(client, "q", &format!("{prefix}{i}"), skill)
            .latency("eu", 30.0)
            .await;
    }
}

/// `n` entries nobody can host (5 s from the only region: past hosts.max_ping_ms to
/// everyone), as a flooding login sends them.
async fn ghosts(client: &PgPool, n: usize) {
    for i in 0..n {
        enqueue(client, "q", &format!("ghost{i}"), 1500.0)
            .latency("eu", 5000.0)
            .await;
    }
}

/// How many of `login`'s entries are matched.
async fn matched_of(db: &PgPool, login: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM queue_entries WHERE owner = $1 AND status = 'matched'")
        .bind(login)
        .fetch_one(db)
        .await
        .unwrap()
}

/// A's players matched after each of `rounds` rounds, with B's ghosts (enqueued first,
/// so the oldest) or without.
async fn honest_matched_per_round(with_ghosts: usize, rounds: usize) -> Vec<i64> {
    let mut w = World::new().await;
    let (a, honest_login) = client_login(&w.tdb, 1).await;
    let (_, attacker) = client_login(&w.tdb, 1).await;
    ghosts(&attacker, with_ghosts).await;
    honest(&honest_login, "a", 24).await;
    let mut matched = Vec::new();
    for _ in 0..rounds {
        w.try_round().await;
        matched.push(matched_of(w.db(), &a).await);
    }
    assert_nobody_matched_twice(w.db()).await;
    matched
}

#[tokio::test]
async fn a_ghost_flood_takes_one_share_of_the_pool_not_the_pool() {
    let alone = honest_matched_per_round(0, 3).await;
    let flooded = honest_matched_per_round(150, 3).await;
    assert!(alone[2] >= 18, "without the attacker: {alone:?}");
    // Within 20% of the rate without the attacker, round for round.
    assert!(
        flooded[2] as f64 >= 0.8 * alone[2] as f64,
        "with 150 ghosts: {flooded:?}, alone: {alone:?}"
    );
    // The first round already holds A's share: half the pool.
    assert!(flooded[0] >= 12, "first round with ghosts: {flooded:?}");
}

#[tokio::test]
async fn entries_nobody_could_take_for_a_few_rounds_wait_behind_the_others() {
    let mut w = World::new().await;
    let (a, honest_login) = client_login(&w.tdb, 1).await;
    let (_, attacker) = client_login(&w.tdb, 1).await;
    ghosts(&attacker, 30).await;
    // limits.sit_out_after (3) rounds that match nobody.
    for _ in 0..3 {
        let r = w.round().await;
        assert_eq!((r.players, r.matched), (30, 0), "{r:?}");
    }
    let (left_over, reason): (Option<String>, Option<String>) = sqlx::query_as(
        "SELECT left_over, left_over_reason FROM queue_entries WHERE player_id = 'ghost0'",
    )
    .fetch_one(w.db())
    .await
    .unwrap();
    assert!(
        matches!(left_over.as_deref(), Some("no_host" | "no_valid_match")),
        "{left_over:?}"
    );
    let reason = reason.unwrap_or_default();
    assert!(
        reason.contains("left over so for 3 rounds: waits behind the other entries"),
        "{reason}"
    );
    // The ghosts' own login reads it in player_status.
    let status_reason: String = sqlx::query_scalar(
        "SELECT coalesce(reason, '') FROM player_status WHERE player_id = 'ghost0'",
    )
    .fetch_one(&attacker)
    .await
    .unwrap();
    assert!(status_reason.contains("waits behind"), "{status_reason}");

    // A whole pool of A's players now: the next capped round takes them all, not half.
    honest(&honest_login, "a", 36).await;
    let r = w.round().await;
    assert_eq!(r.players, 36, "{r:?}");
    assert!(
        matched_of(w.db(), &a).await >= 30,
        "{r:?}: the ghosts still took the pool"
    );
    // With room in a round they are tried again (a host may have come).
    let r = w.round().await;
    assert!(r.players >= 30, "{r:?}");
}

#[tokio::test]
async fn a_login_at_its_quota_is_refused_and_the_other_is_served() {
    let w = World::new().await;
    sqlx::query("UPDATE queues SET max_queued_per_login = 5 WHERE queue = 'q'")
        .execute(w.db())
        .await
        .unwrap();
    let (_, honest_login) = client_login(&w.tdb, 1).await;
    let (_, attacker) = client_login(&w.tdb, 1).await;
    ghosts(&attacker, 5).await;
    let err = sqlx::query("SELECT enqueue('q', 'ghost5', 1500)")
        .execute(&attacker)
        .await
        .unwrap_err();
    let (code, message) = db_error(&err);
    assert_eq!(code, "22023");
    assert!(
        message.starts_with("queue = 'q': this login has 5 of its 5"),
        "{message}"
    );
    honest(&honest_login, "a", 5).await;
}

/// Avoids belong to no queue: the leader publishes the queue's quota, and avoid() counts
/// each login's unexpired avoids against it. An attacker's avoids of made-up players stop
/// at the quota (a renewal still goes through); the honest login's are its own.
#[tokio::test]
async fn a_login_at_its_avoid_quota_is_refused_and_the_other_is_served() {
    let w = World::with(&format!(
        "{QUEUES}[queues.q.limits]\nmax_avoids_per_login = 3\n"
    ))
    .await;
    let published: i32 =
        sqlx::query_scalar("SELECT max_avoids_per_login FROM queues WHERE queue = 'q'")
            .fetch_one(w.db())
            .await
            .unwrap();
    assert_eq!(published, 3);
    let (_, honest_login) = client_login(&w.tdb, 1).await;
    let (attacker_name, attacker) = client_login(&w.tdb, 1).await;
    let avoid = |login: &PgPool, player: &str, avoided: &str| {
        let (login, player, avoided) = (login.clone(), player.to_string(), avoided.to_string());
        async move {
            sqlx::query_scalar::<_, i32>("SELECT avoid($1, $2, interval '1 hour')")
                .bind(player)
                .bind(avoided)
                .fetch_one(&login)
                .await
        }
    };
    // Three players of B's, one avoid each: the quota is the login's, not a player's.
    for i in 0..3 {
        avoid(&attacker, &format!("fake{i}"), "victim")
            .await
            .unwrap();
    }
    let err = avoid(&attacker, "fake3", "victim").await.unwrap_err();
    assert_eq!(
        db_error(&err),
        (
            "22023".to_string(),
            "player_id = 'fake3': this login has 3 avoids (limits.max_avoids_per_login); \
             unavoid some or let them expire"
                .to_string()
        )
    );
    // A renewal adds no row: served at the quota.
    assert_eq!(avoid(&attacker, "fake0", "victim").await.unwrap(), 1);
    // A's avoids are untouched by B's, up to A's own quota.
    for i in 0..3 {
        avoid(&honest_login, &format!("a{i}"), "victim")
            .await
            .unwrap();
    }
    assert!(avoid(&honest_login, "a3", "victim").await.is_err());
    // An expired avoid no longer counts (retention deletes it later).
    sqlx::query(
        "UPDATE avoids SET expires_at = now() - interval '1 second'
          WHERE owner = $1 AND player_id = 'fake1'",
    )
    .bind(&attacker_name)
    .execute(w.db())
    .await
    .unwrap();
    avoid(&attacker, "fake3", "victim").await.unwrap();
    assert!(avoid(&attacker, "fake4", "victim").await.is_err());
    assert_eq!(
        count(w.db(), "SELECT count(*) FROM avoids").await,
        7,
        "B's three unexpired, B's expired one, A's three"
    );
}

/// Members: one player on team 0; open slots: 2 on team 0, 3 on team 1.
fn fake_session() -> serde_json::Value {
    json!([{"player_id": "m", "team": 0, "skill": 1500, "latencies": {"eu": 30}}])
}

#[tokio::test]
async fn backfill_is_a_game_servers_and_its_requests_take_a_share_of_a_round() {
    let mut w = World::new().await;
    let (a, client) = client_login(&w.tdb, 1).await;
    let (_, server) = server_login(&w.tdb, 1).await;

    // The client role may not ask for backfill, nor read the requests.
    for sql in [
        "SELECT request_backfill('q', 'game-1', '[{\"player_id\": \"m\", \"team\": 0, \"skill\": 1}]', '{2,3}')",
        "SELECT cancel_backfill(1)",
        "SELECT * FROM backfill_status",
    ] {
        let err = sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&client)
            .await
            .unwrap_err();
        assert_eq!(db_error(&err).0, "42501", "{sql}");
    }

    // A server's fake requests, up to its quota (20), then refused.
    for i in 0..20 {
        sqlx::query("SELECT request_backfill('q', $1, $2, '{2,3}', '1 hour')")
            .bind(format!("fake-{i}"))
            .bind(sqlx::types::Json(fake_session()))
            .execute(&server)
            .await
            .unwrap();
    }
    let err = sqlx::query("SELECT request_backfill('q', 'fake-20', $1, '{2,3}', '1 hour')")
        .bind(sqlx::types::Json(fake_session()))
        .execute(&server)
        .await
        .unwrap_err();
    let (code, message) = db_error(&err);
    assert_eq!(code, "22023");
    assert!(
        message.starts_with("session_id = 'fake-20': this login has 20"),
        "{message}"
    );

    // 24 players: the round's fills take at most half of them (max_fill_share 0.5, five
    // slots a request: two requests), new matches the rest.
    honest(&client, "a", 24).await;
    let r = w.round().await;
    assert!(r.backfilled <= 2, "{r:?}");
    let filled: i64 = count(
        w.db(),
        "SELECT count(*) FROM match_players mp JOIN matches m USING (match_id)
          WHERE m.session_id IS NOT NULL",
    )
    .await;
    assert!(filled <= 12, "fills took {filled} players: {r:?}");
    let in_new_matches: i64 = count(
        w.db(),
        "SELECT count(*) FROM match_players mp JOIN matches m USING (match_id)
          WHERE m.session_id IS NULL",
    )
    .await;
    assert!(
        in_new_matches >= 12,
        "{in_new_matches} in new matches: {r:?}"
    );
    assert_eq!(matched_of(w.db(), &a).await, filled + in_new_matches);
}

/// A login bounded by the deploy step of docs/operations.md ("Bounding client logins"),
/// with short timeouts so the test sees them act.
async fn bounded_login(tdb: &TestDb, limit: i32) -> String {
    let name = login_in_role(tdb, "bounded", "matchmaker_client").await;
    for sql in [
        format!("ALTER ROLE {name} CONNECTION LIMIT {limit}"),
        format!("ALTER ROLE {name} SET statement_timeout = '1s'"),
        format!("ALTER ROLE {name} SET idle_in_transaction_session_timeout = '1s'"),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&tdb.pool)
            .await
            .unwrap();
    }
    name
}

#[tokio::test]
async fn a_bounded_login_cannot_hoard_connections() {
    let w = World::new().await;
    let login = bounded_login(&w.tdb, 2).await;
    let _one = connect_as(&w.tdb, &login).await.unwrap();
    let _two = connect_as(&w.tdb, &login).await.unwrap();
    let err = connect_as(&w.tdb, &login).await.unwrap_err();
    assert_eq!(
        db_error(&err).0,
        "53300",
        "too many connections for the role"
    );
    // Another login, and the daemon, still connect.
    let (_, other) = client_login(&w.tdb, 1).await;
    honest(&other, "b", 1).await;
    let daemon_login = login_in_role(&w.tdb, "daemon", "matchmaker_daemon").await;
    connect_as(&w.tdb, &daemon_login).await.unwrap();
}

#[tokio::test]
async fn a_bounded_login_cannot_hold_a_transaction_open_or_run_long() {
    let w = World::new().await;
    let login = bounded_login(&w.tdb, 5).await;
    let mut conn = connect_as(&w.tdb, &login).await.unwrap();
    // The settings are the login's own (a group role's would not reach it).
    let settings: (String, String) = sqlx::query_as(
        "SELECT current_setting('statement_timeout'),
                current_setting('idle_in_transaction_session_timeout')",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(settings, ("1s".to_string(), "1s".to_string()));
    let err = sqlx::query("SELECT pg_sleep(30)")
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert_eq!(db_error(&err).0, "57014", "statement timeout");

    // An enqueue left inside an open transaction: the session is ended, the entry never
    // lands, and rounds go on.
    sqlx::query("BEGIN").execute(&mut conn).await.unwrap();
    enqueue(&mut conn, "q", "held", 1500.0).await;
    let mut ended = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let open: i64 =
            sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE usename = $1")
                .bind(&login)
                .fetch_one(w.db())
                .await
                .unwrap();
        if open == 0 {
            ended = true;
            break;
        }
    }
    assert!(ended, "the idle transaction was not ended");
    assert!(sqlx::query("SELECT 1").execute(&mut conn).await.is_err());
    assert_eq!(count(w.db(), "SELECT count(*) FROM queue_entries").await, 0);
}

#[tokio::test]
async fn a_notification_flood_does_not_stop_rounds() {
    let mut w = World::new().await;
    let (a, client) = client_login(&w.tdb, 2).await;
    honest(&client, "a", 12).await;
    // Fake wake-ups and large payloads on the daemon's channel and the queue's.
    let channel = queue_channel(&client, "q").await;
    for i in 0..200 {
        sqlx::query(
            "SELECT pg_notify('matchmaker_enqueue', 'q'), pg_notify($1, repeat('x', 7000) || $2)",
        )
        .bind(&channel)
        .bind(i.to_string())
        .execute(&client)
        .await
        .unwrap();
    }
    let r = w.round().await;
    assert_eq!(r.matched, 12, "{r:?}");
    assert_eq!(matched_of(w.db(), &a).await, 12);
    let usage: f64 = sqlx::query_scalar("SELECT pg_notification_queue_usage()")
        .fetch_one(w.db())
        .await
        .unwrap();
    assert!(usage < 0.01, "{usage}");
}

#[tokio::test]
async fn large_objects_are_closed_to_clients_and_servers() {
    let w = World::new().await;
    let (_, client) = client_login(&w.tdb, 1).await;
    let (_, server) = server_login(&w.tdb, 1).await;
    for pool in [&client, &server] {
        for sql in [
            "SELECT lo_create(0)",
            "SELECT lo_from_bytea(0, 'x')",
            "SELECT lo_creat(-1)",
        ] {
            let err = sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(pool)
                .await
                .unwrap_err();
            assert_eq!(db_error(&err).0, "42501", "{sql}");
        }
    }
    let objects = count(w.db(), "SELECT count(*) FROM pg_largeobject_metadata").await;
    assert_eq!(objects, 0);
}
