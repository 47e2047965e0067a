//! Maps through the client functions, as a client login: the catalog publishes a queue's
//! maps, enqueue and enqueue_party refuse unknown maps and too many vetoes (and nothing is
//! queued), a round writes each match's map where the client reads it, never a map one
//! of its players vetoed, and the next round's history carries it.

use std::collections::HashMap;

use matchmaker::config::Config;
use matchmaker::daemon::worker::StepOutcome;
use matchmaker::db;
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::support::*;

/// q: 3v3 on four maps, two vetoes a player, the last two matches count; open: no maps.
const QUEUES: &str = include_str!("configs/maps.toml");

#[tokio::test]
async fn the_catalog_shows_the_maps_and_bad_choices_are_refused() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    publish(db, &Config::from_toml_str(QUEUES).unwrap(), "maps").await;
    let (_, client) = client_login(&tdb, 1).await;
    let (maps, vetoes): (Vec<String>, i32) =
        sqlx::query_as("SELECT maps, max_vetoes FROM queue_catalog WHERE queue = 'q'")
            .fetch_one(&client)
            .await
            .unwrap();
    assert_eq!(maps, ["Dust", "Harbor", "Summit", "Canal"]);
    assert_eq!(vetoes, 2);

    let solo = |queue: &'static str, attributes: Value| {
        let client = client.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT enqueue($1, 'alice', 1500, attributes => $2)")
                .bind(queue)
                .bind(sqlx::types::Json(attributes))
                .fetch_one(&client)
                .await
        }
    };
    for (queue, attributes, message) in [
        (
            "q",
            json!({"veto": "Atlantis"}),
            "attributes.veto = 'Atlantis': unknown map; queue q's maps: Dust, Harbor, Summit, Canal",
        ),
        (
            "q",
            json!({"maps": ["Dust", "atlantis"]}),
            "attributes.maps = 'atlantis': unknown map; queue q's maps: Dust, Harbor, Summit, Canal",
        ),
        (
            "q",
            json!({"veto": ["Dust", "Harbor", "Summit"]}),
            r#"attributes.veto = ["Dust", "Harbor", "Summit"]: vetoes 3 maps; queue q allows 2"#,
        ),
        (
            "open",
            json!({"veto": "Dust"}),
            r#"attributes.veto = "Dust": queue open has no maps"#,
        ),
    ] {
        let err = solo(queue, attributes.clone())
            .await
            .expect_err("a bad map choice");
        assert_eq!(
            db_error(&err),
            ("22023".to_string(), message.to_string()),
            "{attributes}"
        );
    }
    // A party member's bad veto refuses the whole party.
    let err = sqlx::query(
        r#"SELECT * FROM enqueue_party('q', 'crew', '[
             {"player_id": "a", "skill": 1500, "attributes": {"veto": ["Dust"]}},
             {"player_id": "b", "skill": 1500, "attributes": {"veto": ["Moon"]}}]')"#,
    )
    .execute(&client)
    .await
    .expect_err("a party with an unknown map");
    assert_eq!(db_error(&err).0, "22023");
    assert_eq!(count(db, "SELECT count(*) FROM queue_entries").await, 0);
    // A backfill request names its session's map: one of the queue's.
    let (_, server) = server_login(&tdb, 1).await;
    let members = json!([{"player_id": "m0", "team": 0, "skill": 1500, "latencies": {"eu": 30}},
                         {"player_id": "m1", "team": 0, "skill": 1500, "latencies": {"eu": 30}},
                         {"player_id": "m2", "team": 0, "skill": 1500, "latencies": {"eu": 30}},
                         {"player_id": "m3", "team": 1, "skill": 1500, "latencies": {"eu": 30}},
                         {"player_id": "m4", "team": 1, "skill": 1500, "latencies": {"eu": 30}}]);
    for (queue, map, message) in [
        (
            "q",
            "Atlantis",
            "map = 'Atlantis': unknown map; queue q's maps: Dust, Harbor, Summit, Canal",
        ),
        ("open", "Dust", "map = 'Dust': queue open has no maps"),
    ] {
        let err = sqlx::query("SELECT request_backfill($1, 's1', $2, '{0,1}', map => $3)")
            .bind(queue)
            .bind(sqlx::types::Json(&members))
            .bind(map)
            .execute(&server)
            .await
            .expect_err("a bad map");
        assert_eq!(db_error(&err), ("22023".to_string(), message.to_string()));
    }
    assert_eq!(count(db, "SELECT count(*) FROM backfill_requests").await, 0);
    // Good choices are queued, a single name or a list.
    solo("q", json!({"veto": ["Dust", "Canal"], "maps": "Harbor"}))
        .await
        .unwrap();
    assert_eq!(count(db, "SELECT count(*) FROM queue_entries").await, 1);
}

/// Rounds until one runs.
async fn round(q: &mut Leader) {
    for _ in 0..5 {
        q.clock.advance(secs(1));
        if let StepOutcome::Ran(_) = q.worker.step().await.unwrap() {
            return;
        }
    }
    panic!("no round ran");
}

