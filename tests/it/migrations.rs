//! The upgrade path from 1.0 on. A database records the checksum of every migration it
//! ran, and sqlx refuses to migrate it further once a file it ran has changed: so a
//! released migration is never edited, and every change to the schema is a new migration.
//! A 1.0 database holding data then migrates to the latest schema keeping that data, and
//! the daemon and clients carry on with it.

use std::sync::Arc;

use matchmaker::config::{Config, QueueConfig};
use matchmaker::daemon::clock::SystemClock;
use matchmaker::daemon::round::RoundRunner;
use matchmaker::db::{self, RoundTrigger};
use matchmaker_testkit::audit;
use serde_json::json;
use sqlx::PgPool;
use sqlx::migrate::Migrator;

use crate::support::*;

/// The released migrations: version and the checksum sqlx records for it in
/// `_sqlx_migrations` (SHA-384 of the file). A release adds its new migrations here:
/// `SELECT version, encode(checksum, 'hex') FROM _sqlx_migrations`.
const RELEASED: &[(i64, &str)] = &[
    (
        1,
        "b4b58b3122183f128f161a10522fbbadf4fd2ffa9672396386bba05317256664d26d532229150118a9958d300a75566b",
    ),
    (
        2,
        "87af2b19ae6f71ecf903adbb4e5034871131e7cc33a7b878b899175d4aabdfc0f04ed7ff8c2bc172f216a1bd3b5301c6",
    ),
    (
        3,
        "e5314edbb8b768d52c534b0416346e8f17ec792a74d93a3041d0d7b30febbcadc54adae94a3ed6dbf063f6cf24d7ccba",
    ),
    (
        4,
        "fd32df1fb41b98f1e8d153e559761c1feb16e9de4f4a6a0ec1b32a2eec10a5c4c3a4f1f34dc2c8a6a288b8d4949ece85",
    ),
    (
        5,
        "d4880218c898e54aa0c917e009a2690f65e9a887ed23ece07823a42050cb315b8c72d255232d7207ac7160f8528f77e3",
    ),
    (
        6,
        "7435021cc7ab8f062ca7df25a4c784d7a1087b2d9fc9b344a9ec0333f450c299bb5d963fc0f5fe2551955fc83dd6340e",
    ),
    (
        7,
        "a30db9cfc7050f75ab2fa8606a7c78914ba252daa287ecafcb8ba7ce94b03f2171b9bb7cc7c101c2b7af948d3d23cab9",
    ),
    (
        8,
        "1f26900a2be1f34be9f17a3379071eace21be730cba6abe0118e33c3bb3dbf816f2b041d12e55f86e42c1ebd4547173d",
    ),
    (
        9,
        "d0e45477f2ec945215ab8fe2a6ef33f5ac9bc0de1cd1b217f8e06c9bc251a7d7a3517c9fc28fbc6fdec2ea92919d610c",
    ),
];

/// The last migration of 1.0.
const V1_0: i64 = 9;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn released_migrations_are_never_edited() {
    for &(version, checksum) in RELEASED {
        let Some(m) = db::MIGRATOR.iter().find(|m| m.version == version) else {
            panic!(
                "released migration {version} is gone: released migrations are never edited; \
                 add a new migration"
            );
        };
        assert_eq!(
            hex(&m.checksum),
            checksum,
            "migration {version} ({}) differs from the one released: released migrations are \
             never edited; add a new migration",
            m.description
        );
    }
    let last_released = RELEASED.iter().map(|&(v, _)| v).max().unwrap_or(0);
    for m in db::MIGRATOR.iter() {
        assert!(
            m.version > last_released || RELEASED.iter().any(|&(v, _)| v == m.version),
            "migration {} ({}) is numbered among the released ones: number a new migration \
             after {last_released}",
            m.version,
            m.description
        );
    }
}

/// A database with the 1.0 schema: the migrations of 1.0 only.
async fn db_1_0() -> TestDb {
    let tdb = unmigrated_db().await;
    Migrator::with_migrations(
        db::MIGRATOR
            .iter()
            .filter(|m| m.version <= V1_0)
            .cloned()
            .collect(),
    )
    .run(&tdb.pool)
    .await
    .expect("the 1.0 migrations apply");
    tdb
}

