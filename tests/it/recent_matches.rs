//! `recent_matches` (migration 0022): each player's last `round.history_matches` matches
//! per queue, kept by the round's commit in the transaction that writes `match_players`.
//! It must say what `match_players` says after rounds (solos, parties, backfill fills),
//! after the depth changes, after retention prunes; the snapshot must read the same
//! history from it that the old per-player query read; and the migration must fill it
//! right from a history recorded before it.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use matchmaker::config::{Config, QueueConfig};
use matchmaker::daemon::clock::{Clock, ManualClock};
use matchmaker::daemon::round::RoundRunner;
use matchmaker::db::retention::{self, QueuePruner};
use matchmaker::db::{self, RoundTrigger};
use matchmaker_optimizer::{PastMatch, Player};
use sqlx::PgPool;

use crate::support::*;

const DAY: Duration = Duration::from_secs(86_400);

fn config(history_matches: usize) -> Arc<QueueConfig> {
    let config = Config::from_toml_str(&format!(
        "[queues.q]\n[queues.q.round]\nbudget = \"50ms\"\nseed = 3\nhistory_matches = {history_matches}\n"
    ))
    .expect("test config is valid");
    Arc::new(config.queues["q"].clone())
}

async fn round(db: &PgPool, clock: &ManualClock, config: &Arc<QueueConfig>) -> usize {
    let lease = db::acquire_lease(db, "q", "test", secs(15), clock.lease_now())
        .await
        .unwrap()
        .expect("free lease");
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let report = runner
        .run("q", config.clone(), RoundTrigger::Manual, &lease)
        .await
        .unwrap();
    db::release_lease(db, &lease, clock.lease_now())
        .await
        .unwrap();
    report.matched
}

/// Twelve solos `p0`..`p11` and two parties of three (`pa`, `pb`), enqueued at `at`.
async fn enqueue_pool(db: &PgPool, at: DateTime<Utc>) {
    let mut players: Vec<Player> = (0..12)
        .map(|i| player(&format!("p{i}"), 1000.0 + 37.0 * i as f64, at))
        .collect();
    for (party, skill) in [("pa", 1100.0), ("pb", 1300.0)] {
        for k in 0..3 {
            let mut p = player(&format!("{party}{k}"), skill + k as f64, at);
            p.party = Some(party.to_string());
            players.push(p);
        }
    }
    db::enqueue::enqueue_many(db, "q", &players, at)
        .await
        .expect("enqueue");
}

/// The history the snapshot reads for the queued pool at `depth`, and the history the
/// query before migration 0022 read (each pooled player's last `depth` rows of
/// match_players in the queue), built the snapshot's way: matches by id, teams in order.
async fn history_read_and_expected(db: &PgPool, depth: usize) -> (Vec<PastMatch>, Vec<PastMatch>) {
    let snapshot = db::snapshot_pool(db, "q", 100, depth).await.unwrap();
    let players: Vec<String> = snapshot
        .entries
        .iter()
        .map(|e| e.player_id.clone())
        .collect();
    let rows: Vec<(i64, DateTime<Utc>, i32, String)> = sqlx::query_as(
        "WITH recent AS (
             SELECT DISTINCT r.match_id
               FROM unnest($2::text[]) AS p(player_id)
              CROSS JOIN LATERAL (
                    SELECT mp.match_id FROM match_players mp
                     WHERE mp.queue = $1 AND mp.player_id = p.player_id
                     ORDER BY mp.matched_at DESC, mp.match_id DESC
                     LIMIT $3) r)
         SELECT mp.match_id, mp.matched_at, mp.team, mp.player_id
           FROM recent JOIN match_players mp USING (match_id)
          ORDER BY mp.match_id, mp.team, mp.player_id",
    )
    .bind("q")
    .bind(&players)
    .bind(depth as i64)
    .fetch_all(db)
    .await
    .unwrap();
    let mut expected: Vec<PastMatch> = Vec::new();
    let mut last = None;
    for (id, at, team, player) in rows {
        if last != Some(id) {
            last = Some(id);
            expected.push(PastMatch {
                teams: Vec::new(),
                at,
            });
        }
        let m = expected.last_mut().unwrap();
        if m.teams.len() <= team as usize {
            m.teams.resize(team as usize + 1, Vec::new());
        }
        m.teams[team as usize].push(player);
    }
    (snapshot.history, expected)
}