/// Each placed player's (match, map), as the client reads match_details.
async fn maps_played(client: &PgPool) -> HashMap<String, (i64, Option<String>)> {
    sqlx::query_as::<_, (String, i64, Option<String>)>(
        "SELECT player_id, match_id, map FROM match_details",
    )
    .fetch_all(client)
    .await
    .unwrap()
    .into_iter()
    .map(|(p, m, map)| (p, (m, map)))
    .collect()
}

#[tokio::test]
async fn rounds_write_the_map_keep_vetoes_and_remember_it() {
    let tdb = fresh_db().await;
    let mut q = leader(&tdb.pool, QUEUES, "q", "maps").await;
    let (_, client) = client_login(&tdb, 1).await;
    // Twelve players; half veto Dust and Harbor, the others Summit: a match mixing them
    // could only be on Canal.
    let vetoes = |i: usize| {
        if i.is_multiple_of(2) {
            json!(["Dust", "Harbor"])
        } else {
            json!(["Summit"])
        }
    };
    for i in 0..12 {
        enqueue(&client, "q", &format!("p{i}"), 1500.0 + 10.0 * i as f64)
            .latency("eu", 30.0)
            .attributes(json!({"veto": vetoes(i)}))
            .await;
    }
    round(&mut q).await;
    let first = maps_played(&client).await;
    assert_eq!(first.len(), 12, "{first:?}");
    for (p, (_, map)) in &first {
        let map = map.as_deref().expect("a map");
        let i: usize = p[1..].parse().unwrap();
        let vetoed: Vec<String> = serde_json::from_value(vetoes(i)).unwrap();
        assert!(!vetoed.iter().any(|v| v == map), "{p} vetoed {map}");
    }

    // Queued again, the players' history holds their map: the snapshot hands it over.
    for i in 0..12 {
        enqueue(&client, "q", &format!("p{i}"), 1500.0)
            .latency("eu", 30.0)
            .await;
    }
    let snapshot = db::snapshot_pool(&tdb.pool, "q", 100, 1).await.unwrap();
    let (pool, _) = snapshot.to_pool(chrono::Utc::now());
    assert!(!pool.history.is_empty());
    for past in &pool.history {
        let id = &past.teams.iter().flatten().next().unwrap();
        assert_eq!(past.map, first[id.as_str()].1, "{past:?}");
    }
    // Without vetoes, nobody replays the map of their last match.
    round(&mut q).await;
    let second: HashMap<String, (i64, Option<String>)> = maps_played(&client)
        .await
        .into_iter()
        .filter(|(_, (m, _))| !first.values().any(|(f, _)| f == m))
        .collect();
    assert_eq!(second.len(), 12);
    for (p, (_, map)) in &second {
        assert_ne!(map, &first[p].1, "{p} replays their last map");
    }
}

#[tokio::test]
async fn a_backfill_on_a_map_takes_nobody_who_vetoes_it() {
    let tdb = fresh_db().await;
    let mut q = leader(&tdb.pool, QUEUES, "q", "maps").await;
    let (_, client) = client_login(&tdb, 1).await;
    let (_, server) = server_login(&tdb, 1).await;
    let members = json!([
        {"player_id": "m0", "team": 0, "skill": 1550, "latencies": {"eu": 30}},
        {"player_id": "m1", "team": 0, "skill": 1550, "latencies": {"eu": 30}},
        {"player_id": "m2", "team": 0, "skill": 1550, "latencies": {"eu": 30}},
        {"player_id": "m3", "team": 1, "skill": 1550, "latencies": {"eu": 30}},
        {"player_id": "m4", "team": 1, "skill": 1550, "latencies": {"eu": 30}}
    ]);
    let ask = |map: &'static str| {
        let (server, members) = (server.clone(), members.clone());
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT request_backfill('q', 's1', $1, '{0,1}', map => $2)",
            )
            .bind(sqlx::types::Json(members))
            .bind(map)
            .fetch_one(&server)
            .await
        }
    };
    // The nearest in skill vetoes the session's map; the other one fills the session.
    enqueue(&client, "q", "vetoer", 1550.0)
        .latency("eu", 30.0)
        .attributes(json!({"veto": ["Dust"]}))
        .await;
    enqueue(&client, "q", "taker", 1700.0)
        .latency("eu", 30.0)
        .attributes(json!({"veto": ["Summit"]}))
        .await;
    let request = ask("Dust").await.unwrap();
    round(&mut q).await;
    let placed = maps_played(&client).await;
    assert_eq!(placed.len(), 1, "{placed:?}");
    assert_eq!(placed["taker"].1.as_deref(), Some("Dust"));
    let (status, filled_by): (String, Vec<String>) =
        sqlx::query_as("SELECT status, filled_by FROM backfill_status($1::bigint)")
            .bind(request)
            .fetch_one(&server)
            .await
            .unwrap();
    assert_eq!(
        (status.as_str(), filled_by),
        ("filled", vec!["taker".to_string()])
    );
    let (status,): (String,) =
        sqlx::query_as("SELECT status FROM player_status('vetoer') WHERE queue = 'q'")
            .fetch_one(&client)
            .await
            .unwrap();
    assert_eq!(status, "queued");
}
