//! Who may meet whom, through the client functions as a client login: attributes stored
//! and handed to the core, parties that mix a `same` attribute refused, avoid lists
//! (avoid, unavoid, avoid_list; a login sees only its own), the relay flag of a match and
//! the new left-over reasons written by the round's commit.
//!
//! The tests named `after_core_*` run whole rounds and hold the core to the rules (two
//! builds never share a match, crossplay opt-outs meet only their platform, nobody meets a
//! player they avoid): they pass once the core honours `filters` and `avoids`.

use std::collections::{BTreeMap, HashMap};

use chrono::SubsecRound;
use matchmaker::config::Config;
use matchmaker::daemon::worker::StepOutcome;
use matchmaker::db::{self};
use matchmaker_optimizer::{Attribute, LeftOver, LeftOverKind, MatchOutcome, RoundOutcome};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::support::*;

/// q: 3v3, everyone in a match shares `build`, `platform` is the crossplay attribute,
/// three avoids per player. open: 3v3 without filters, two avoids per player.
const QUEUES: &str = include_str!("configs/meet.toml");

fn config() -> Config {
    Config::from_toml_str(QUEUES).expect("valid config")
}

async fn avoid(client: &PgPool, player: &str, avoided: &str) -> i32 {
    sqlx::query_scalar("SELECT avoid($1, $2)")
        .bind(player)
        .bind(avoided)
        .fetch_one(client)
        .await
        .unwrap_or_else(|e| panic!("avoid {player} {avoided}: {e}"))
}

/// (player_id, avoided_player_id) of avoid_list as `client` sees it, newest first.
async fn avoid_list(client: &PgPool) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT player_id, avoided_player_id FROM avoid_list
          ORDER BY player_id, created_at DESC",
    )
    .fetch_all(client)
    .await
    .unwrap()
}

fn one(v: &str) -> Attribute {
    Attribute::One(v.to_string())
}

#[tokio::test]
async fn attributes_are_stored_and_reach_the_pool() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    publish(db, &config(), "meet").await;
    let (_, client) = client_login(&tdb, 1).await;
    enqueue(&client, "q", "alice", 1500.0)
        .latency("eu", 30.0)
        .attributes(json!({"build": "1.4.2", "platform": "pc", "language": ["en", "de"]}))
        .await;
    // Existing calls keep working: no attributes, no change.
    enqueue(&client, "q", "bob", 1500.0).await;
    sqlx::query(
        r#"SELECT * FROM enqueue_party('q', 'crew', '[
             {"player_id": "carol", "skill": 1500, "attributes": {"build": "1.4.2", "crossplay": "off", "platform": "ps5"}},
             {"player_id": "dave", "skill": 1450, "attributes": {"build": "1.4.2"}}]')"#,
    )
    .execute(&client)
    .await
    .unwrap();

    let stored: HashMap<String, Value> = sqlx::query_as::<_, (String, sqlx::types::Json<Value>)>(
        "SELECT player_id, attributes FROM queue_entries",
    )
    .fetch_all(db)
    .await
    .unwrap()
    .into_iter()
    .map(|(p, a)| (p, a.0))
    .collect();
    assert_eq!(
        stored["alice"],
        json!({"build": "1.4.2", "platform": "pc", "language": ["en", "de"]})
    );
    assert_eq!(stored["bob"], json!({}));
    assert_eq!(
        stored["carol"],
        json!({"build": "1.4.2", "crossplay": "off", "platform": "ps5"})
    );

    let snapshot = db::snapshot_pool(db, "q", 100, 1).await.unwrap();
    let (pool, rejected) = snapshot.to_pool(chrono::Utc::now());
    assert!(rejected.is_empty(), "{rejected:?}");
    let by_id: HashMap<&str, _> = pool.players.iter().map(|p| (p.id.as_str(), p)).collect();
    assert_eq!(
        by_id["alice"].attributes,
        BTreeMap::from([
            ("build".to_string(), one("1.4.2")),
            (
                "language".to_string(),
                Attribute::Many(vec!["en".into(), "de".into()])
            ),
            ("platform".to_string(), one("pc")),
        ])
    );
    assert!(by_id["bob"].attributes.is_empty());
    assert_eq!(by_id["carol"].attributes["crossplay"], one("off"));
    assert_eq!(by_id["dave"].attributes["build"], one("1.4.2"));

    // A queue's same_attributes and max_avoids are published for clients.
    let (same, max): (Vec<String>, i32) =
        sqlx::query_as("SELECT same_attributes, max_avoids FROM queue_catalog WHERE queue = 'q'")
            .fetch_one(&client)
            .await
            .unwrap();
    assert_eq!((same, max), (vec!["build".to_string()], 3));
}