/// Run `statements` in one transaction as `matchmaker_daemon` (what its grants allow).
async fn as_daemon(db: &PgPool, statements: &[&'static str]) {
    let mut tx = db.begin().await.unwrap();
    sqlx::query("SET LOCAL ROLE matchmaker_daemon")
        .execute(&mut *tx)
        .await
        .unwrap();
    for &sql in statements {
        sqlx::query(sql)
            .execute(&mut *tx)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    tx.commit().await.unwrap();
}

/// What the 1.0 data says, table by table, as JSON text (the columns 1.0 has).
async fn data(db: &PgPool) -> Vec<(&'static str, String)> {
    let tables: [(&'static str, &'static str); 9] = [
        (
            "queue_entries",
            "SELECT entry_id, queue, player_id, party_id, party_key, party_size, skill,
                    latencies, status, reject_reason, round_id, match_id, team, owner,
                    enqueued_at, expires_at, left_over, left_over_reason
               FROM queue_entries ORDER BY entry_id",
        ),
        (
            "rounds",
            "SELECT round_id, queue, trigger, leader, term, pool_size, match_count, matched,
                    left_over, seed::text, config_hash, config
               FROM rounds ORDER BY round_id",
        ),
        (
            "matches",
            "SELECT match_id, round_id, queue, score, factors, region, hosts, host_player_id,
                    backup_host_player_id
               FROM matches ORDER BY match_id",
        ),
        (
            "match_players",
            "SELECT match_id, entry_id, player_id, party_id, team, skill
               FROM match_players ORDER BY match_id, player_id",
        ),
        (
            "recent_matches",
            "SELECT queue, player_id, match_ids FROM recent_matches ORDER BY 1, 2",
        ),
        (
            "queues",
            "SELECT queue, active, teams, team_size, network, formats, ticket_ttl
               FROM queues ORDER BY queue",
        ),
        (
            "queue_state",
            "SELECT queue, waiting_for, last_round_id, pool_size, config_hash
               FROM queue_state ORDER BY queue",
        ),
        (
            "leases",
            "SELECT queue, holder, term FROM leases ORDER BY queue",
        ),
        (
            "backfill_requests",
            "SELECT request_id, queue, session_id, members, open_slots, status, owner,
                    expires_at
               FROM backfill_requests ORDER BY request_id",
        ),
    ];
    let mut out = Vec::new();
    for (table, sql) in tables {
        let json: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT coalesce(json_agg(t), '[]')::text FROM ({sql}) t"
        )))
        .fetch_one(db)
        .await
        .unwrap();
        out.push((table, json));
    }
    out
}

fn member(id: &str, skill: f64) -> serde_json::Value {
    json!({"player_id": id, "skill": skill, "latencies": {"eu": 30}})
}

/// The config the upgraded daemon runs queue `q` with: 3v3 as in the 1.0 data, no
/// backfill (the open request stays as it was).
fn config() -> Arc<QueueConfig> {
    let config = Config::from_toml_str(
        "[queues.q]\n[queues.q.round]\nbudget = \"50ms\"\nseed = 5\n\
         [queues.q.backfill]\nenabled = false\n",
    )
    .expect("test config is valid");
    Arc::new(config.queues["q"].clone())
}

