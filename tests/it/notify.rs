//! Per-match and countdown notifications on the queue's channel (`queue_channel`),
//! received as a client login; the payload limit with the largest match format; the
//! example client (`examples/client.rs`) against a running daemon.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use chrono::SubsecRound;
use matchmaker::config::Config;
use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::round::RoundRunner;
use matchmaker::daemon::worker::{QueueWorker, StepOutcome};
use serde_json::Value;
use sqlx::PgPool;
use sqlx::postgres::PgListener;

use crate::support::*;

/// PostgreSQL's payload limit with the default 8 kB block: shorter than 8000 bytes.
const MAX_PAYLOAD: usize = 7999;

/// The next notification within `within`, as (channel, JSON payload).
async fn next_note(listener: &mut PgListener, within: Duration) -> Option<(String, Value)> {
    let note = tokio::time::timeout(within, listener.recv()).await.ok()?;
    let note = note.expect("the listener's connection");
    assert!(
        note.payload().len() <= MAX_PAYLOAD,
        "payload of {} bytes",
        note.payload().len()
    );
    let payload = serde_json::from_str(note.payload())
        .unwrap_or_else(|e| panic!("payload is JSON ({e}): {}", note.payload()));
    Some((note.channel().to_string(), payload))
}

/// A login's channel: `matchmaker:` and 40 hex digits (within a channel name's 63 bytes).
fn is_login_channel(channel: &str) -> bool {
    channel.strip_prefix("matchmaker:").is_some_and(|h| {
        h.len() == 40
            && h.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    })
}

/// Every notification that arrives until none has come for `quiet`.
async fn drain(listener: &mut PgListener, quiet: Duration) -> Vec<(String, Value)> {
    let mut notes = Vec::new();
    while let Some(note) = next_note(listener, quiet).await {
        notes.push(note);
    }
    notes
}

/// A player in a match: team, party_id, role (JSON null when not set).
type Seat = (i64, Value, Value);

/// One match_players row: match, player, team, party, role.
type SeatRow = (i64, String, i32, Option<String>, Option<String>);

/// match_id -> player_id -> seat, from the database.
async fn rosters(db: &PgPool) -> BTreeMap<i64, BTreeMap<String, Seat>> {
    let rows: Vec<SeatRow> = sqlx::query_as(
        "SELECT match_id, player_id, team, party_id, role FROM match_players ORDER BY 1, 2",
    )
    .fetch_all(db)
    .await
    .unwrap();
    let mut out: BTreeMap<i64, BTreeMap<String, Seat>> = BTreeMap::new();
    for (m, p, team, party, role) in rows {
        out.entry(m)
            .or_default()
            .insert(p, (team.into(), party.into(), role.into()));
    }
    out
}

/// The players a match notification names, as the rosters above.
fn named_players(payload: &Value) -> BTreeMap<String, Seat> {
    payload["players"]
        .as_array()
        .unwrap_or_else(|| panic!("players: {payload}"))
        .iter()
        .map(|p| {
            (
                p["player_id"].as_str().unwrap().to_string(),
                (
                    p["team"].as_i64().unwrap(),
                    p.get("party_id").cloned().unwrap_or(Value::Null),
                    p.get("role").cloned().unwrap_or(Value::Null),
                ),
            )
        })
        .collect()
}

