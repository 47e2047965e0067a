//! The wait estimate as a game backend reads it (`player_status.estimated_wait_s`, a
//! client login): none while no match can form (the pool one player short, a player the
//! last round found nobody to play with), one figure for a whole party, the model's
//! learned scale applied, and the estimates of matched players compared with their waits
//! in the round and in the report.

use std::collections::BTreeMap;

use chrono::Utc;
use serde_json::json;
use sqlx::PgPool;

use crate::support::*;

/// 3v3; a round every 10 s on the test's clock; a match shares `build`.
const CONFIG: &str = "[queues.q]\nmax_wait = \"10m\"\n\
                      [queues.q.round]\nevery = \"10s\"\nbudget = \"50ms\"\nseed = 5\n\
                      [queues.q.filters]\nsame = [\"build\"]\n";
const EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// What a client reads of one queued player.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
struct Queued {
    player_id: String,
    estimated_wait_s: Option<i32>,
    seconds_to_next_round: Option<i32>,
    players_missing: Option<i32>,
    left_over: Option<String>,
    reason: Option<String>,
}

async fn queued(client: &PgPool, players: &[&str]) -> BTreeMap<String, Queued> {
    let ids: Vec<String> = players.iter().map(|p| p.to_string()).collect();
    sqlx::query_as::<_, Queued>(
        "SELECT player_id, estimated_wait_s, seconds_to_next_round, players_missing,
                left_over, reason
           FROM player_status($1) WHERE status = 'queued'",
    )
    .bind(&ids)
    .fetch_all(client)
    .await
    .unwrap()
    .into_iter()
    .map(|q| (q.player_id.clone(), q))
    .collect()
}

