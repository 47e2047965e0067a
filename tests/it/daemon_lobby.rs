//! A big format end to end: a 16v16 queue on the daemon and a real PostgreSQL, 70
//! players (ten parties of two and 50 solos) enqueued as a client login. The round
//! forms two full lobbies through the lobby path; `matches` and `match_players` hold
//! 2 x 32 players on teams of 16 with every party on one team, `match_details` shows
//! each player 15 teammates and 16 opponents, the six left over stay queued with a
//! reason, and the audit holds the matches to the published format.

use std::time::Duration;

use matchmaker::config::Config;

use crate::support::*;

fn config() -> String {
    "default_queue = \"conquest\"\n\
     [daemon]\npoll_interval = \"1h\"\nlease_ttl = \"3s\"\nlease_renew = \"1s\"\n\
     [queues.conquest]\nteams = 2\nteam_size = 16\nnetwork = \"dedicated\"\n\
     [queues.conquest.round]\nevery = \"1h\"\nbudget = \"200ms\"\ntarget_pool = 70\n\
     [queues.conquest.tickets]\nregions = [\"eu\", \"us\"]\n"
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_16v16_queue_forms_full_lobbies_through_the_daemon() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let config = Config::from_toml_str(&config()).expect("test config is valid");
    let daemon = spawn_daemon(tdb.new_pool(6).await, config, "lobby-a");
    wait_for_count(
        db,
        "SELECT count(*) FROM queue_state",
        1,
        Duration::from_secs(10),
    )
    .await;
    wait_for_count(
        db,
        "SELECT count(*) FROM pg_stat_activity
          WHERE datname = current_database() AND query = 'LISTEN \"matchmaker_enqueue\"'",
        1,
        Duration::from_secs(10),
    )
    .await;
    let (_, client) = client_login(&tdb, 2).await;

    let mut entries = Vec::new();
    for i in 0..10 {
        let a = format!("d{i}a");
        let b = format!("d{i}b");
        let region = if i % 2 == 0 { "eu" } else { "us" };
        let ids = enqueue_party(&client, "conquest", &format!("duo{i}"))
            .members_at(&[&a, &b], 1400.0 + 20.0 * i as f64, region, 30.0)
            .await;
        entries.extend(ids.into_iter().map(|(_, e)| e));
    }
    for i in 0..50 {
        let region = if i % 2 == 0 { "eu" } else { "us" };
        let id = enqueue(
            &client,
            "conquest",
            &format!("s{i:02}"),
            1300.0 + 9.0 * i as f64,
        )
        .latency(region, 25.0 + (i % 7) as f64)
        .await;
        entries.push(id);
    }
    wait_for_count(
        db,
        "SELECT count(*) FROM rounds WHERE queue = 'conquest'",
        1,
        Duration::from_secs(30),
    )
    .await;
    daemon.stop().await;

    // two lobbies of 32, teams of 16
    let teams: Vec<(i64, i32, i64)> = sqlx::query_as(
        "SELECT match_id, team, count(*) FROM match_players
          WHERE queue = 'conquest' GROUP BY match_id, team ORDER BY match_id, team",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert_eq!(teams.len(), 4, "{teams:?}");
    assert!(teams.iter().all(|t| t.2 == 16), "{teams:?}");
    let matches: Vec<(String, f64, Option<String>)> =
        sqlx::query_as("SELECT queue, score, region FROM matches ORDER BY match_id")
            .fetch_all(db)
            .await
            .unwrap();
    assert_eq!(matches.len(), 2);
    for (_, score, region) in &matches {
        assert!(
            (0.0..=1.0).contains(score) && region.is_some(),
            "{matches:?}"
        );
    }
    // every party on one team
    let split: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM match_players a JOIN match_players b
            ON a.match_id = b.match_id AND a.player_id < b.player_id
         WHERE a.queue = 'conquest' AND a.player_id LIKE 'd%' AND b.player_id LIKE 'd%'
           AND left(a.player_id, length(a.player_id) - 1) = left(b.player_id, length(b.player_id) - 1)
           AND a.team <> b.team",
    )
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(split, 0, "a party was split");

    // what the clients read
    let seen: Vec<(String, i32, i32)> = sqlx::query_as(
        "SELECT player_id, cardinality(teammates), cardinality(opponents)
           FROM match_details WHERE queue = 'conquest'",
    )
    .fetch_all(&client)
    .await
    .unwrap();
    assert_eq!(seen.len(), 64);
    assert!(seen.iter().all(|s| (s.1, s.2) == (15, 16)), "{seen:?}");
    let waiting: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT player_id, status, reason FROM player_status
          WHERE queue = 'conquest' AND status = 'queued'",
    )
    .fetch_all(&client)
    .await
    .unwrap();
    assert_eq!(waiting.len(), 6, "{waiting:?}");
    assert!(
        waiting
            .iter()
            .all(|w| w.2.as_deref().is_some_and(|r| !r.is_empty())),
        "{waiting:?}"
    );
    assert_contract_invariants(db).await;
    let clean = audit_clean(db, &entries).await;
    assert_eq!((clean.matches, clean.matched, clean.queued), (2, 64, 6));
}
