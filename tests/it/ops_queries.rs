//! Every query of docs/ops-queries.sql runs against a database with real rounds and gives
//! the answer it promises.

use std::collections::BTreeMap;
use std::sync::Arc;

use matchmaker::config::Config;
use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::round::RoundRunner;
use matchmaker::db::{self, RoundTrigger};
use matchmaker_optimizer::{MatchOutcome, RoundOutcome};
use serde_json::Value;

use crate::support::*;

/// name -> SQL, from the `-- name:` sections of the file.
fn ops_queries() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string("docs/ops-queries.sql").expect("docs/ops-queries.sql");
    let mut queries = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("-- name: ") {
            if let Some((n, q)) = current.take() {
                queries.insert(n, q);
            }
            current = Some((name.trim().to_string(), String::new()));
        } else if let Some((_, q)) = current.as_mut() {
            q.push_str(line);
            q.push('\n');
        }
    }
    if let Some((n, q)) = current {
        queries.insert(n, q);
    }
    queries
}

/// Run a query with text parameters; each row as JSON (numeric columns included).
async fn rows(db: &sqlx::PgPool, sql: &str, params: &[&str]) -> Vec<Value> {
    let body = sql.trim().trim_end_matches(';');
    // Parameters are passed as text and cast by the query where needed; $1 compared to
    // a text column needs no cast, an interval parameter is cast in the query.
    let wrapped = format!("SELECT to_jsonb(t) FROM ({body}) t");
    let mut q = sqlx::query_scalar::<_, Value>(sqlx::AssertSqlSafe(wrapped));
    for p in params {
        q = q.bind(*p);
    }
    q.fetch_all(db)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{body}"))
}

#[tokio::test]
async fn every_ops_query_runs_and_answers() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let queries = ops_queries();
    assert_eq!(
        queries.keys().collect::<Vec<_>>(),
        [
            "last_rounds",
            "opponent_repeats",
            "player_recent_matches",
            "wait_percentiles",
            "why_match_scored_low"
        ]
    );

    // Three rounds of the same 12 players (re-queueing after each match).
    let start = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 6);
    let clock = ManualClock::new(start);
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let lease = db::acquire_lease(db, "q", "ops", secs(3600), Some(start))
        .await
        .unwrap()
        .unwrap();
    let config = queue_config("");
    for round in 0..3 {
        let at = start + chrono::Duration::minutes(2 * round);
        clock.set(at);
        enqueue_n(db, "q", "p", 12, at).await;
        clock.set(at + chrono::Duration::seconds(30));
        let report = runner
            .run("q", config.clone(), RoundTrigger::Schedule, &lease)
            .await
            .unwrap();
        assert_eq!(report.matched, 12);
    }

    // A round with known factor scores: ping is what hurt this match.
    clock.set(start + chrono::Duration::minutes(10));
    enqueue_n(db, "q", "f", 6, start + chrono::Duration::minutes(9)).await;
    let snapshot = db::snapshot_pool(db, "q", 100, 1).await.unwrap();
    let model = Config::embedded_default().queues["ranked_3v3"].clone();
    let outcome = RoundOutcome {
        matches: vec![MatchOutcome {
            teams: vec![
                vec!["f0".into(), "f1".into(), "f2".into()],
                vec!["f3".into(), "f4".into(), "f5".into()],
            ],
            score: 0.6,
            factors: [
                ("equal_teams".to_string(), 0.9),
                ("enemy_ping".to_string(), 0.2),
            ]
            .into_iter()
            .collect(),
            roles: None,
            region: None,
            hosts: Some(vec!["f0".into()]),
            host: Some("f0".into()),
            backup_host: None,
            relay: false,
            map: None,
            map_vetoed_by: 0,
        }],
        unmatched: vec![],
        rejected: vec![],
        score: 0.6,
        stats: hand_written_stats(),
    };
    let now = start + chrono::Duration::minutes(10);
    let committed = commit_hand_written(db, &snapshot, &lease, now, &model, &outcome, None).await;

    let last = rows(db, &queries["last_rounds"], &["q"]).await;
    assert_eq!(last.len(), 4);
    assert_eq!(last[0]["round_id"], committed.round_id);
    assert_eq!(last[0]["trigger"], "manual");
    assert_eq!(last[1]["matched"], 12);

    let round_id = committed.round_id.to_string();
    let why = rows(db, &queries["why_match_scored_low"], &[round_id.as_str()]).await;
    assert_eq!(why.len(), 2);
    assert_eq!(
        why[0]["factor"], "enemy_ping",
        "the biggest cost comes first: {why:?}"
    );
    assert_eq!(why[0]["weight"], 3.0);
    // enemy_ping: 3 / (3 + 4) * (1 - 0.2) = 0.343
    assert_eq!(why[0]["cost"].as_f64(), Some(0.343));

    let recent = rows(db, &queries["player_recent_matches"], &["q", "p11"]).await;
    assert_eq!(recent.len(), 3);
    for m in &recent {
        assert_eq!(m["teammates"].as_array().unwrap().len(), 2);
        assert_eq!(m["opponents"].as_array().unwrap().len(), 3);
    }
    assert_eq!(recent[0]["waited_s"].as_f64(), Some(30.0));

    let waits = rows(db, &queries["wait_percentiles"], &["1 day"]).await;
    assert_eq!(waits.len(), 1);
    assert_eq!(waits[0]["matched_players"], 42);
    assert_eq!(waits[0]["p50_s"].as_f64(), Some(30.0));
    assert_eq!(waits[0]["max_s"].as_f64(), Some(60.0));

    let repeats = rows(db, &queries["opponent_repeats"], &["q"]).await;
    assert_eq!(repeats.len(), 4);
    let by_round: BTreeMap<i64, &Value> = repeats
        .iter()
        .map(|r| (r["round_id"].as_i64().unwrap(), r))
        .collect();
    let ids: Vec<i64> = by_round.keys().copied().collect();
    // The first round has no history; the same 12 players met again in the next ones.
    assert_eq!(by_round[&ids[0]]["repeat_pct"].as_f64(), Some(0.0));
    let second = by_round[&ids[1]];
    assert_eq!(second["opponent_pairs"], 36);
    let again =
        second["opponents_again"].as_i64().unwrap() + second["teammates_before"].as_i64().unwrap();
    assert!(again > 0, "repeats are counted: {second}");
    // The synthetic round's players never played before.
    assert_eq!(by_round[&ids[3]]["repeat_pct"].as_f64(), Some(0.0));
}