#[tokio::test]
async fn a_party_mixing_builds_is_refused() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    publish(db, &config(), "meet").await;
    let (_, client) = client_login(&tdb, 1).await;
    let party = |members: Value| {
        let client = client.clone();
        async move {
            sqlx::query("SELECT * FROM enqueue_party('q', 'crew', $1)")
                .bind(sqlx::types::Json(members))
                .fetch_all(&client)
                .await
        }
    };
    for (members, shown) in [
        (
            json!([{"player_id": "a", "skill": 1500, "attributes": {"build": "1.4"}},
                   {"player_id": "b", "skill": 1500, "attributes": {"build": "1.5"}}]),
            "1.4, 1.5",
        ),
        // A member without the attribute meets only players without it.
        (
            json!([{"player_id": "a", "skill": 1500, "attributes": {"build": "1.4"}},
                   {"player_id": "b", "skill": 1500}]),
            "1.4, NULL",
        ),
    ] {
        let err = party(members).await.expect_err("a party mixing builds");
        assert_eq!(
            db_error(&err),
            (
                "22023".to_string(),
                format!(
                    "members[].attributes.build = {shown}: party members must share it (queue \
                     q's filters.same)"
                )
            )
        );
    }
    assert_eq!(count(db, "SELECT count(*) FROM queue_entries").await, 0);
    // Agreeing on the build, the party is queued; other attributes may differ.
    party(json!([
        {"player_id": "a", "skill": 1500, "attributes": {"build": "1.4", "platform": "pc"}},
        {"player_id": "b", "skill": 1500, "attributes": {"build": "1.4", "platform": "xbox"}}]))
    .await
    .unwrap();
    // A queue without filters takes any party.
    sqlx::query(
        r#"SELECT * FROM enqueue_party('open', 'crew', '[
             {"player_id": "a", "skill": 1500, "attributes": {"build": "1.4"}},
             {"player_id": "b", "skill": 1500, "attributes": {"build": "1.5"}}]')"#,
    )
    .execute(&client)
    .await
    .unwrap();
}

