//! Flexible formats end to end: the daemon running on a real
//! PostgreSQL, clients enqueueing through the functions as a client login. A 5v5 queue
//! that allows 5v4 and 4v4 forms a 5v4 from nine players only when the score says so
//! (the same nine players wait in a queue whose minimum no smaller match reaches), ten
//! players make a 5v5, the client views show the formats and the match, and the audit
//! holds every match to the queue's published formats.

use std::time::Duration;

use matchmaker::config::Config;
use matchmaker_testkit::audit::{self, Expected};
use sqlx::PgPool;

use crate::support::*;

/// Three queues of the same 5v5 format with 5v4 and 4v4 allowed, that differ only in
/// `short_match_min_score` and in the pool size that starts a round early. Polling and
/// the schedule every hour: a round here is started by the enqueue NOTIFY at the target.
/// (`target_pool = 9` is below a full match, 10: the `min_pool` default, one match of
/// the smallest format, allows it.)
fn config() -> String {
    let queue = |name: &str, min_score: f64, target: usize| {
        format!(
            "[queues.{name}]\nteams = 2\nteam_size = 5\nnetwork = \"dedicated\"\n\
             [queues.{name}.alliance]\nplayer_min_number = 4\nshort_match_min_score = {min_score:?}\n\
             [queues.{name}.weights]\nmember_count_difference = 1.0\n\
             [queues.{name}.round]\nevery = \"1h\"\nbudget = \"50ms\"\ntarget_pool = {target}\n\
             [queues.{name}.tickets]\nregions = [\"eu\"]\n"
        )
    };
    format!(
        "default_queue = \"ten\"\n\
         [daemon]\npoll_interval = \"1h\"\nlease_ttl = \"3s\"\nlease_renew = \"1s\"\n{}{}{}",
        // Ten players: a full match.
        queue("ten", 0.5, 10),
        // Nine players, a minimum a 5v4 of close skills reaches: waiting is worse.
        queue("nine", 0.5, 9),
        // The same nine, a minimum no match of unequal skills reaches: they wait.
        queue("nine_strict", 1.0, 9),
    )
}

/// Time for a NOTIFY to become a round (debounce 250 ms, solve 50 ms) on a loaded host.
const PROMPTLY: Duration = Duration::from_secs(10);

async fn wait_for(db: &PgPool, sql: &'static str, want: i64) {
    wait_for_count(db, sql, want, PROMPTLY).await;
}

/// `n` players `{prefix}{i}` of skills 1500, 1510, ... enqueued one call each.
async fn enqueue_players(client: &PgPool, queue: &str, prefix: &str, n: usize) -> Vec<i64> {
    let mut ids = Vec::new();
    for i in 0..n {
        let skill = 1500.0 + 10.0 * i as f64;
        let id = enqueue(client, queue, &format!("{prefix}{i}"), skill)
            .latency("eu", 30.0)
            .await;
        ids.push(id);
    }
    ids
}