#[tokio::test]
async fn recent_matches_follow_the_rounds_and_the_depth() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    let deep = config(3);
    assert_eq!(deep.history_matches(), 3);

    // Five rounds of the same pool (solos and parties), each player back every time.
    for _ in 0..5 {
        enqueue_pool(db, clock.now()).await;
        let matched = round(db, &clock, &deep).await;
        assert!(matched >= 12, "{matched}");
        sqlx::query("UPDATE queue_entries SET status = 'cancelled' WHERE status = 'queued'")
            .execute(db)
            .await
            .unwrap();
        assert_recent_matches_agree(db, 3).await;
        clock.advance(secs(60));
    }
    let longest = count(
        db,
        "SELECT max(cardinality(match_ids))::bigint FROM recent_matches",
    )
    .await;
    assert_eq!(longest, 3);
    // What the snapshot reads is what the per-player query over match_players read.
    enqueue_pool(db, clock.now()).await;
    for depth in [1, 2, 3] {
        let (read, expected) = history_read_and_expected(db, depth).await;
        assert_eq!(read, expected, "depth {depth}");
    }
    sqlx::query("UPDATE queue_entries SET status = 'cancelled' WHERE status = 'queued'")
        .execute(db)
        .await
        .unwrap();

    // The depth lowered to 1: a player's next match leaves them one id; the snapshot
    // reads the last one of the rows not yet rewritten.
    let shallow = config(1);
    enqueue_pool(db, clock.now()).await;
    round(db, &clock, &shallow).await;
    let matched_now: Vec<(String, i32)> = sqlx::query_as(
        "SELECT r.player_id, cardinality(r.match_ids) FROM recent_matches r
          WHERE r.match_ids[cardinality(r.match_ids)] IN (
                SELECT match_id FROM matches WHERE round_id = (SELECT max(round_id) FROM rounds))",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert!(!matched_now.is_empty());
    assert!(matched_now.iter().all(|(_, n)| *n == 1), "{matched_now:?}");
    sqlx::query("UPDATE queue_entries SET status = 'cancelled' WHERE status = 'queued'")
        .execute(db)
        .await
        .unwrap();
    enqueue_pool(db, clock.now()).await;
    let (read, expected) = history_read_and_expected(db, 1).await;
    assert_eq!(read, expected);
    assert_nobody_matched_twice(db).await;
}

#[tokio::test]
async fn retention_keeps_what_recent_matches_names() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    let config = config(2);
    // Four old rounds: p0-p11 and the parties in all of them; then x0-x5 once.
    for _ in 0..4 {
        enqueue_pool(db, clock.now()).await;
        round(db, &clock, &config).await;
        sqlx::query("UPDATE queue_entries SET status = 'cancelled' WHERE status = 'queued'")
            .execute(db)
            .await
            .unwrap();
        clock.advance(secs(60));
    }
    enqueue_n(db, "q", "x", 6, clock.now()).await;
    round(db, &clock, &config).await;
    let named = count(
        db,
        "SELECT count(DISTINCT id) FROM recent_matches, unnest(match_ids) AS id",
    )
    .await;

    // Forty days on, everything is past a 30-day horizon: only the named matches stay.
    let cutoff = retention::cutoff(db, 30 * DAY, Some(t0() + chrono::Duration::days(40)))
        .await
        .unwrap();
    let mut pruner = QueuePruner::new("q", cutoff, config.history_matches(), 3);
    let pruned = retention::prune_queue(db, &mut pruner, Duration::ZERO, || async { true })
        .await
        .unwrap();
    assert!(pruned.matches > 0, "{pruned:?}");
    assert_eq!(count(db, "SELECT count(*) FROM matches").await, named);
    assert_recent_matches_agree(db, 2).await;
    // Every id named is still a match the snapshot can read.
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM recent_matches, unnest(match_ids) AS id
              WHERE NOT EXISTS (SELECT FROM matches m WHERE m.match_id = id)"
        )
        .await,
        0
    );
    enqueue_pool(db, clock.now()).await;
    let (read, expected) = history_read_and_expected(db, 2).await;
    assert_eq!(read, expected);
    assert!(!read.is_empty());
}

