//! docs/client-contract.sql is the whole client API: every statement in it runs as a fresh
//! client login (a member of matchmaker_client and nothing else), with the file's own
//! example values, and answers what the file says; after a round the client reads its
//! match there.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::SubsecRound;
use matchmaker::config::Config;
use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::round::RoundRunner;
use matchmaker::daemon::worker::{QueueWorker, StepOutcome};
use serde_json::{Value, json};
use sqlx::PgExecutor;

use crate::support::*;

/// One `-- name:` section of the file.
#[derive(Debug, Clone)]
pub struct Statement {
    pub name: String,
    pub sql: String,
    /// The `-- example:` values, in parameter order.
    pub example: Vec<String>,
}

impl Statement {
    /// Its example values, as parameters.
    pub fn example(&self) -> Vec<&str> {
        self.example.iter().map(String::as_str).collect()
    }
}

/// name -> statement, from docs/client-contract.sql.
pub fn contract_statements() -> BTreeMap<String, Statement> {
    let text =
        std::fs::read_to_string("docs/client-contract.sql").expect("docs/client-contract.sql");
    let mut statements = BTreeMap::new();
    let mut current: Option<Statement> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("-- name: ") {
            if let Some(s) = current.take() {
                statements.insert(s.name.clone(), s);
            }
            current = Some(Statement {
                name: name.trim().to_string(),
                sql: String::new(),
                example: Vec::new(),
            });
        } else if let Some(s) = current.as_mut() {
            if let Some(example) = line.strip_prefix("-- example: ") {
                s.example = example.split(" | ").map(str::to_string).collect();
            } else if !line.starts_with("--") {
                s.sql.push_str(line);
                s.sql.push('\n');
            }
        }
    }
    if let Some(s) = current {
        statements.insert(s.name.clone(), s);
    }
    statements
}

/// The highest `$n` in `sql`.
fn parameter_count(sql: &str) -> usize {
    let mut max = 0;
    let bytes = sql.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'$' {
            let digits: String = sql[i + 1..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(n) = digits.parse::<usize>() {
                max = max.max(n);
            }
        }
    }
    max
}

/// Run a statement of the file with text parameters (the statements cast them); rows as
/// JSON objects. Statements that return no rows (LISTEN) give an empty list.
pub async fn run<'e>(
    db: impl PgExecutor<'e>,
    statement: &Statement,
    params: &[&str],
) -> Result<Vec<Value>, sqlx::Error> {
    let body = statement.sql.trim().trim_end_matches(';');
    assert_eq!(
        parameter_count(body),
        params.len(),
        "{}: parameters for every $n",
        statement.name
    );
    if !body.starts_with("SELECT") {
        sqlx::query(sqlx::AssertSqlSafe(body.to_string()))
            .execute(db)
            .await?;
        return Ok(Vec::new());
    }
    let wrapped = format!("SELECT to_jsonb(t) FROM ({body}) t");
    let mut q = sqlx::query_scalar::<_, Value>(sqlx::AssertSqlSafe(wrapped));
    for p in params {
        q = q.bind(*p);
    }
    q.fetch_all(db).await
}

/// Run it and expect success.
async fn ok<'e>(db: impl PgExecutor<'e>, statement: &Statement, params: &[&str]) -> Vec<Value> {
    run(db, statement, params)
        .await
        .unwrap_or_else(|e| panic!("{} {params:?}: {e}", statement.name))
}

/// Queue `q` (2 teams of 3, regions eu and us, a round every second) on a manual clock at
/// the wall clock's time (so the countdown the database computes is the worker's).
fn contract_queue(db: &sqlx::PgPool) -> (ManualClock, QueueWorker) {
    let config = Config::from_toml_str(
        "[queues.q]\n[queues.q.round]\nevery = \"1s\"\nbudget = \"50ms\"\nseed = 3\n\
         [queues.q.tickets]\nregions = [\"eu\", \"us\"]\n",
    )
    .expect("valid config");
    let clock = ManualClock::new(chrono::Utc::now().trunc_subsecs(6));
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let worker = QueueWorker::new(
        "q",
        "contract",
        runner,
        Arc::new(config.queues["q"].clone()),
        secs(15),
    );
    (clock, worker)
}