/// The countdown of a notification is the one queue_countdown shows (read right after).
async fn assert_countdown_as_the_view_shows_it(client: &PgPool, note: &Value) {
    let (at, seconds, waiting_for): (Option<String>, Option<i32>, String) = sqlx::query_as(
        "SELECT to_char(next_round_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),
                seconds_to_next_round, waiting_for
           FROM queue_countdown WHERE queue = 'q'",
    )
    .fetch_one(client)
    .await
    .unwrap();
    assert_eq!(note["queue"], "q");
    assert_eq!(note["next_round_at"], Value::from(at), "{note}");
    assert_eq!(note["waiting_for"], waiting_for.as_str(), "{note}");
    let (missing, latest, running): (i32, Option<String>, Option<String>) = sqlx::query_as(
        "SELECT players_missing,
                to_char(latest_round_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),
                to_char(round_started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')
           FROM queue_countdown WHERE queue = 'q'",
    )
    .fetch_one(client)
    .await
    .unwrap();
    assert_eq!(note["players_missing"], missing, "{note}");
    assert_eq!(note["latest_round_at"], Value::from(latest), "{note}");
    assert_eq!(note["round_started_at"], Value::from(running), "{note}");
    let (sent, now) = (
        note["seconds_to_next_round"].as_i64(),
        seconds.map(i64::from),
    );
    assert!(
        sent.zip(now).is_some_and(|(a, b)| (a - b).abs() <= 1) || sent == now,
        "{note}: {now:?} s now"
    );
}

fn q_worker(db: &PgPool, clock: &ManualClock, round: &str) -> QueueWorker {
    let config = Config::from_toml_str(&format!(
        "[queues.q]\n[queues.q.round]\nbudget = \"50ms\"\nseed = 5\n{round}\n"
    ))
    .expect("valid config");
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    QueueWorker::new(
        "q",
        "notify",
        runner,
        Arc::new(config.queues["q"].clone()),
        secs(15),
    )
}

#[tokio::test]
async fn each_match_and_each_countdown_move_is_notified_on_the_queue_channel() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let started = chrono::Utc::now().trunc_subsecs(6);
    let clock = ManualClock::new(started);
    let mut worker = q_worker(db, &clock, "every = \"10s\"");
    let (_, client) = client_login(&tdb, 2).await;

    // The client role may ask for its channel and LISTEN on it: a name of its own,
    // which neither the queue's name nor another login's name gives away.
    let channel: String = sqlx::query_scalar("SELECT queue_channel(queue => 'q')")
        .fetch_one(&client)
        .await
        .unwrap();
    assert!(is_login_channel(&channel), "{channel}");
    let (_, other) = client_login(&tdb, 1).await;
    let others: String = sqlx::query_scalar("SELECT queue_channel(queue => 'q')")
        .fetch_one(&other)
        .await
        .unwrap();
    assert!(is_login_channel(&others) && others != channel, "{others}");
    let mut listener = PgListener::connect_with(&client).await.unwrap();
    listener.listen(&channel).await.unwrap();

    // The leader's first look publishes the queue and its first countdown, which this
    // login does not hear: it has no player waiting in the queue (it reads
    // queue_countdown).
    assert!(matches!(
        worker.step().await.unwrap(),
        StepOutcome::Waiting { .. }
    ));
    let notes = drain(&mut listener, Duration::from_millis(500)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let first_due = (started + chrono::Duration::seconds(10))
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();

    // Twelve players, two matches' worth, and one far from them all, who stays; the
    // leader rewrites the pool size, and the tick stays: at most the move of what it
    // misses (nothing now) is notified.
    for i in 0..13 {
        let skill = if i < 12 {
            1000.0 + 40.0 * i as f64
        } else {
            4000.0
        };
        enqueue(&client, "q", &format!("p{i:02}"), skill).await;
    }
    assert!(matches!(
        worker.step().await.unwrap(),
        StepOutcome::Waiting { .. }
    ));
    let pool: i32 = sqlx::query_scalar("SELECT pool_size FROM queue_state")
        .fetch_one(db)
        .await
        .unwrap();
    assert_eq!(pool, 13, "the leader looked at the pool");
    let moved = drain(&mut listener, Duration::from_millis(500)).await;
    assert!(moved.len() <= 1, "{moved:?}");
    for (_, note) in &moved {
        assert_eq!(note["cause"], "pool", "{note}");
        assert_eq!(note["waiting_for"], "schedule", "{note}");
        assert_eq!(note["players_missing"], 0, "{note}");
    }
    // Another look at the same pool: no notification.
    worker.step().await.unwrap();
    let quiet = drain(&mut listener, Duration::from_millis(500)).await;
    assert!(
        quiet.is_empty(),
        "no countdown move, no notification: {quiet:?}"
    );

    // The tick: the round shows itself running, then one notification per match, then
    // the countdown after the round.
    clock.advance(secs(10));
    let StepOutcome::Ran(report) = worker.step().await.unwrap() else {
        panic!("the tick runs a round");
    };
    assert_eq!((report.matches, report.matched), (2, 12), "{report:?}");
    let mut notes = drain(&mut listener, Duration::from_millis(500)).await;
    let running = notes.remove(0).1;
    assert_eq!(
        (
            &running["event"],
            &running["cause"],
            &running["waiting_for"]
        ),
        (
            &Value::from("countdown"),
            &Value::from("round_start"),
            &Value::from("round")
        ),
        "{running}"
    );
    assert!(running["round_started_at"].is_string(), "{running}");
    assert!(running["seconds_to_next_round"].is_null(), "{running}");
    let events: Vec<&str> = notes
        .iter()
        .map(|(_, n)| n["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["match", "match", "countdown"], "{notes:?}");
    let rosters = rosters(db).await;
    assert_eq!(rosters.len(), 2);
    for ((ch, note), (match_id, roster)) in notes.iter().zip(&rosters) {
        assert_eq!(ch, &channel);
        assert_eq!(note["queue"], "q");
        assert_eq!(note["round_id"], report.round_id);
        assert_eq!(note["match_id"], *match_id);
        assert_eq!(
            (note["part"].as_i64(), note["parts"].as_i64()),
            (Some(1), Some(1))
        );
        assert_eq!(&named_players(note), roster, "{note}");
        // Sent at COMMIT: what it announces is there for the client to read.
        let visible: i64 =
            sqlx::query_scalar("SELECT count(*) FROM match_details WHERE match_id = $1")
                .bind(match_id)
                .fetch_one(&client)
                .await
                .unwrap();
        assert_eq!(visible, 6, "match {match_id} readable when notified");
    }
    let after = &notes[2].1;
    assert_eq!(after["cause"], "round");
    assert_eq!(after["round_id"], report.round_id);
    assert_eq!(after["trigger"], "schedule");
    assert_eq!(after["waiting_for"], "schedule");
    assert_ne!(after["next_round_at"], first_due.as_str());
    assert_countdown_as_the_view_shows_it(&client, after).await;

    // A reload that moves the schedule moves the countdown: one notification.
    let reloaded = q_worker(db, &clock, "every = \"30s\"");
    worker.set_config(reloaded.config().clone());
    assert!(matches!(
        worker.step().await.unwrap(),
        StepOutcome::Waiting { .. }
    ));
    let notes = drain(&mut listener, Duration::from_millis(500)).await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].1["event"], "countdown");
    assert_eq!(notes[0].1["cause"], "config");
    assert_countdown_as_the_view_shows_it(&client, &notes[0].1).await;
    assert_ne!(notes[0].1["next_round_at"], after["next_round_at"]);

    // Not enough players for a match after the tick (p12 and one more): the queue waits for players (a
    // round as soon as they come: 0 s, and no latest round); that move is notified too.
    enqueue(&client, "q", "late", 1200.0).await;
    clock.advance(secs(30));
    worker.step().await.unwrap();
    let notes = drain(&mut listener, Duration::from_millis(500)).await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    let waiting = &notes[0].1;
    assert_eq!(waiting["cause"], "pool");
    assert_eq!(waiting["waiting_for"], "players");
    // (The tick passed on the test's clock; the seconds count on the database's.)
    assert!(waiting["next_round_at"].is_string(), "{waiting}");
    assert!(waiting["seconds_to_next_round"].is_number(), "{waiting}");
    assert!(waiting["players_missing"].as_i64() > Some(0), "{waiting}");
    assert!(waiting["latest_round_at"].is_null(), "{waiting}");
    assert!(waiting["round_started_at"].is_null(), "{waiting}");
}

/// Sixteen players (the most a match may have: 2 teams of 8) with the longest ids the
/// contract allows: 64 four-byte characters for player, party and role, and one player id
/// of quotes and backslashes that JSON must escape.
#[tokio::test]
async fn the_largest_match_is_notified_in_parts_under_the_payload_limit() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let long = |base: u32, i: u32| -> String {
        let mut s: String = std::iter::repeat_n(char::from_u32(base).unwrap(), 63).collect();
        s.push(char::from_u32(base + 1 + i).unwrap());
        s
    };
    let roles: Vec<String> = (0..8).map(|i| long(0x1D400, i)).collect();
    let toml = format!(
        "[queues.q]\nteams = 2\nteam_size = 8\nroles = {roles:?}\n\
         [queues.q.round]\nevery = \"10s\"\nbudget = \"200ms\"\nseed = 1\n"
    );
    let config = Config::from_toml_str(&toml).expect("valid config");
    let clock = ManualClock::new(chrono::Utc::now().trunc_subsecs(6));
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let mut worker = QueueWorker::new(
        "q",
        "notify",
        runner,
        Arc::new(config.queues["q"].clone()),
        secs(15),
    );
    worker.step().await.unwrap();

    let (_, client) = client_login(&tdb, 2).await;
    let (mut listener, _) = listen_to(&client, "q").await;

    let mut ids: Vec<String> = (0..16).map(|i| long(0x1F600, i)).collect();
    ids[15] = "\"\\".repeat(32);
    for (k, party) in ids.chunks(8).enumerate() {
        let members: Vec<Value> = party
            .iter()
            .enumerate()
            .map(|(i, id)| serde_json::json!({"player_id": id, "skill": 1000 + 10 * i}))
            .collect();
        sqlx::query("SELECT * FROM enqueue_party(queue => 'q', party_id => $1, members => $2)")
            .bind(long(0x1F300 + 16 * k as u32, 0))
            .bind(Value::Array(members))
            .execute(&client)
            .await
            .unwrap();
    }
    drain(&mut listener, Duration::from_millis(300)).await;
    clock.advance(secs(10));
    let StepOutcome::Ran(report) = worker.step().await.unwrap() else {
        panic!("the tick runs a round");
    };
    assert_eq!((report.matches, report.matched), (1, 16), "{report:?}");

    let notes = drain(&mut listener, Duration::from_millis(500)).await;
    let parts: Vec<&Value> = notes
        .iter()
        .map(|(_, n)| n)
        .filter(|n| n["event"] == "match")
        .collect();
    // 16 players of about 820 bytes each do not fit in one payload.
    assert_eq!(parts.len(), 2, "{notes:?}");
    let rosters = rosters(db).await;
    let (match_id, roster) = rosters.iter().next().unwrap();
    let mut named = BTreeMap::new();
    for (i, part) in parts.iter().enumerate() {
        assert_eq!(part["match_id"], *match_id);
        assert_eq!(part["queue"], "q");
        assert_eq!(part["round_id"], report.round_id);
        assert_eq!(part["part"].as_u64(), Some(i as u64 + 1));
        assert_eq!(part["parts"], 2);
        let players = named_players(part);
        assert!(!players.is_empty());
        named.extend(players);
    }
    assert_eq!(&named, roster, "the parts together name the whole roster");
    assert!(named.contains_key(&ids[15]), "escaped id reads back");
    assert!(
        named
            .values()
            .all(|(_, party, role)| party.is_string() && role.is_string()),
        "{named:?}"
    );
}