#[tokio::test]
async fn avoid_unavoid_and_avoid_list_work_and_a_login_sees_only_its_own() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    publish(db, &config(), "meet").await;
    let (me, client) = client_login(&tdb, 1).await;
    let (_, other) = client_login(&tdb, 1).await;

    assert_eq!(avoid(&client, "alice", "bob").await, 1);
    assert_eq!(avoid(&client, "alice", "carol").await, 2);
    assert_eq!(avoid(&other, "alice", "zed").await, 1);
    // Again: renewed, not doubled.
    assert_eq!(avoid(&client, "alice", "bob").await, 2);
    assert_eq!(
        avoid_list(&client).await,
        [
            ("alice".to_string(), "bob".to_string()),
            ("alice".to_string(), "carol".to_string())
        ]
    );
    assert_eq!(
        avoid_list(&other).await,
        [("alice".to_string(), "zed".to_string())]
    );
    // Another login's avoid is not this login's to remove.
    let removed: bool = sqlx::query_scalar("SELECT unavoid('alice', 'zed')")
        .fetch_one(&client)
        .await
        .unwrap();
    assert!(!removed);
    assert_eq!(avoid_list(&other).await.len(), 1);
    let removed: bool = sqlx::query_scalar("SELECT unavoid('alice', 'carol')")
        .fetch_one(&client)
        .await
        .unwrap();
    assert!(removed);
    assert_eq!(
        avoid_list(&client).await,
        [("alice".to_string(), "bob".to_string())]
    );

    // At most the largest max_per_player of the active queues (3): the oldest goes.
    for p in ["p1", "p2", "p3"] {
        avoid(&client, "alice", p).await;
    }
    let kept: Vec<String> = avoid_list(&client)
        .await
        .into_iter()
        .map(|(_, a)| a)
        .collect();
    assert_eq!(kept, ["p3", "p2", "p1"]);

    // A timed avoid; an expired one is not shown (retention deletes it).
    sqlx::query("SELECT avoid('bob', 'alice', interval '2 hours')")
        .execute(&client)
        .await
        .unwrap();
    let expires: Option<chrono::DateTime<chrono::Utc>> =
        sqlx::query_scalar("SELECT expires_at FROM avoid_list WHERE player_id = 'bob'")
            .fetch_one(&client)
            .await
            .unwrap();
    assert!(expires.is_some());
    sqlx::query(
        "UPDATE avoids SET expires_at = now() - interval '1 second' WHERE player_id = 'bob'",
    )
    .execute(db)
    .await
    .unwrap();
    assert!(!avoid_list(&client).await.iter().any(|(p, _)| p == "bob"));
    let owners: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT owner FROM avoids WHERE player_id = 'alice' AND avoided_player_id LIKE 'p%'")
            .fetch_all(db)
            .await
            .unwrap();
    assert_eq!(owners, [me]);
    // Clients read the view, never the table.
    let err = sqlx::query("SELECT * FROM avoids")
        .fetch_all(&client)
        .await
        .expect_err("the table is the daemon's");
    assert_eq!(db_error(&err).0, "42501");
}

#[tokio::test]
async fn the_snapshot_gives_each_player_their_newest_avoids_of_pooled_players() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    publish(db, &config(), "meet").await;
    let (_, client) = client_login(&tdb, 1).await;
    let (_, other) = client_login(&tdb, 1).await;
    for p in ["a", "b", "c", "d", "e"] {
        enqueue(&client, "q", p, 1500.0)
            .latency("eu", 30.0)
            .attributes(json!({"build": "1"}))
            .await;
    }
    enqueue(&other, "q", "x", 1500.0)
        .latency("eu", 30.0)
        .attributes(json!({"build": "1"}))
        .await;
    // a avoids b, c, d, then somebody not queued (newest); avoid() keeps the newest three
    // (the largest max_per_player of the queues), so b goes.
    for avoided in ["b", "c", "d", "ghost"] {
        avoid(&client, "a", avoided).await;
    }
    avoid(&other, "x", "a").await;
    // An expired avoid is ignored.
    avoid(&client, "b", "c").await;
    sqlx::query("UPDATE avoids SET expires_at = now() WHERE player_id = 'b'")
        .execute(db)
        .await
        .unwrap();

    let snapshot = db::snapshot_round(
        db,
        "q",
        db::SnapshotLimits {
            max_avoids: 2,
            ..db::SnapshotLimits::new(100, 1)
        },
    )
    .await
    .unwrap();
    let (pool, _) = snapshot.to_pool(chrono::Utc::now());
    let avoids: HashMap<&str, &Vec<String>> = pool
        .players
        .iter()
        .map(|p| (p.id.as_str(), &p.avoids))
        .collect();
    // The newest two are ghost and d; ghost is not pooled.
    assert_eq!(avoids["a"], &vec!["d".to_string()]);
    assert!(avoids["b"].is_empty());
    // x's avoid names its own login's "a", who is not queued.
    assert!(avoids["x"].is_empty());

    // The queue's own limit (3), newest first.
    let snapshot = db::snapshot_round(
        db,
        "q",
        db::SnapshotLimits {
            max_avoids: 3,
            ..db::SnapshotLimits::new(100, 1)
        },
    )
    .await
    .unwrap();
    let (pool, _) = snapshot.to_pool(chrono::Utc::now());
    let a = pool.players.iter().find(|p| p.id == "a").unwrap();
    assert_eq!(a.avoids, ["d", "c"]);
    // max_per_player = 0: no avoid is read.
    let snapshot = db::snapshot_round(
        db,
        "q",
        db::SnapshotLimits {
            max_avoids: 0,
            ..db::SnapshotLimits::new(100, 1)
        },
    )
    .await
    .unwrap();
    assert!(snapshot.avoids.is_empty());

    // Retention deletes the expired avoid, and only it.
    let cutoff = chrono::Utc::now() - chrono::Duration::days(1);
    let mut pruner = db::retention::QueuePruner::new("q", cutoff, 1, 100);
    let pruned = db::retention::prune_queue(
        db,
        &mut pruner,
        std::time::Duration::ZERO,
        std::time::Duration::from_secs(60),
        || std::future::ready(true),
    )
    .await
    .unwrap();
    assert_eq!(pruned.avoids, 1);
    assert_eq!(count(db, "SELECT count(*) FROM avoids").await, 4);
}