fn by_player(rows: &[Value]) -> BTreeMap<String, Value> {
    rows.iter()
        .map(|r| (r["player_id"].as_str().unwrap().to_string(), r.clone()))
        .collect()
}

#[tokio::test]
async fn every_client_statement_runs_as_a_client_login_and_finds_the_match() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let statements = contract_statements();
    assert_eq!(
        statements.keys().collect::<Vec<_>>(),
        [
            "accept_match",
            "cancel",
            "decline_match",
            "enqueue",
            "enqueue_party",
            "keep_alive",
            "listen_queue",
            "listen_rounds",
            "match_roster",
            "my_match",
            "player_status",
            "queue_catalog",
            "queue_channel",
        ],
        "the file's statements (a new one needs a check here)"
    );
    for s in statements.values() {
        assert_eq!(
            s.example.len(),
            parameter_count(&s.sql),
            "{}: its example gives every parameter",
            s.name
        );
    }
    let st = |name: &str| &statements[name];

    // The daemon publishes the queue (and its countdown) on its first look.
    let (clock, mut worker) = contract_queue(db);
    let first = worker.step().await.unwrap();
    assert!(
        matches!(first, StepOutcome::Waiting { .. }),
        "no players yet: {first:?}"
    );
    let (login, client) = client_login(&tdb, 2).await;

    // LISTEN on a connection of the client's own.
    let mut listener = sqlx::postgres::PgListener::connect_with(&client)
        .await
        .unwrap();
    ok(&mut listener, st("listen_rounds"), &[]).await;
    let channel = ok(&client, st("queue_channel"), &st("queue_channel").example()).await;
    let channel = channel[0]["channel"].as_str().unwrap().to_string();
    assert!(channel.starts_with("matchmaker:"), "{channel}");
    let listen_queue = Statement {
        sql: st("listen_queue").sql.replace("{channel}", &channel),
        ..st("listen_queue").clone()
    };
    ok(&mut listener, &listen_queue, &[]).await;

    let catalog = ok(&client, st("queue_catalog"), &[]).await;
    assert_eq!(catalog.len(), 1, "{catalog:?}");
    let q = &catalog[0];
    assert_eq!(q["queue"], "q");
    assert_eq!(
        (q["teams"].as_i64(), q["team_size"].as_i64()),
        (Some(2), Some(3))
    );
    assert_eq!(q["network"], "peer_to_peer");
    assert_eq!(q["regions"], json!(["eu", "us"]));
    assert_eq!(q["roles"], json!([]));
    assert_eq!(q["max_party_size"], 3);
    assert_eq!(q["formats"], json!(["3v3"]), "a fixed queue: one format");
    assert_eq!(q["min_players_per_match"], 6);
    assert_eq!(q["ticket_ttl_s"].as_f64(), Some(300.0));
    assert_eq!(q["keep_alive_every_s"].as_f64(), Some(100.0));
    assert_eq!(q["waiting_for"], "schedule");
    assert_eq!(q["pool_size"], 0);

    // The story of the examples.
    let alice = ok(&client, st("enqueue"), &st("enqueue").example()).await;
    assert!(alice[0]["entry_id"].as_i64().is_some(), "{alice:?}");
    let crew = ok(&client, st("enqueue_party"), &st("enqueue_party").example()).await;
    assert_eq!(
        crew.iter()
            .map(|r| r["player_id"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["bob", "carol"]
    );
    // Alice and bob named; carol comes along with her party.
    let refreshed = ok(&client, st("keep_alive"), &st("keep_alive").example()).await;
    assert_eq!(refreshed[0]["refreshed"], 3);

    let status = by_player(&ok(&client, st("player_status"), &st("player_status").example()).await);
    assert_eq!(status.len(), 3, "{status:?}");
    for (player, row) in &status {
        assert_eq!(row["status"], "queued", "{player}: {row}");
        assert_eq!(row["waiting_for"], "schedule", "{player}: {row}");
        let countdown = row["seconds_to_next_round"].as_i64().unwrap();
        assert!((0..=1).contains(&countdown), "{player}: {row}");
        assert!(row["reason"].is_null(), "{player}: {row}");
        assert!(row["expires_at"].is_string(), "{player}: {row}");
    }
    assert_eq!(status["bob"]["party_id"], "crew");

    // Alice cancels (1 entry), reads why, and queues again.
    let cancelled = ok(&client, st("cancel"), &st("cancel").example()).await;
    assert_eq!(cancelled[0]["cancelled"], 1);
    let status = by_player(&ok(&client, st("player_status"), &st("player_status").example()).await);
    assert_eq!(status["alice"]["status"], "cancelled");
    assert_eq!(status["alice"]["reason"], "cancelled by the client");
    let again = ok(&client, st("enqueue"), &st("enqueue").example()).await;
    assert_ne!(again[0]["entry_id"], alice[0]["entry_id"]);

    // Three more solos through the same statement: one match's worth of players.
    for (i, name) in ["dave", "erin", "frank"].into_iter().enumerate() {
        let skill = (1450 + 50 * i).to_string();
        ok(
            &client,
            st("enqueue"),
            &["q", name, &skill, r#"{"eu": 35}"#, "{}", "{}", "0.5", "100"],
        )
        .await;
    }

    // The round: the schedule's tick.
    clock.advance(secs(1));
    let StepOutcome::Ran(report) = worker.step().await.unwrap() else {
        panic!("the tick runs a round");
    };
    assert_eq!((report.matches, report.matched), (1, 6), "{report:?}");

    // The queue's channel first (the match, then the countdown after the round), then
    // the round's.
    let mut on_queue = Vec::new();
    let payload: Value = loop {
        let note = tokio::time::timeout(secs(5), listener.recv())
            .await
            .expect("a notification within 5 s")
            .unwrap();
        let payload: Value = serde_json::from_str(note.payload()).unwrap();
        match note.channel() {
            "matchmaker_round" => break payload,
            c if c == channel => on_queue.push(payload),
            other => panic!("a notification on {other}"),
        }
    };
    let events: Vec<&str> = on_queue
        .iter()
        .map(|n| n["event"].as_str().unwrap())
        .collect();
    // The round shows itself running, then its match; the login has nobody waiting
    // after it, so no countdown follows.
    assert_eq!(events, ["countdown", "match"], "{on_queue:?}");
    assert_eq!(on_queue[0]["waiting_for"], "round");
    assert_eq!(on_queue[1]["round_id"], report.round_id);
    assert_eq!(on_queue[1]["players"].as_array().unwrap().len(), 6);
    assert_eq!(payload["queue"], "q");
    assert_eq!(payload["round_id"], report.round_id);
    assert_eq!(payload["matched"], 6);

    let everyone = ["alice", "bob", "carol", "dave", "erin", "frank"].join(",");
    let status = by_player(&ok(&client, st("player_status"), &[&format!("{{{everyone}}}")]).await);
    assert_eq!(status.len(), 6);
    let match_id = status["alice"]["match_id"].as_i64().expect("alice's match");
    for (player, row) in &status {
        assert_eq!(row["status"], "matched", "{player}: {row}");
        assert_eq!(row["match_id"], match_id, "{player}: {row}");
        assert!(row["team"].as_i64().is_some(), "{player}: {row}");
        assert!(row["seconds_to_next_round"].is_null(), "{player}: {row}");
        assert!(row["reason"].is_null(), "{player}: {row}");
    }
    assert_eq!(
        status["bob"]["team"], status["carol"]["team"],
        "a party plays on one team"
    );
    // Peer-to-peer: any hosts the match names are among its players.
    let hosts = status["alice"]["hosts"].as_array().expect("hosts").clone();
    assert!(
        hosts
            .iter()
            .all(|h| status.contains_key(h.as_str().unwrap()))
    );

    let mine = ok(&client, st("my_match"), &st("my_match").example()).await;
    assert_eq!(mine.len(), 1, "{mine:?}");
    let mine = &mine[0];
    assert_eq!(mine["match_id"], match_id);
    assert_eq!(mine["queue"], "q");
    let teammates = mine["teammates"].as_array().unwrap();
    let opponents = mine["opponents"].as_array().unwrap();
    assert_eq!((teammates.len(), opponents.len()), (2, 3), "{mine}");
    let mut seen: Vec<&str> = teammates
        .iter()
        .chain(opponents)
        .map(|p| p.as_str().unwrap())
        .chain(["alice"])
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, ["alice", "bob", "carol", "dave", "erin", "frank"]);
    assert!(mine["waited_seconds"].as_f64().is_some(), "{mine}");

    let bob = ok(&client, st("my_match"), &["bob"]).await;
    assert!(
        bob[0]["teammates"]
            .as_array()
            .unwrap()
            .contains(&json!("carol")),
        "bob's teammates include his party: {bob:?}"
    );

    // This flow's queue has no ready check: both answers are refused, in class 22, and
    // the match stays final.
    for name in ["accept_match", "decline_match"] {
        let err = run(&client, st(name), &["alice", &match_id.to_string()])
            .await
            .expect_err(name);
        let (code, message) = db_error(&err);
        assert_eq!(code, "22023", "{name}: {message}");
        assert_eq!(
            message,
            format!("match_id = {match_id}: has no ready check: the match is final"),
            "{name}"
        );
    }
    let roster = ok(&client, st("match_roster"), &[&match_id.to_string()]).await;
    assert_eq!(roster.len(), 6, "{roster:?}");
    let teams: Vec<i64> = roster.iter().map(|r| r["team"].as_i64().unwrap()).collect();
    assert_eq!(teams, [0, 0, 0, 1, 1, 1], "ordered by team: {roster:?}");
    let roster = by_player(&roster);
    assert_eq!(roster["carol"]["party_id"], "crew");
    assert_eq!(roster["carol"]["skill"].as_f64(), Some(1550.0));
    assert_eq!(roster["alice"]["skill"].as_f64(), Some(1500.0));

    // The example roster (match 1) is this very match in a fresh database.
    assert_eq!(match_id, 1);
    assert_eq!(
        ok(&client, st("match_roster"), &st("match_roster").example())
            .await
            .len(),
        6
    );

    // Cancel after the match: nothing left to cancel, and the match stands.
    assert_eq!(
        ok(&client, st("cancel"), &["alice", "q"]).await[0]["cancelled"],
        0
    );
    // keep_alive after the match: nothing waiting.
    assert_eq!(
        ok(&client, st("keep_alive"), &["{alice,bob,carol}", "q"]).await[0]["refreshed"],
        0
    );

    // The entries are the login's.
    let owners: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT owner FROM queue_entries ORDER BY 1")
            .fetch_all(db)
            .await
            .unwrap();
    assert_eq!(owners, [login]);
    assert_contract_invariants(db).await;
}

#[test]
fn the_contract_file_reads_as_documented() {
    let text = std::fs::read_to_string("docs/client-contract.sql").unwrap();
    let statements = contract_statements();
    // Every section explains itself before its SQL.
    for name in statements.keys() {
        let at = text.find(&format!("-- name: {name}\n")).unwrap();
        let after = &text[at..];
        let comment_lines = after
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("--"))
            .count();
        assert!(comment_lines >= 2, "{name}: explained in comments");
    }
    // Named arguments for the functions, so a reader sees which value is which.
    for (name, function) in [
        ("enqueue", "enqueue(queue => $1"),
        ("enqueue_party", "enqueue_party(queue => $1"),
        ("keep_alive", "keep_alive(player_ids => $1"),
        ("cancel", "cancel(player_id => $1"),
    ] {
        assert!(
            statements[name].sql.contains(function),
            "{name}: {}",
            statements[name].sql
        );
    }
}