/// A match written by hand in queue `queue` (the round's commit needs a configured queue;
/// these test the SQL function with queue names no config would use). Only the match row
/// names `queue`; its round and entries name `q`: the round's and the enqueue's own
/// notifications (matchmaker_round, matchmaker_enqueue) carry the queue name whole and
/// cannot send a name of thousands of characters.
async fn hand_written_match(db: &PgPool, queue: &str, players: &[&str]) -> i64 {
    let round_id: i64 = sqlx::query_scalar(
        "INSERT INTO rounds (queue, trigger, leader, term, started_at, snapshot_at,
                             committed_at, pool_size, match_count, matched, left_over,
                             rejected, snapshot_ms, solve_ms, commit_ms, seed, config_hash,
                             config)
         VALUES ('q', 'manual', 'test', 1, now(), now(), now(), 0, 1, 0, 0, 0, 0, 0, 0, 0,
                 'x', '{}')
         RETURNING round_id",
    )
    .fetch_one(db)
    .await
    .unwrap();
    let match_id: i64 = sqlx::query_scalar(
        "INSERT INTO matches (round_id, queue, created_at, score) VALUES ($1, $2, now(), 1)
         RETURNING match_id",
    )
    .bind(round_id)
    .bind(queue)
    .fetch_one(db)
    .await
    .unwrap();
    for (i, p) in players.iter().enumerate() {
        sqlx::query(
            "WITH e AS (INSERT INTO queue_entries (queue, player_id, skill, status, match_id)
                        VALUES ('q', $1, 1000, 'matched', $2) RETURNING *)
             INSERT INTO match_players (match_id, entry_id, queue, player_id, team, skill,
                                        enqueued_at, matched_at)
             SELECT $2, e.entry_id, e.queue, e.player_id, $3, e.skill, now(), now() FROM e",
        )
        .bind(p)
        .bind(match_id)
        .bind((i % 2) as i32)
        .execute(db)
        .await
        .unwrap();
    }
    match_id
}