/// player_id, status, relay, left_over, reason of player_status.
type StatusRow = (String, String, bool, Option<String>, Option<String>);

#[tokio::test]
async fn a_relay_match_and_the_new_left_over_reasons_reach_the_client() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let config = config();
    publish(db, &config, "meet").await;
    let (_, client) = client_login(&tdb, 2).await;
    for i in 0..8 {
        enqueue(&client, "q", &format!("f{i}"), 1500.0)
            .latency("eu", 30.0)
            .attributes(json!({"build": "1"}))
            .await;
    }
    let queue = &config.queues["q"];
    let now = chrono::Utc::now().trunc_subsecs(6);
    let lease = db::acquire_lease(db, "q", "meet", secs(3600), Some(now))
        .await
        .unwrap()
        .expect("the lease");
    let snapshot = db::snapshot_pool(db, "q", 100, 1).await.unwrap();
    let (pool, _) = snapshot.to_pool(now);
    let outcome = RoundOutcome {
        matches: vec![MatchOutcome {
            teams: vec![
                vec!["f0".into(), "f1".into(), "f2".into()],
                vec!["f3".into(), "f4".into(), "f5".into()],
            ],
            score: 0.5,
            factors: Default::default(),
            roles: None,
            region: None,
            hosts: Some(vec![]),
            host: None,
            backup_host: None,
            relay: true,
            map: None,
            map_vetoed_by: 0,
        }],
        unmatched: vec!["f6".into(), "f7".into()],
        rejected: vec![],
        score: 0.5,
        stats: hand_written_stats(),
    };
    let (pool_lz4, pool_json_bytes) = db::round_snapshot::compress_pool(&pool);
    let replay = db::ReplayRecord {
        pool_lz4,
        pool_players: pool.players.len(),
        pool_json_bytes,
        config_toml: queue.to_toml("q"),
        budget: db::BudgetRecord::new(queue.round.solve_budget(), None),
        strategy: queue.round.strategy,
        threads: Some(1),
        left_over: vec![
            LeftOver {
                player: "f6".into(),
                kind: LeftOverKind::Avoided,
                reason: "every valid match with them broke an avoid".into(),
            },
            LeftOver {
                player: "f7".into(),
                kind: LeftOverKind::Floor,
                reason: "the floor's max_team_gap 100 held them; it relaxes in 30 s".into(),
            },
        ],
        servers: None,
    };
    let (mut listener, _) = listen_to(&client, "q").await;
    let committed =
        commit_hand_written(db, &snapshot, &lease, now, queue, &outcome, Some(&replay)).await;
    assert_eq!(committed.matched, 6);
    assert_eq!(
        committed.left_over_by_kind,
        BTreeMap::from([("avoided", 1), ("floor", 1)])
    );

    let (relay, host): (bool, Option<String>) =
        sqlx::query_as("SELECT relay, host_player_id FROM matches")
            .fetch_one(db)
            .await
            .unwrap();
    assert_eq!((relay, host), (true, None));
    let status: Vec<StatusRow> = sqlx::query_as(
        "SELECT player_id, status, relay, left_over, reason FROM player_status ORDER BY player_id",
    )
    .fetch_all(&client)
    .await
    .unwrap();
    assert_eq!(status[0].1, "matched");
    assert!(status[..6].iter().all(|s| s.2), "{status:?}");
    assert_eq!(status[6].3.as_deref(), Some("avoided"));
    assert_eq!(
        status[6].4.as_deref(),
        Some("every valid match with them broke an avoid")
    );
    assert!(!status[6].2);
    assert_eq!(status[7].3.as_deref(), Some("floor"));
    let relays: Vec<bool> = sqlx::query_scalar("SELECT relay FROM match_details")
        .fetch_all(&client)
        .await
        .unwrap();
    assert_eq!(relays, [true; 6]);

    let mut payloads = Vec::new();
    while let Ok(Ok(n)) =
        tokio::time::timeout(std::time::Duration::from_millis(500), listener.recv()).await
    {
        payloads.push(n.payload().to_string());
    }
    let matches: Vec<Value> = payloads
        .iter()
        .map(|p| serde_json::from_str::<Value>(p).unwrap())
        .filter(|v| v["event"] == "match")
        .collect();
    assert_eq!(matches.len(), 1, "{payloads:?}");
    assert_eq!(matches[0]["relay"], true);
}