/// The schema of the release before migration 0022.
async fn migrate_before_0022(db: &PgPool) {
    let before_0022 = sqlx::migrate::Migrator::with_migrations(
        db::MIGRATOR
            .iter()
            .filter(|m| m.version < 22)
            .cloned()
            .collect(),
    );
    before_0022.run(db).await.unwrap();
}

#[tokio::test]
async fn the_migration_fills_recent_matches_from_the_history_before_it() {
    let tdb = unmigrated_db().await;
    let db = &tdb.pool;
    migrate_before_0022(db).await;

    // History of three queues, recorded before migration 0022: queue a's last round says
    // history_matches = 3; b's says only opponent_variation.depth = 2; c's config names
    // neither (depth 1). Each round has one match of 6 out of 8 players, in turn; the
    // rounds of a queue interleave with the others'.
    let configs = [
        (
            "a",
            r#"{"opponent_variation": {"depth": 1}, "round": {"history_matches": 3}}"#,
        ),
        ("b", r#"{"opponent_variation": {"depth": 2}, "round": {}}"#),
        ("c", r#"{}"#),
    ];
    for r in 0..6i64 {
        for (queue, config) in configs {
            let at = t0() + chrono::Duration::minutes(r * 10);
            let round_id: i64 = sqlx::query_scalar(
                "INSERT INTO rounds (queue, trigger, leader, term, started_at, snapshot_at,
                                     committed_at, pool_size, match_count, matched,
                                     left_over, rejected, snapshot_ms, solve_ms, commit_ms,
                                     seed, config_hash, config)
                 VALUES ($1, 'schedule', 't', 1, $2, $2, $2, 8, 1, 6, 2, 0, 0, 0, 0, 1, 'h',
                         $3::jsonb)
                 RETURNING round_id",
            )
            .bind(queue)
            .bind(at)
            .bind(config)
            .fetch_one(db)
            .await
            .unwrap();
            let match_id: i64 = sqlx::query_scalar(
                "INSERT INTO matches (round_id, queue, created_at, score)
                 VALUES ($1, $2, $3, 0.5) RETURNING match_id",
            )
            .bind(round_id)
            .bind(queue)
            .bind(at)
            .fetch_one(db)
            .await
            .unwrap();
            // Players r .. r+5 of u0..u7 (so each player skips some rounds).
            let players: Vec<String> = (0..6).map(|k| format!("u{}", (r + k) % 8)).collect();
            sqlx::query(
                "WITH e AS (
                     INSERT INTO queue_entries (queue, player_id, skill, enqueued_at, status,
                                                round_id, match_id, team, updated_at)
                     SELECT $1, p, 1500, $3, 'matched', $4, $5, k::int % 2, $3
                       FROM unnest($2::text[]) WITH ORDINALITY AS u(p, k)
                     RETURNING *)
                 INSERT INTO match_players (match_id, entry_id, queue, player_id, team, skill,
                                            enqueued_at, matched_at)
                 SELECT match_id, entry_id, queue, player_id, team, skill, enqueued_at,
                        updated_at
                   FROM e",
            )
            .bind(queue)
            .bind(&players)
            .bind(at)
            .bind(round_id)
            .bind(match_id)
            .execute(db)
            .await
            .unwrap();
        }
    }

    db::migrate(db).await.unwrap();
    for (queue, depth) in [("a", 3), ("b", 2), ("c", 1)] {
        let wrong: Vec<(String, MatchIds, MatchIds)> = sqlx::query_as(
            "WITH expected AS (
                 SELECT player_id, array_agg(match_id ORDER BY match_id) AS ids
                   FROM (SELECT player_id, match_id,
                                row_number() OVER (PARTITION BY player_id
                                                   ORDER BY matched_at DESC) AS n
                           FROM match_players WHERE queue = $1) x
                  WHERE n <= $2
                  GROUP BY player_id)
             SELECT player_id, e.ids, r.match_ids
               FROM expected e
               FULL JOIN (SELECT * FROM recent_matches WHERE queue = $1) r USING (player_id)
              WHERE e.ids IS DISTINCT FROM r.match_ids",
        )
        .bind(queue)
        .bind(depth as i64)
        .fetch_all(db)
        .await
        .unwrap();
        assert!(wrong.is_empty(), "queue {queue}: {wrong:?}");
        let rows = count_bound(
            db,
            "SELECT count(*) FROM recent_matches WHERE queue = $1",
            queue,
        )
        .await;
        assert_eq!(rows, 8, "queue {queue}");
    }
    // The index it replaces is gone.
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'match_players_recent'"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn the_migration_waits_until_every_replica_is_stopped() {
    let tdb = unmigrated_db().await;
    let db = &tdb.pool;
    migrate_before_0022(db).await;

    // A replica of the previous release, alive and leading a queue.
    sqlx::query(
        "INSERT INTO replicas (replica, started_at, heartbeat_at, expires_at)
         VALUES ('old-1', now(), now(), now() + interval '10 seconds')",
    )
    .execute(db)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO leases (queue, holder, term, acquired_at, expires_at)
         VALUES ('q', 'old-2', 1, now(), now() + interval '10 seconds')",
    )
    .execute(db)
    .await
    .unwrap();
    let refused = db::migrate(db)
        .await
        .expect_err("refused while replicas live");
    let message = format!("{refused:#}");
    assert!(
        message.contains("needs every replica stopped") && message.contains("old-1, old-2"),
        "{message}"
    );
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM _sqlx_migrations WHERE version = 22"
        )
        .await,
        0,
        "nothing of 0022 applied"
    );
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'match_players_recent'"
        )
        .await,
        1,
        "the previous release's index is still there"
    );

    // Stopped (a clean stop deletes the row and releases the lease): it runs.
    sqlx::query("DELETE FROM replicas")
        .execute(db)
        .await
        .unwrap();
    sqlx::query("UPDATE leases SET expires_at = now()")
        .execute(db)
        .await
        .unwrap();
    db::migrate(db)
        .await
        .expect("migrates once every replica is stopped");
    assert_eq!(count(db, "SELECT count(*) FROM recent_matches").await, 0);
}

async fn count_bound(db: &PgPool, sql: &'static str, value: &str) -> i64 {
    sqlx::query_scalar(sql)
        .bind(value)
        .fetch_one(db)
        .await
        .unwrap()
}

#[tokio::test]
async fn recent_matches_are_the_daemons_and_ops_never_clients() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let grants: Vec<(String, bool, bool, bool)> = sqlx::query_as(
        "SELECT r, has_table_privilege(r, 'recent_matches', 'SELECT'),
                has_table_privilege(r, 'recent_matches', 'INSERT'),
                has_table_privilege(r, 'recent_matches', 'UPDATE')
           FROM unnest(ARRAY['matchmaker_client', 'matchmaker_daemon', 'matchmaker_ops']) AS r
          ORDER BY r",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert_eq!(
        grants,
        [
            ("matchmaker_client".to_string(), false, false, false),
            ("matchmaker_daemon".to_string(), true, true, true),
            ("matchmaker_ops".to_string(), true, false, false),
        ]
    );
    let public = count(
        db,
        "SELECT count(*) FROM information_schema.role_table_grants
          WHERE table_name = 'recent_matches' AND grantee = 'PUBLIC'",
    )
    .await;
    assert_eq!(public, 0);
}