#[tokio::test]
async fn long_queue_names_get_valid_channels_and_oversized_headers_a_compact_form() {
    // (As the superuser: the hand-written entries are its own, so its channels get them.)
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let long_a = format!("{}-a", "x".repeat(60));
    let long_b = format!("{}-b", "x".repeat(60));
    let huge = "h".repeat(9000);
    let mut channels = BTreeSet::new();
    for queue in ["q", &"y".repeat(52), &long_a, &long_b, &huge] {
        let channel = queue_channel(db, queue).await;
        assert!(is_login_channel(&channel), "{channel}");
        channels.insert(channel);
    }
    assert_eq!(channels.len(), 5, "distinct channels: {channels:?}");

    let channel_a = queue_channel(db, &long_a).await;
    let channel_huge = queue_channel(db, &huge).await;
    let mut listener = PgListener::connect_with(db).await.unwrap();
    listener.listen(&channel_a).await.unwrap();
    listener.listen(&channel_huge).await.unwrap();

    let in_a = hand_written_match(db, &long_a, &["ann", "ben"]).await;
    let in_huge = hand_written_match(db, &huge, &["cat", "dan"]).await;
    let sent: i32 = sqlx::query_scalar("SELECT matchmaker_notify_matches($1)")
        .bind(vec![in_a, in_huge])
        .fetch_one(db)
        .await
        .unwrap();
    assert_eq!(sent, 2);
    let notes = drain(&mut listener, Duration::from_millis(500)).await;
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(notes[0].0, channel_a);
    assert_eq!(
        notes[0].1["queue"],
        long_a.as_str(),
        "the payload names the queue"
    );
    assert_eq!(named_players(&notes[0].1).len(), 2);
    // A header that leaves no room for a player: the compact form, with the marker.
    assert_eq!(notes[1].0, channel_huge);
    assert_eq!(notes[1].1["match_id"], in_huge);
    assert_eq!(notes[1].1["players_omitted"], true);
    assert!(notes[1].1.get("players").is_none());

    // Backfill: the same notification under its own event; nothing else is accepted.
    let sent: i32 = sqlx::query_scalar("SELECT matchmaker_notify_matches($1, 'backfill')")
        .bind(vec![in_a])
        .fetch_one(db)
        .await
        .unwrap();
    assert_eq!(sent, 1);
    let notes = drain(&mut listener, Duration::from_millis(500)).await;
    assert_eq!(notes[0].1["event"], "backfill");
    let err = sqlx::query("SELECT matchmaker_notify_matches($1, 'bogus')")
        .bind(vec![in_a])
        .execute(db)
        .await
        .unwrap_err();
    let (code, message) = db_error(&err);
    assert_eq!(code, "22023");
    assert!(
        message.contains("must be match, backfill, ready_check or ready"),
        "{message}"
    );

    // Sent in a transaction that rolls back: never delivered.
    let mut tx = db.begin().await.unwrap();
    sqlx::query("SELECT matchmaker_notify_matches($1)")
        .bind(vec![in_a])
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    let none = drain(&mut listener, Duration::from_millis(500)).await;
    assert!(none.is_empty(), "{none:?}");
}