/// A database where q is published, and q's leader on a manual clock.
struct World {
    tdb: TestDb,
    q: Leader,
}

impl World {
    async fn new() -> World {
        let tdb = fresh_db().await;
        let q = leader(&tdb.pool, QUEUES, "q", "meet").await;
        World { tdb, q }
    }

    /// Rounds until one runs.
    async fn round(&mut self) {
        for _ in 0..5 {
            self.q.clock.advance(secs(1));
            if let StepOutcome::Ran(_) = self.q.worker.step().await.unwrap() {
                return;
            }
        }
        panic!("no round ran");
    }
}

/// Each matched player's match, as the client reads match_details: player -> (match, team).
async fn placements(client: &PgPool) -> HashMap<String, (i64, i32)> {
    sqlx::query_as::<_, (String, i64, i32)>("SELECT player_id, match_id, team FROM match_details")
        .fetch_all(client)
        .await
        .unwrap()
        .into_iter()
        .map(|(p, m, t)| (p, (m, t)))
        .collect()
}

#[tokio::test]
async fn after_core_two_builds_never_share_a_match() {
    let mut w = World::new().await;
    let (_, client) = client_login(&w.tdb, 1).await;
    // Two builds of six players each; skills that pair across builds best.
    for i in 0..6 {
        let skill = 1000.0 + 200.0 * (i / 2) as f64;
        enqueue(&client, "q", &format!("old{i}"), skill)
            .latency("eu", 30.0)
            .attributes(json!({"build": "1.4"}))
            .await;
        enqueue(&client, "q", &format!("new{i}"), skill + 5.0)
            .latency("eu", 30.0)
            .attributes(json!({"build": "1.5"}))
            .await;
    }
    w.round().await;
    let placed = placements(&client).await;
    assert!(!placed.is_empty(), "nobody was matched");
    let mut builds: HashMap<i64, Vec<&str>> = HashMap::new();
    for (p, (m, _)) in &placed {
        builds
            .entry(*m)
            .or_default()
            .push(if p.starts_with("old") { "1.4" } else { "1.5" });
    }
    for (m, b) in builds {
        assert!(
            b.iter().all(|x| *x == b[0]),
            "match {m} mixes builds: {b:?}"
        );
    }
}