async fn solo(client: &PgPool, player: &str, skill: f64, build: &str) {
    enqueue(client, "q", player, skill)
        .latency("eu", 30.0)
        .attributes(json!({ "build": build }))
        .await;
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// A round that matches twelve players, so that the leader has a model.
async fn first_round(d: &mut Daemon, client: &PgPool) {
    for p in names("seed", 12) {
        solo(client, &p, 1500.0, "1").await;
    }
    let report = d.round_after("q", EVERY).await;
    assert_eq!(report.matched, 12, "{report:?}");
    let model: Option<serde_json::Value> =
        sqlx::query_scalar("SELECT wait_model FROM queue_state WHERE queue = 'q'")
            .fetch_one(d.db())
            .await
            .unwrap();
    assert!(
        model.is_some(),
        "the leader publishes a model after its round"
    );
}

#[tokio::test]
async fn no_estimate_while_the_pool_is_one_player_short_of_a_match() {
    let mut d = Daemon::start(CONFIG, "a").await;
    let (_, client) = client_login(&d.tdb, 2).await;
    first_round(&mut d, &client).await;

    let five = names("p", 5);
    for p in &five {
        solo(&client, p, 1500.0, "1").await;
    }
    d.step("q").await;
    let ids: Vec<&str> = five.iter().map(String::as_str).collect();
    let seen = queued(&client, &ids).await;
    assert_eq!(seen.len(), 5);
    for q in seen.values() {
        assert_eq!(q.players_missing, Some(1), "{q:?}");
        assert_eq!(q.estimated_wait_s, None, "no match can form yet: {q:?}");
    }

    // The sixth player completes a match: everyone reads an estimate.
    solo(&client, "p5", 1500.0, "1").await;
    d.step("q").await;
    let seen = queued(&client, &[ids.as_slice(), &["p5"]].concat()).await;
    assert_eq!(seen.len(), 6);
    for q in seen.values() {
        assert_eq!(q.players_missing, Some(0), "{q:?}");
        assert!(q.estimated_wait_s.is_some(), "{q:?}");
    }
}

#[tokio::test]
async fn a_player_the_last_round_found_nobody_to_play_with_reads_no_estimate() {
    let mut d = Daemon::start(CONFIG, "a").await;
    let (_, client) = client_login(&d.tdb, 2).await;
    first_round(&mut d, &client).await;

    // The only player of build 2 is left over by the next round ...
    for p in names("b", 6) {
        solo(&client, &p, 1500.0, "1").await;
    }
    solo(&client, "loner", 1500.0, "2").await;
    let report = d.round_after("q", EVERY).await;
    assert_eq!(report.matched, 6, "{report:?}");
    // ... and stays alone while a match of build 1 waits beside it.
    for p in names("c", 6) {
        solo(&client, &p, 1500.0, "1").await;
    }
    d.step("q").await;
    let seen = queued(&client, &["loner", "c0"]).await;
    let loner = &seen["loner"];
    assert_eq!(loner.players_missing, Some(0), "{loner:?}");
    assert_eq!(loner.left_over.as_deref(), Some("filtered"), "{loner:?}");
    assert!(loner.reason.is_some(), "the reason says why: {loner:?}");
    assert_eq!(loner.estimated_wait_s, None, "{loner:?}");
    assert!(seen["c0"].estimated_wait_s.is_some(), "{:?}", seen["c0"]);
}

#[tokio::test]
async fn a_party_reads_its_slowest_members_estimate_scaled_as_learned() {
    let mut d = Daemon::start(CONFIG, "a").await;
    let (_, client) = client_login(&d.tdb, 2).await;
    let (other_name, other) = client_login(&d.tdb, 2).await;
    first_round(&mut d, &client).await;
    // A model as a leader writes it: in eu, players below 1600 are placed by the next
    // round, players above wait 3 more; elsewhere one more. Rounds 20 s apart; the other
    // login's players were learned to wait 2.5 times the model, the logins' median is
    // 1.5.
    let model = json!({
        "round_interval_s": 20.0,
        "scale": 1.5,
        "scales": { other_name.as_str(): 2.5 },
        "regions": {
            "*": {"edges": [1600.0], "rounds": [1.0, 1.0]},
            "eu": {"edges": [1600.0], "rounds": [0.0, 3.0]},
        },
    });
    sqlx::query("UPDATE queue_state SET wait_model = $1 WHERE queue = 'q'")
        .bind(&model)
        .execute(d.db())
        .await
        .unwrap();
    enqueue_party(&client, "q", "duo")
        .member_json(
            json!({"player_id": "low", "skill": 1400, "latencies": {"eu": 20},
                            "attributes": {"build": "1"}}),
        )
        .member_json(
            json!({"player_id": "high", "skill": 1800, "latencies": {"eu": 20},
                            "attributes": {"build": "1"}}),
        )
        .await;
    for p in names("s", 3) {
        solo(&client, &p, 1400.0, "1").await;
    }
    solo(&other, "o-high", 1800.0, "1").await;
    d.step("q").await;
    let seen = queued(&client, &["low", "high", "s0"]).await;
    let theirs = queued(&other, &["o-high"]).await;
    // estimated - countdown = the rounds after the next: 20 s x 1.5 x rounds.
    let after = |p: &str| {
        let q = &seen[p];
        q.estimated_wait_s.expect("an estimate") - q.seconds_to_next_round.expect("a countdown")
    };
    assert_eq!(
        after("s0"),
        0,
        "a solo player below 1600 in eu: {:?}",
        seen["s0"]
    );
    assert_eq!(
        after("high"),
        90,
        "20 s x 1.5 x 3 rounds: {:?}",
        seen["high"]
    );
    assert_eq!(after("low"), 90, "the party waits for its slowest member");
    // The other login's player reads its login's own scale: 20 s x 2.5 x 3 rounds.
    let o = &theirs["o-high"];
    assert_eq!(
        o.estimated_wait_s.expect("an estimate") - o.seconds_to_next_round.expect("a countdown"),
        150,
        "{o:?}"
    );
}

#[tokio::test]
async fn the_matched_players_estimates_are_compared_with_their_waits_in_the_report() {
    let mut d = Daemon::start(CONFIG, "a").await;
    let (_, client) = client_login(&d.tdb, 2).await;
    let from = Utc::now() - chrono::Duration::minutes(1);
    first_round(&mut d, &client).await;
    // Entered after the model: their estimates are followed up.
    for p in names("n", 12) {
        solo(&client, &p, 1500.0, "1").await;
    }
    let report = d.round_after("q", EVERY).await;
    assert_eq!(report.matched, 12, "{report:?}");

    let stored: Vec<(i64, serde_json::Value)> =
        sqlx::query_as("SELECT round_id, wait_estimates FROM rounds ORDER BY round_id")
            .fetch_all(d.db())
            .await
            .unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!(
        stored[0].1,
        json!({}),
        "the first round's players read no estimate"
    );
    let followed = &stored[1].1;
    assert_eq!(followed["players"], 12, "{followed}");
    for key in ["mean_abs_error_s", "mean_error_s", "within_share"] {
        assert!(followed[key].is_number(), "{key} in {followed}");
    }

    let window = matchmaker::db::report::ReportWindow {
        queue: None,
        from,
        to: Utc::now() + chrono::Duration::hours(2),
    };
    let input = matchmaker::db::report::read_report(d.db(), &window, Utc::now())
        .await
        .unwrap();
    let queues = matchmaker::report::queue_reports(&input);
    let estimates = queues[0]
        .summary
        .wait_estimates
        .expect("the report's figures");
    assert_eq!(estimates.players, 12);
    assert_eq!(
        Some(estimates.mean_abs_error_s),
        followed["mean_abs_error_s"].as_f64()
    );
    let page = matchmaker::report::render_html(&input).unwrap();
    assert!(
        page.contains("<h2>Wait estimates</h2>")
            && page.contains("data-field=\"estimate_abs_error_s\""),
        "the page shows the estimates' error"
    );
}