/// (queue, team sizes largest first, score, member_count_difference) of every match.
async fn matches(db: &PgPool) -> Vec<(String, String, f64, Option<f64>)> {
    sqlx::query_as(
        "SELECT m.queue,
                (SELECT string_agg(n::text, 'v' ORDER BY n DESC)
                   FROM (SELECT count(*) AS n FROM match_players mp
                          WHERE mp.match_id = m.match_id GROUP BY mp.team) t),
                m.score, (m.factors ->> 'member_count_difference')::float8
           FROM matches m ORDER BY m.queue",
    )
    .fetch_all(db)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flexible_queue_forms_a_5v4_only_when_the_score_says_so() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let config = Config::from_toml_str(&config()).expect("test config is valid");
    assert_eq!(
        config.queues["nine"].min_pool(),
        8,
        "min_pool defaults to the smallest format (4v4)"
    );
    let daemon = spawn_daemon(tdb.new_pool(6).await, config, "formats-a");
    wait_for(db, "SELECT count(*) FROM queue_state", 3).await;
    // A NOTIFY sent before the daemon LISTENs is lost.
    wait_for(
        db,
        "SELECT count(*) FROM pg_stat_activity
          WHERE datname = current_database() AND query = 'LISTEN \"matchmaker_enqueue\"'",
        1,
    )
    .await;

    let (_, client) = client_login(&tdb, 2).await;

    // The client reads the ranges in the catalog.
    type CatalogRow = (String, i32, i32, i32, i32, Vec<String>, i32, i32);
    let catalog: Vec<CatalogRow> = sqlx::query_as(
        "SELECT queue, teams, team_size, min_teams, min_team_size, formats,
                min_players_per_match, max_party_size
           FROM queue_catalog ORDER BY queue",
    )
    .fetch_all(&client)
    .await
    .unwrap();
    assert_eq!(catalog.len(), 3, "{catalog:?}");
    for (queue, teams, size, min_teams, min_size, formats, min_players, party) in &catalog {
        assert_eq!(
            (*teams, *size, *min_teams, *min_size, *min_players, *party),
            (2, 5, 2, 4, 8, 5),
            "{queue}"
        );
        assert_eq!(formats, &["5v5", "5v4", "4v4"], "{queue}");
    }
    // A party plays on one team: at most the largest team (5), whatever the formats.
    let members: Vec<serde_json::Value> = (0..6)
        .map(|i| serde_json::json!({"player_id": format!("p{i}"), "skill": 1500}))
        .collect();
    let err = sqlx::query("SELECT * FROM enqueue_party('nine', 'six', $1)")
        .bind(serde_json::Value::Array(members))
        .execute(&client)
        .await
        .unwrap_err();
    let (state, message) = db_error(&err);
    assert_eq!(state, "22023", "{message}");
    assert!(message.contains("2 to 5 members"), "{message}");

    let mut entries = Vec::new();
    entries.extend(enqueue_players(&client, "nine", "n", 9).await);
    entries.extend(enqueue_players(&client, "nine_strict", "s", 9).await);
    entries.extend(enqueue_players(&client, "ten", "t", 10).await);
    wait_for(
        db,
        "SELECT count(*) FROM rounds WHERE queue IN ('nine', 'nine_strict', 'ten')",
        3,
    )
    .await;
    daemon.stop().await;

    let formed = matches(db).await;
    assert_eq!(formed.len(), 2, "one match in nine, one in ten: {formed:?}");
    let (_, format, score, mcd) = &formed[0];
    assert_eq!(
        (formed[0].0.as_str(), format.as_str(), *mcd),
        ("nine", "5v4", Some(0.8)),
        "nine players of close skill: a 5v4 (waiting is worse) {formed:?}"
    );
    assert!(
        (0.5..1.0).contains(score),
        "the 5v4 reached the queue's minimum, and falls short of 1: {score}"
    );
    assert_eq!(
        (formed[1].0.as_str(), formed[1].1.as_str(), formed[1].3),
        ("ten", "5v5", Some(1.0)),
        "ten players: a full match, no 5v4 beside a waiting player {formed:?}"
    );

    // The same nine players wait where no smaller match reaches the minimum, and read why.
    let waiting: Vec<(String, String, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT player_id, status, left_over, reason FROM player_status
          WHERE queue = 'nine_strict' ORDER BY player_id",
    )
    .fetch_all(&client)
    .await
    .unwrap();
    assert_eq!(waiting.len(), 9);
    for (player, status, left_over, reason) in &waiting {
        assert_eq!(status, "queued", "{player}");
        assert_eq!(left_over.as_deref(), Some("no_valid_match"), "{player}");
        let reason = reason.as_deref().unwrap_or_default();
        assert!(
            reason.contains("short_match_min_score (1)") && reason.contains("5v4, 4v4"),
            "{player}: {reason}"
        );
    }

    // The client sees its 5v4: four teammates and four opponents, or three and five.
    let seen: Vec<(String, i32, i32, i32)> = sqlx::query_as(
        "SELECT player_id, team, cardinality(teammates), cardinality(opponents)
           FROM match_details WHERE queue = 'nine' ORDER BY player_id",
    )
    .fetch_all(&client)
    .await
    .unwrap();
    assert_eq!(seen.len(), 9, "{seen:?}");
    for (player, _, mates, opponents) in &seen {
        assert!(
            matches!((mates, opponents), (4, 4) | (3, 5)),
            "{player}: {mates} teammates, {opponents} opponents"
        );
    }
    assert_eq!(
        seen.iter().filter(|s| s.2 == 4).count(),
        5,
        "five players on the team of five: {seen:?}"
    );
    assert_contract_invariants(db).await;

    // The audit holds both matches to the published formats.
    let clean = audit_clean(db, &entries).await;
    assert_eq!((clean.matches, clean.matched, clean.queued), (2, 19, 9));

    // ...and still catches a wrong one. A player moved from the team of four to the
    // team of five: 6v3.
    let expected = Expected {
        entries: &entries,
        cancelled_players: &[],
    };
    let (match_id, player): (i64, String) = sqlx::query_as(
        "SELECT mp.match_id, mp.player_id FROM match_players mp
          WHERE mp.queue = 'nine'
            AND (SELECT count(*) FROM match_players o
                  WHERE o.match_id = mp.match_id AND o.team = mp.team) = 4
          ORDER BY mp.player_id LIMIT 1",
    )
    .fetch_one(db)
    .await
    .unwrap();
    let set_team = |team: i32| {
        sqlx::query("UPDATE match_players SET team = $3 WHERE match_id = $1 AND player_id = $2")
            .bind(match_id)
            .bind(&player)
            .bind(team)
    };
    let four_team: i32 =
        sqlx::query_scalar("SELECT team FROM match_players WHERE match_id = $1 AND player_id = $2")
            .bind(match_id)
            .bind(&player)
            .fetch_one(db)
            .await
            .unwrap();
    let wrong = |what: &'static str| async move {
        let a = audit::audit(db, expected).await.unwrap();
        assert_eq!(a.short_matches, 1, "{what}: {a}");
        assert_eq!(a.violation_count(), 1, "{what}: {a}");
    };
    set_team(1 - four_team).execute(db).await.unwrap();
    wrong("6v3").await;
    // A third team in a queue of two: 5v3v1.
    set_team(2).execute(db).await.unwrap();
    wrong("5v3v1").await;
    // Team numbers with a gap: teams 0 and 2 (or 1 and 2) of 5 and 4.
    set_team(four_team).execute(db).await.unwrap();
    sqlx::query("UPDATE match_players SET team = 2 WHERE match_id = $1 AND team = $2")
        .bind(match_id)
        .bind(1 - four_team)
        .execute(db)
        .await
        .unwrap();
    wrong("teams numbered with a gap").await;
    sqlx::query("UPDATE match_players SET team = $2 WHERE match_id = $1 AND team = 2")
        .bind(match_id)
        .bind(1 - four_team)
        .execute(db)
        .await
        .unwrap();
    assert_eq!(
        audit::audit(db, expected).await.unwrap().violation_count(),
        0,
        "restored"
    );
    // The same 5v4 in a queue of one format (5v5) is a wrong-size match.
    sqlx::query("UPDATE queues SET min_team_size = 5, formats = '{5v5}' WHERE queue = 'nine'")
        .execute(db)
        .await
        .unwrap();
    wrong("5v4 in a fixed 5v5 queue").await;
}