/// `examples/NAME.rs`, built with this test binary's profile (cargo builds examples for
/// `cargo test`, not for `cargo test --test it`). Built as `cargo test --workspace`
/// builds it, so that after that command it is up to date and nothing is compiled again
/// (a build of the root package alone unifies other features and rebuilds the
/// dependencies). Built once per name and test run; one build at a time (cargo would
/// wait on its lock).
pub(crate) fn example_binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<std::collections::HashMap<String, PathBuf>>> =
        OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(path) = built.get(name) {
        return path.clone();
    }
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/it-<hash>
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let target_dir = profile_dir.parent().expect("target dir");
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "test",
            "--no-run",
            "--workspace",
            "--quiet",
            "--profile",
            profile,
        ])
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("run cargo test --no-run (for --example {name}): {e}"));
    assert!(
        out.status.success(),
        "cargo test --no-run --workspace (for --example {name}) failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = profile_dir.join("examples").join(name);
    assert!(path.exists(), "{} built", path.display());
    built.insert(name.to_string(), path.clone());
    path
}

fn example_client() -> PathBuf {
    example_binary("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_client_receives_its_match() {
    let _load = crate::support::TIMING.read().await;
    let client_bin = tokio::task::spawn_blocking(example_client).await.unwrap();
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    // Hourly polls and ticks: the round that matches the example's party is the max-wait
    // fallback, 4 s after the first player, woken by the countdown's own timer.
    let config = Config::from_toml_str(
        "[daemon]\npoll_interval = \"1h\"\nlease_ttl = \"3s\"\nlease_renew = \"1s\"\n\
         [queues.q]\nmax_wait = \"4s\"\n\
         [queues.q.round]\nevery = \"1h\"\nbudget = \"50ms\"\n",
    )
    .expect("valid config");
    let daemon = spawn_daemon(tdb.new_pool(4).await, config, "notify");
    wait_for_count(db, "SELECT count(*) FROM queues WHERE active", 1, secs(30)).await;

    // Four other players, from another backend; the example's party of two makes a match.
    let (_, others) = client_login(&tdb, 1).await;
    for (i, p) in ["o1", "o2", "o3", "o4"].iter().enumerate() {
        enqueue(&others, "q", p, 1400.0 + 50.0 * i as f64).await;
    }
    let (login, _) = client_login(&tdb, 1).await;
    let url = tdb.url_as(&login);
    // No polling (1 h): only the notification can tell it of its match.
    let child = tokio::process::Command::new(&client_bin)
        .args(["--queue", "q", "--party", "crew"])
        .args(["--player", "alice=1500", "--player", "bob=1450"])
        .args(["--timeout", "60s", "--poll", "1h", "--result", "won"])
        .env("DATABASE_URL", &url)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(secs(90), child)
        .await
        .expect("the example exits within 90 s")
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Shown with --nocapture (the README's sample output).
    println!("{stdout}");
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );

    let match_id: i64 =
        sqlx::query_scalar("SELECT match_id FROM match_players WHERE player_id = 'alice'")
            .fetch_one(db)
            .await
            .unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    let channel: String = sqlx::query_scalar("SELECT matchmaker_login_channel($1, 'q')")
        .bind(&login)
        .fetch_one(db)
        .await
        .unwrap();
    assert_eq!(lines[0], format!("listening on \"{channel}\""), "{stdout}");
    assert!(
        lines.iter().any(|l| l.starts_with("countdown: ")),
        "a countdown printed:\n{stdout}"
    );
    for player in ["alice", "bob"] {
        let line = format!("matched: {player} is in match {match_id} ");
        assert!(
            lines.iter().any(|l| l.starts_with(&line)),
            "{line:?} printed:\n{stdout}"
        );
    }
    // Once matched, it reports the match won by its players' team.
    assert_eq!(
        lines.last().unwrap(),
        &format!("result of match {match_id}: recorded"),
        "it exits on its match's result:\n{stdout}"
    );
    let (ranks, team): (Vec<i32>, i32) = sqlx::query_as(
        "SELECT r.team_ranks, mp.team FROM match_results r
           JOIN match_players mp USING (match_id) WHERE mp.player_id = 'alice'",
    )
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(ranks[team as usize], 1, "{ranks:?}, alice in team {team}");

    daemon.stop().await;
    assert_nobody_matched_twice(db).await;
}

/// A refused request: the example prints the database's message once, with its
/// SQLSTATE, on one line (no driver prefix, no server source line), and exits 1.
#[tokio::test]
async fn the_example_client_prints_a_refusal_once() {
    let client_bin = tokio::task::spawn_blocking(example_client).await.unwrap();
    let tdb = fresh_db().await;
    let config = Config::from_toml_str("[queues.q]\n").expect("valid config");
    publish(&tdb.pool, &config, "notify").await;
    let (login, _) = client_login(&tdb, 1).await;
    let url = tdb.url_as(&login);
    let out = tokio::process::Command::new(&client_bin)
        .args(["--queue", "ranked_9v9", "--player", "alice=1500"])
        .env("DATABASE_URL", &url)
        .kill_on_drop(true)
        .output()
        .await
        .expect("the example runs");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: queue = 'ranked_9v9': unknown queue; queues: q (SQLSTATE 22023)\n"
    );
}