#[tokio::test]
async fn a_1_0_database_with_data_migrates_to_the_latest_schema() {
    let tdb = db_1_0().await;
    let db = &tdb.pool;
    // A backend that runs its own servers: it enqueues and asks for backfill.
    let (client, client_db) = client_server_login(&tdb, 2).await;

    // ---- 1.0 at work: a queue, clients' entries, a committed round -------------------
    as_daemon(
        db,
        &[
            "INSERT INTO queues (queue, active, teams, team_size, network, roles, regions,
                               max_party_size, ticket_ttl, max_wait, config_hash,
                               published_by, published_at, min_teams, min_team_size, formats)
           VALUES ('q', true, 2, 3, 'peer_to_peer', '{}', '{}', 3, '10 minutes',
                   '5 minutes', 'h1', 'replica-1', now(), 2, 3, '{3v3}')",
        ],
    )
    .await;
    for (i, id) in ["a1", "a2", "a3", "a4", "a5", "a6", "w1", "w2", "w3", "x1"]
        .into_iter()
        .enumerate()
    {
        sqlx::query("SELECT enqueue('q', $1, $2, '{\"eu\": 30}')")
            .bind(id)
            .bind(1500.0 + i as f64)
            .execute(&client_db)
            .await
            .unwrap();
    }
    let members = json!([
        member("c1", 1501.0),
        member("c2", 1502.0),
        member("c3", 1503.0)
    ]);
    sqlx::query("SELECT * FROM enqueue_party('q', 'crew', $1)")
        .bind(&members)
        .execute(&client_db)
        .await
        .unwrap();
    let cancelled: i32 = sqlx::query_scalar("SELECT cancel('x1')")
        .fetch_one(&client_db)
        .await
        .unwrap();
    assert_eq!(cancelled, 1);
    let session = json!([
        {"player_id": "s1", "team": 0, "skill": 1500},
        {"player_id": "s2", "team": 0, "skill": 1500},
        {"player_id": "s3", "team": 1, "skill": 1500},
        {"player_id": "s4", "team": 1, "skill": 1500},
        {"player_id": "s5", "team": 1, "skill": 1500},
    ]);
    sqlx::query("SELECT request_backfill('q', 'session-1', $1, ARRAY[1, 0])")
        .bind(&session)
        .execute(&client_db)
        .await
        .unwrap();

    // A round that matched a1..a6 and left w1..w3 and the party over, committed as the
    // daemon commits one; then the replica stopped (its lease expired).
    as_daemon(
        db,
        &[
            "WITH r AS (
                 INSERT INTO rounds (queue, trigger, leader, term, started_at, snapshot_at,
                                     committed_at, pool_size, match_count, matched,
                                     left_over, rejected, score, snapshot_ms, solve_ms,
                                     commit_ms, seed, config_hash, config)
                 VALUES ('q', 'schedule', 'replica-1', 1, now(), now(), now(), 12, 1, 6, 6,
                         0, 0.9, 1, 2, 3, 42, 'h1', '{\"round\": {\"history_matches\": 1}}')
                 RETURNING round_id),
             m AS (
                 INSERT INTO matches (round_id, queue, created_at, score, factors, hosts,
                                      host_player_id, backup_host_player_id)
                 SELECT round_id, 'q', now(), 0.9, '{\"equal_teams\": 0.9}', '{a1,a2}', 'a1',
                        'a2'
                   FROM r
                 RETURNING match_id, round_id),
             moved AS (
                 UPDATE queue_entries e
                    SET status = 'matched', round_id = m.round_id, match_id = m.match_id,
                        team = t.team, updated_at = now()
                   FROM m, (VALUES ('a1', 0), ('a2', 1), ('a3', 0), ('a4', 1), ('a5', 0),
                                   ('a6', 1)) AS t(player_id, team)
                  WHERE e.queue = 'q' AND e.player_id = t.player_id AND e.status = 'queued'
                 RETURNING e.*)
             INSERT INTO match_players (match_id, entry_id, queue, player_id, party_id, team,
                                        role, skill, enqueued_at, matched_at)
             SELECT match_id, entry_id, queue, player_id, party_id, team, role, skill,
                    enqueued_at, updated_at
               FROM moved",
            "INSERT INTO recent_matches (queue, player_id, match_ids)
             SELECT queue, player_id, ARRAY[match_id] FROM match_players",
            "UPDATE queue_entries
                SET left_over = 'outscored', left_over_reason = 'a better match was made'
              WHERE queue = 'q' AND status = 'queued'",
            "INSERT INTO queue_state (queue, next_round_at, waiting_for, schedule, target_pool,
                                      min_pool, players_per_match, max_wait, last_round_id,
                                      last_round_at, config_hash, updated_at, pool_size,
                                      pool_counted_at)
             SELECT 'q', now() + interval '2 minutes', 'schedule', '2m', NULL, 6, 6,
                    '5 minutes', round_id, now(), 'h1', now(), 6, now()
               FROM rounds",
            "INSERT INTO leases (queue, holder, term, acquired_at, expires_at)
             VALUES ('q', 'replica-1', 1, now() - interval '1 hour',
                     now() - interval '1 second')",
        ],
    )
    .await;
    let match_id: i64 = sqlx::query_scalar("SELECT match_id FROM matches")
        .fetch_one(db)
        .await
        .unwrap();
    let before = data(db).await;

    // ---- The upgrade --------------------------------------------------------------------
    db::migrate(db).await.expect("a 1.0 database migrates");
    let check = db::check_schema(db)
        .await
        .expect("the upgraded schema is this binary's");
    assert!(check.newer.is_empty(), "{check:?}");
    // Every row of 1.0 is still there, as it was.
    assert_eq!(data(db).await, before);

    // ---- Still valid ------------------------------------------------------------------
    let audit = audit::audit(db, audit::Expected::default()).await.unwrap();
    assert_eq!(audit.violation_count(), 0, "{audit}");
    assert_contract_invariants(db).await;
    assert_recent_matches_agree(db, 1).await;

    // The client reads its 1.0 entries and requests as before, and its rules still hold.
    let mine: Vec<(String, String, Option<i64>, Option<String>)> = sqlx::query_as(
        "SELECT player_id, status, match_id, reason FROM player_status
          WHERE player_id IN ('a1', 'w1', 'x1') ORDER BY player_id",
    )
    .fetch_all(&client_db)
    .await
    .unwrap();
    assert_eq!(
        mine,
        vec![
            ("a1".into(), "matched".into(), Some(match_id), None),
            (
                "w1".into(),
                "queued".into(),
                None,
                Some("a better match was made".into())
            ),
            (
                "x1".into(),
                "cancelled".into(),
                None,
                Some("cancelled by the client".into())
            ),
        ]
    );
    let teammates: Vec<String> = sqlx::query_scalar(
        "SELECT unnest(teammates) FROM match_details WHERE player_id = 'a1' ORDER BY 1",
    )
    .fetch_all(&client_db)
    .await
    .unwrap();
    assert_eq!(teammates, ["a3", "a5"]);
    let open: String =
        sqlx::query_scalar("SELECT status FROM backfill_status WHERE session_id = 'session-1'")
            .fetch_one(&client_db)
            .await
            .unwrap();
    assert_eq!(open, "open");
    let again = sqlx::query("SELECT enqueue('q', 'w1', 1500)")
        .execute(&client_db)
        .await
        .expect_err("w1 is still queued");
    let (state, message) = db_error(&again);
    assert_eq!(state, "22023");
    assert!(
        message.contains("is already queued in queue q"),
        "{message}"
    );
    let kept: i32 = sqlx::query_scalar("SELECT keep_alive(ARRAY['w1', 'w2', 'w3', 'c1'])")
        .fetch_one(&client_db)
        .await
        .unwrap();
    assert_eq!(kept, 6, "w1..w3 and the whole party");
    // Migration 10: a queue the database does not know is refused, and nothing changes.
    for call in [
        "SELECT cancel('w1', 'nope')",
        "SELECT keep_alive(ARRAY['w1'], 'nope')",
    ] {
        let refused = sqlx::query(call)
            .execute(&client_db)
            .await
            .expect_err("an unknown queue is refused");
        let (state, message) = db_error(&refused);
        assert_eq!(state, "22023", "{call}");
        assert_eq!(
            message, "queue = 'nope': unknown queue; queues: q",
            "{call}"
        );
    }
    assert_eq!(statuses(db, "q").await["w1"], "queued");

    // The upgraded daemon takes the stopped replica's queue and matches the players 1.0
    // left queued: the party against w1..w3.
    db::queues::publish_queue(db, "q", &*config(), "replica-2")
        .await
        .unwrap();
    let lease = db::acquire_lease(db, "q", "replica-2", secs(15), None)
        .await
        .unwrap()
        .expect("the stopped replica's lease has expired");
    assert_eq!(lease.term, 2);
    let report = RoundRunner::new(db.clone(), Arc::new(SystemClock))
        .run("q", config(), RoundTrigger::Manual, &lease)
        .await
        .unwrap();
    assert_eq!(report.matched, 6, "{report:?}");
    let statuses = statuses(db, "q").await;
    for id in ["a1", "a6", "w1", "w2", "w3", "c1", "c2", "c3"] {
        assert_eq!(statuses[id], "matched", "{id}: {statuses:?}");
    }
    assert_eq!(statuses["x1"], "cancelled");
    let audit = audit::audit(db, audit::Expected::default()).await.unwrap();
    assert_eq!(audit.violation_count(), 0, "{audit}");
    assert_contract_invariants(db).await;
    assert_recent_matches_agree(db, 1).await;

    // And a new client enqueue goes in.
    let (id,): (i64,) = sqlx::query_as("SELECT enqueue('q', 'n1', 1500)")
        .fetch_one(&client_db)
        .await
        .unwrap();
    assert!(id > 0);
    let owners: Vec<String> = sqlx::query_scalar("SELECT DISTINCT owner FROM queue_entries")
        .fetch_all(db)
        .await
        .unwrap();
    assert_eq!(owners, [client]);
}