#[tokio::test]
async fn after_core_crossplay_opt_outs_meet_only_their_platform() {
    let mut w = World::new().await;
    let (_, client) = client_login(&w.tdb, 1).await;
    // 12 players, two matches of q's 3v3 (all in eu): 6 on pc (p0-p5), 3 on ps5 and 3 on
    // xbox (p6-p11, the platforms alternating), skills close together. p0 and p1 opt out
    // of crossplay: the one way to place everyone is the match of all six pc players
    // beside a match that mixes ps5 and xbox.
    let mut platform = HashMap::new();
    let mut opted_out = Vec::new();
    for i in 0..12 {
        let p = format!("p{i}");
        let plat = if i < 6 { "pc" } else { ["ps5", "xbox"][i % 2] };
        let attributes = if i < 2 {
            opted_out.push(p.clone());
            json!({"build": "1", "platform": plat, "crossplay": "off"})
        } else {
            json!({"build": "1", "platform": plat})
        };
        platform.insert(p.clone(), plat);
        enqueue(&client, "q", &p, 1500.0 + i as f64)
            .latency("eu", 30.0)
            .attributes(attributes)
            .await;
    }
    w.round().await;
    let placed = placements(&client).await;
    let mut platforms_of: HashMap<i64, Vec<&str>> = HashMap::new();
    for (p, (m, _)) in &placed {
        platforms_of.entry(*m).or_default().push(platform[p]);
    }
    for p in &opted_out {
        let (m, _) = placed
            .get(p)
            .unwrap_or_else(|| panic!("{p} opted out of crossplay and was not placed: {placed:?}"));
        for (other, (om, _)) in &placed {
            if om == m {
                assert_eq!(
                    platform[other], platform[p],
                    "{p} opted out of crossplay and met {other}"
                );
            }
        }
    }
    assert!(
        platforms_of
            .values()
            .any(|plats| plats.iter().any(|x| *x != plats[0])),
        "no match mixes platforms, though only the opted-out players' match must not: \
         {platforms_of:?}"
    );
}

#[tokio::test]
async fn after_core_nobody_meets_a_player_they_avoid() {
    let mut w = World::new().await;
    let (_, client) = client_login(&w.tdb, 1).await;
    for i in 0..12 {
        enqueue(&client, "q", &format!("p{i}"), 1500.0 + i as f64)
            .latency("eu", 30.0)
            .attributes(json!({"build": "1"}))
            .await;
    }
    // Neighbours in skill (whom the search would put together) avoid each other.
    let mut pairs = Vec::new();
    for i in (0..12).step_by(2) {
        let (a, b) = (format!("p{i}"), format!("p{}", i + 1));
        avoid(&client, &a, &b).await;
        pairs.push((a, b));
    }
    w.round().await;
    let placed = placements(&client).await;
    assert!(!placed.is_empty(), "nobody was matched");
    for (a, b) in &pairs {
        if let (Some((ma, _)), Some((mb, _))) = (placed.get(a), placed.get(b)) {
            assert_ne!(ma, mb, "{a} avoids {b} and met them");
        }
    }
}

#[test]
fn a_replay_what_if_takes_other_filters_avoids_and_floors() {
    let q = config().queues["q"].clone();
    let changed = matchmaker::ops::replay::apply_sets(
        &q,
        "q",
        &[
            r#"queue.filters.same=["build", "map"]"#.to_string(),
            "queue.avoids.scope=team".to_string(),
            "queue.avoids.max_per_player=1".to_string(),
            r#"queue.floors=[{after = "0s", max_team_gap = 150.0}, {after = "2m", max_team_gap = 300.0, relay = true}]"#
                .to_string(),
        ],
    )
    .expect("the what-if is a valid config");
    let m = &changed.model;
    assert_eq!(m.filters.same, ["build", "map"]);
    assert_eq!(m.filters.crossplay.as_deref(), Some("platform"));
    assert_eq!(m.avoids.scope, matchmaker_optimizer::AvoidScope::Team);
    assert_eq!(m.avoids.max_per_player, 1);
    assert_eq!(m.floors.len(), 2);
    assert_eq!(m.floors[1].after, secs(120));
    assert_eq!(m.floors[1].max_team_gap, Some(300.0));
    assert!(m.floors[1].relay);
    // The stored config of a round (as the round writes it) keeps them.
    let again = Config::from_toml_str(&changed.to_toml("q")).unwrap();
    assert_eq!(again.queues["q"].model, changed.model);
}
