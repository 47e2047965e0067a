//! A hostile client login beside an honest one, with a running daemon. The ready check:
//! an answer held in an open transaction, or refused calls left in one, hold no match
//! past its deadline; a late answer names a cancelled match only to a login whose player
//! was in it; a cancellation's reason names only the reader's own players; decline
//! bombing under fresh ids leaves the honest login its ready matches. The quota: a
//! login's concurrent transactions cannot overshoot it. A pool split into hundreds of
//! builds still places the honest login's players.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{Connection, PgConnection, PgPool};

use crate::support::*;

// Rounds start at 6 queued players; the leader looks every 200 ms.
const CONFIG: &str = "[daemon]\npoll_interval = \"200ms\"\nlease_ttl = \"3s\"\n\
                      lease_renew = \"1s\"\n\
                      [queues.q.round]\nevery = \"1h\"\nbudget = \"50ms\"\ntarget_pool = 6\n\
                      [queues.q.ready_check]\ntimeout = \"3s\"\ndecline_cooldown = \"60s\"\n";

/// The leader's look, and slack for a loaded machine: how late past its deadline a
/// match may be resolved.
const ONE_LOOK: Duration = Duration::from_millis(1500);

async fn start(tdb: &TestDb) -> Spawned {
    let config = matchmaker::config::Config::from_toml_str(CONFIG).unwrap();
    let daemon = spawn_daemon(tdb.new_pool(4).await, config, "hostile");
    wait_until_serving(&tdb.pool, 1).await;
    daemon
}

/// The pending match of `player` once the round made it.
async fn pending_match(db: &PgPool, player: &str) -> i64 {
    wait_for_count(
        db,
        &format!(
            "SELECT count(*) FROM match_players mp JOIN matches m USING (match_id)
              WHERE mp.player_id = '{player}' AND m.status = 'pending'"
        ),
        1,
        secs(30),
    )
    .await;
    sqlx::query_scalar(
        "SELECT mp.match_id FROM match_players mp JOIN matches m USING (match_id)
          WHERE mp.player_id = $1 AND m.status = 'pending'",
    )
    .bind(player)
    .fetch_one(db)
    .await
    .unwrap()
}

/// (status, answer_by, resolved_at) of a match once it is resolved.
async fn resolved(db: &PgPool, m: i64) -> (String, DateTime<Utc>, DateTime<Utc>) {
    wait_for_count(
        db,
        &format!("SELECT count(*) FROM matches WHERE match_id = {m} AND status <> 'pending'"),
        1,
        secs(30),
    )
    .await;
    sqlx::query_as("SELECT status, answer_by, resolved_at FROM matches WHERE match_id = $1")
        .bind(m)
        .fetch_one(db)
        .await
        .unwrap()
}

/// A connection of `login`'s, in a transaction it never ends.
async fn open_transaction(tdb: &TestDb, login: &str) -> PgConnection {
    let mut conn = PgConnection::connect(&tdb.url_as(login)).await.unwrap();
    sqlx::query("BEGIN").execute(&mut conn).await.unwrap();
    conn
}

async fn enqueue_at(db: &PgPool, player: &str) {
    enqueue(db, "q", player, 1500.0).send().await.unwrap();
}

