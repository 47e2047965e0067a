//! `recent_matches`: each player's last `round.history_matches` matches per queue, kept
//! by the round's commit in the transaction that writes `match_players`. It must say what
//! `match_players` says after rounds (solos, parties, backfill fills), after the depth
//! changes, after retention prunes; and the snapshot must read the same history from it
//! that a per-player query over `match_players` reads.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use matchmaker::config::{Config, QueueConfig};
use matchmaker::daemon::clock::{Clock, ManualClock};
use matchmaker::db::retention::{self, QueuePruner};
use matchmaker::db::{self};
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
    run_round(db, clock, config).await.matched
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

/// The history the snapshot reads for the queued pool at `depth`, and the history a
/// per-player query reads (each pooled player's last `depth` rows of match_players in
/// the queue), built the snapshot's way: matches by id, teams in order.
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
                map: None,
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
    let pruned = retention::prune_queue(
        db,
        &mut pruner,
        Duration::ZERO,
        Duration::from_secs(60),
        || async { true },
    )
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