async fn accept(db: &PgPool, player: &str, m: i64) {
    sqlx::query("SELECT accept_match($1, $2)")
        .bind(player)
        .bind(m)
        .execute(db)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_held_open_does_not_hold_the_match_past_its_deadline() {
    let tdb = fresh_db().await;
    let daemon = start(&tdb).await;
    let (_, honest) = client_login(&tdb, 2).await;
    let (attacker_login, attacker) = client_login(&tdb, 2).await;
    for i in 0..3 {
        enqueue_at(&honest, &format!("h{i}")).await;
        enqueue_at(&attacker, &format!("a{i}")).await;
    }
    let m = pending_match(&tdb.pool, "h0").await;
    // a0 accepts inside a transaction it keeps open; a1 answers for a player not its own
    // and for a match of another login, refused, in another, also kept open.
    let mut held = open_transaction(&tdb, &attacker_login).await;
    sqlx::query("SELECT accept_match('a0', $1)")
        .bind(m)
        .execute(&mut held)
        .await
        .unwrap();
    let mut refused = open_transaction(&tdb, &attacker_login).await;
    let e = sqlx::query("SELECT accept_match('h1', $1)")
        .bind(m)
        .execute(&mut refused)
        .await
        .unwrap_err();
    assert_eq!(db_error(&e).0, "22023");
    accept(&attacker, "a1", m).await;
    for i in 0..3 {
        accept(&honest, &format!("h{i}"), m).await;
    }

    let (status, answer_by, resolved_at) = resolved(&tdb.pool, m).await;
    assert_eq!(
        status, "cancelled",
        "a0's answer never committed: no answer in time"
    );
    assert!(
        resolved_at <= answer_by + chrono::Duration::from_std(ONE_LOOK).unwrap(),
        "resolved at {resolved_at}, its deadline {answer_by}"
    );
    // The honest players are queued again; the reason they read names none of the
    // attacker's players.
    let (queued, reason): (i64, String) =
        sqlx::query_as("SELECT count(*), min(reason) FROM player_status WHERE status = 'queued'")
            .fetch_one(&honest)
            .await
            .unwrap();
    assert_eq!(queued, 3);
    assert!(
        reason.contains("no answer in time from 2 players of other logins"),
        "{reason}"
    );
    assert!(!reason.contains("a0") && !reason.contains("a2"), "{reason}");
    // The attacker pays: its silent players (a0's answer never came) are declined, with
    // the cooldown; a1, who accepted, is queued again like the honest players.
    let declined: i64 =
        sqlx::query_scalar("SELECT count(*) FROM player_status WHERE status = 'declined'")
            .fetch_one(&attacker)
            .await
            .unwrap();
    assert_eq!(declined, 2);
    // The held answer, committed now, changes nothing of the resolved match.
    sqlx::query("COMMIT").execute(&mut held).await.unwrap();
    let (status, _, _) = resolved(&tdb.pool, m).await;
    assert_eq!(status, "cancelled");
    drop(refused);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_calls_left_in_an_open_transaction_delay_no_resolution() {
    let tdb = fresh_db().await;
    let daemon = start(&tdb).await;
    let (_, honest) = client_login(&tdb, 2).await;
    let (attacker_login, _) = client_login(&tdb, 1).await;
    // Its pool's session and six of its own.
    allow_connections(&tdb, &attacker_login, 7).await;
    for i in 0..6 {
        enqueue_at(&honest, &format!("h{i}")).await;
    }
    let m = pending_match(&tdb.pool, "h0").await;
    // Six connections, each refused on the honest login's match and left open.
    let mut spam = Vec::new();
    for i in 0..6 {
        let mut conn = open_transaction(&tdb, &attacker_login).await;
        let call = if i % 2 == 0 {
            "SELECT accept_match('x', $1)"
        } else {
            "SELECT decline_match('h0', $1)"
        };
        let e = sqlx::query(call)
            .bind(m)
            .execute(&mut conn)
            .await
            .unwrap_err();
        assert_eq!(db_error(&e).0, "22023");
        spam.push(conn);
    }
    for i in 0..6 {
        accept(&honest, &format!("h{i}"), m).await;
    }
    let (status, answer_by, resolved_at) = resolved(&tdb.pool, m).await;
    assert_eq!(status, "ready");
    assert!(
        resolved_at < answer_by,
        "every player accepted: ready at once, not held to its deadline ({resolved_at} \
         against {answer_by})"
    );
    drop(spam);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_names_a_cancelled_match_only_to_a_login_that_was_in_it() {
    let tdb = fresh_db().await;
    let daemon = start(&tdb).await;
    let (_, honest) = client_login(&tdb, 2).await;
    let (_, attacker) = client_login(&tdb, 1).await;
    for i in 1..=6 {
        enqueue_at(&honest, &format!("rq{i}")).await;
    }
    let m = pending_match(&tdb.pool, "rq1").await;
    sqlx::query("SELECT decline_match('rq6', $1)")
        .bind(m)
        .execute(&honest)
        .await
        .unwrap();
    let (status, _, _) = resolved(&tdb.pool, m).await;
    assert_eq!(status, "cancelled");
    // The attacker queues its own rq1 and leaves: its late answer reads exactly like an
    // answer to a match that never existed.
    enqueue_at(&attacker, "rq1").await;
    assert_eq!(cancel(&attacker, "rq1").await, 1);
    let answer = |db: &PgPool, m: i64| {
        let db = db.clone();
        async move {
            let e = sqlx::query("SELECT accept_match('rq1', $1)")
                .bind(m)
                .execute(&db)
                .await
                .unwrap_err();
            db_error(&e)
        }
    };
    let theirs = answer(&attacker, m).await;
    let nothing = answer(&attacker, m + 1000).await;
    assert_eq!(
        theirs.1,
        nothing.1.replace(&(m + 1000).to_string(), &m.to_string())
    );
    assert_eq!(
        theirs.1,
        format!("match_id = {m}: is not a match of player 'rq1' of this login")
    );
    let own = answer(&honest, m).await;
    assert_eq!(
        own.1,
        format!(
            "match_id = {m}: was cancelled by its ready check; read player_status for player 'rq1'"
        )
    );
    daemon.stop().await;
}

/// What one side of the decline bombing did.
#[derive(Debug, Default)]
struct Side {
    /// Distinct matches that became ready with a player of this side.
    ready: std::collections::HashSet<i64>,
    /// Ready checks this side declined.
    declined: usize,
}

/// A login keeping `keep` players queued (fresh ids as they leave) until `until`: each
/// ready check accepted, or (`decline`) declined at once.
async fn play(
    db: PgPool,
    prefix: &'static str,
    keep: usize,
    decline: bool,
    until: std::time::Instant,
) -> Side {
    let mut side = Side::default();
    let mut live: Vec<String> = Vec::new();
    let mut next = 0usize;
    while std::time::Instant::now() < until {
        while live.len() < keep {
            let id = format!("{prefix}{next}");
            next += 1;
            enqueue_at(&db, &id).await;
            live.push(id);
        }
        let rows: Vec<(String, String, Option<i64>)> = sqlx::query_as(
            "SELECT player_id, status, match_id FROM player_status WHERE player_id = ANY($1)",
        )
        .bind(&live)
        .fetch_all(&db)
        .await
        .unwrap();
        for (player, status, m) in rows {
            match (status.as_str(), m) {
                ("pending", Some(m)) => {
                    let call = if decline {
                        "SELECT decline_match($1, $2)"
                    } else {
                        "SELECT accept_match($1, $2)"
                    };
                    // Refused when the leader resolved it meanwhile: the next look tells.
                    if sqlx::query(call)
                        .bind(&player)
                        .bind(m)
                        .execute(&db)
                        .await
                        .is_ok()
                        && decline
                    {
                        side.declined += 1;
                    }
                }
                ("queued", _) => {}
                (status, m) => {
                    if status == "matched"
                        && let Some(m) = m
                    {
                        side.ready.insert(m);
                    }
                    live.retain(|p| *p != player);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    side
}

/// Decline bombing: an attacking login keeps players queued beside the honest login's,
/// each declining its ready check at once under a fresh id. The honest login's ready
/// matches while it runs, against its own baseline in the same test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decline_bombing_leaves_the_honest_login_its_ready_matches() {
    let _load = crate::support::TIMING.read().await;
    let tdb = fresh_db().await;
    let daemon = start(&tdb).await;
    let (_, honest) = client_login(&tdb, 2).await;
    let (attacker_login, attacker) = client_login(&tdb, 2).await;
    let phase = Duration::from_secs(20);

    let until = std::time::Instant::now() + phase;
    let baseline = play(honest.clone(), "b", 12, false, until).await;

    let until = std::time::Instant::now() + phase;
    let (during, bombs) = tokio::join!(
        play(honest.clone(), "h", 12, false, until),
        play(attacker.clone(), "x", 12, true, until),
    );
    println!(
        "honest ready matches: baseline {}, under decline bombing {}; the attacker declined {}",
        baseline.ready.len(),
        during.ready.len(),
        bombs.declined
    );
    assert!(
        baseline.ready.len() >= 5,
        "a baseline to compare with: {baseline:?}"
    );
    assert!(bombs.declined >= 10, "the attack took place: {bombs:?}");
    assert!(
        during.ready.len() * 10 >= baseline.ready.len() * 8,
        "under decline bombing the honest login kept {} of its {} ready matches",
        during.ready.len(),
        baseline.ready.len()
    );
    // The attacker's record says it fails: its players play among themselves.
    let failing = matchmaker::db::ready_check::failing_logins(
        &tdb.pool,
        "q",
        5,
        0.5,
        Duration::from_secs(600),
    )
    .await
    .unwrap();
    assert_eq!(failing, vec![attacker_login]);
    daemon.stop().await;
}

/// Quota overshoot: eight transactions of one login, each enqueueing ten players while
/// the others are open, against a quota of 50: exactly 50 queued, the rest refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transactions_of_one_login_do_not_overshoot_its_quota() {
    let tdb = fresh_db().await;
    let config = matchmaker::config::Config::from_toml_str(
        "[queues.q.round]\nevery = \"1h\"\n[queues.q.limits]\nmax_queued_per_login = 50\n",
    )
    .unwrap();
    publish(&tdb.pool, &config, "quota").await;
    let (login, _) = client_login(&tdb, 1).await;
    // Its pool's session and eight of its own.
    allow_connections(&tdb, &login, 9).await;
    let (start, _) = tokio::sync::watch::channel(());
    let mut tasks = Vec::new();
    for t in 0..8 {
        let url = tdb.url_as(&login);
        let mut go = start.subscribe();
        tasks.push(tokio::spawn(async move {
            let mut conn = PgConnection::connect(&url).await.unwrap();
            let _ = go.changed().await;
            sqlx::query("BEGIN").execute(&mut conn).await.unwrap();
            for i in 0..10 {
                let sent = sqlx::query("SELECT enqueue('q', $1, 1500)")
                    .bind(format!("t{t}p{i}"))
                    .execute(&mut conn)
                    .await;
                if let Err(e) = sent {
                    sqlx::query("ROLLBACK").execute(&mut conn).await.unwrap();
                    return Err(db_error(&e));
                }
            }
            // Held open while the others count.
            tokio::time::sleep(Duration::from_millis(300)).await;
            sqlx::query("COMMIT").execute(&mut conn).await.unwrap();
            Ok(())
        }));
    }
    start.send(()).unwrap();
    let mut refused = 0;
    for task in tasks {
        if let Err((code, message)) = task.await.unwrap() {
            assert_eq!(code, "22023", "{message}");
            assert!(message.contains("limits.max_queued_per_login"), "{message}");
            refused += 1;
        }
    }
    let queued: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM queue_entries WHERE owner = $1 AND status = 'queued'",
    )
    .bind(&login)
    .fetch_one(&tdb.pool)
    .await
    .unwrap();
    assert_eq!((queued, refused), (50, 3));
}

/// Skill decoys: a queue that declares its skills refuses an entry far off the scale (a
/// decoy that would ride the max-wait fallback into honest matches), solo or in a party,
/// and writes nothing.
#[tokio::test]
async fn a_skill_outside_the_queue_range_is_refused() {
    let tdb = fresh_db().await;
    let config = matchmaker::config::Config::from_toml_str(
        "[queues.q.round]\nevery = \"1h\"\n[queues.q.tickets]\nskill_range = [0, 5000]\n",
    )
    .unwrap();
    publish(&tdb.pool, &config, "range").await;
    let (_, attacker) = client_login(&tdb, 1).await;
    for skill in [24000.0, -1.0, 5000.5] {
        let e = enqueue(&attacker, "q", "decoy", skill)
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            db_error(&e),
            (
                "22023".to_string(),
                format!(
                    "skill = {skill}: is outside queue q's skills, 0 to 5000 (tickets.skill_range)"
                )
            )
        );
    }
    let e = sqlx::query(
        "SELECT enqueue_party('q', 'p', '[{\"player_id\": \"a\", \"skill\": 1500},
                                         {\"player_id\": \"b\", \"skill\": 9000}]')",
    )
    .execute(&attacker)
    .await
    .unwrap_err();
    assert_eq!(db_error(&e).0, "22023");
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM queue_entries")
        .fetch_one(&tdb.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0);
    enqueue(&attacker, "q", "fair", 5000.0)
        .send()
        .await
        .unwrap();
}

/// A login's transaction left open after an enqueue makes that login's next enqueue into
/// the queue wait two seconds at most and ask to retry (class 40); another login's
/// enqueue does not wait at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_transaction_holds_up_only_its_own_login() {
    let tdb = fresh_db().await;
    let config =
        matchmaker::config::Config::from_toml_str("[queues.q.round]\nevery = \"1h\"\n").unwrap();
    publish(&tdb.pool, &config, "held").await;
    let (careless, careless_pool) = client_login(&tdb, 1).await;
    let (_, other) = client_login(&tdb, 1).await;
    let mut held = open_transaction(&tdb, &careless).await;
    sqlx::query("SELECT enqueue('q', 'held', 1500)")
        .execute(&mut held)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    enqueue_at(&other, "someone").await;
    assert!(started.elapsed() < Duration::from_secs(1));
    let e = enqueue(&careless_pool, "q", "next", 1500.0)
        .send()
        .await
        .unwrap_err();
    let (code, message) = db_error(&e);
    assert_eq!(code, "40001", "{message}");
    assert!(
        message.contains("another open transaction of this login"),
        "{message}"
    );
    sqlx::query("COMMIT").execute(&mut held).await.unwrap();
    enqueue(&careless_pool, "q", "next", 1500.0)
        .send()
        .await
        .unwrap();
}

/// Partition explosion: a login whose players each carry a build nobody else has splits
/// the queue's pool into hundreds of groups of one. The round still places every honest
/// player, with a reason for each of the attacker's.
#[tokio::test]
async fn a_pool_split_into_hundreds_of_builds_still_places_the_honest_login() {
    let mut d = Daemon::start(
        "[queues.q]\n[queues.q.round]\nevery = \"1s\"\nbudget = \"200ms\"\n\
         [queues.q.filters]\nsame = [\"build\"]\n",
        "partitions",
    )
    .await;
    let (_, honest) = client_login(&d.tdb, 1).await;
    let (_, attacker) = client_login(&d.tdb, 1).await;
    for i in 0..12 {
        enqueue(&honest, "q", &format!("h{i}"), 1400.0 + 20.0 * i as f64)
            .attributes(serde_json::json!({"build": "1.0"}))
            .send()
            .await
            .unwrap();
    }
    let n: i64 = sqlx::query_scalar(
        "SELECT count(enqueue('q', 'x' || i, 1500,
                              attributes => jsonb_build_object('build', 'b' || i)))
           FROM generate_series(1, 300) i",
    )
    .fetch_one(&attacker)
    .await
    .unwrap();
    assert_eq!(n, 300, "the attack took effect: 300 builds queued");
    let report = d.round("q").await;
    assert_eq!(report.players, 312, "{report:?}");
    assert_eq!(report.matched, 12, "{report:?}");
    let placed: Vec<(String, String)> =
        sqlx::query_as("SELECT player_id, status FROM player_status ORDER BY player_id")
            .fetch_all(&honest)
            .await
            .unwrap();
    assert!(
        placed.iter().all(|(_, s)| s == "matched"),
        "every honest player placed: {placed:?}"
    );
    let reasons: Vec<Option<String>> =
        sqlx::query_scalar("SELECT reason FROM player_status WHERE status = 'queued'")
            .fetch_all(&attacker)
            .await
            .unwrap();
    assert_eq!(reasons.len(), 300);
    assert!(reasons.iter().all(|r| r.is_some()), "{:?}", &reasons[..3]);
}
