//! A client login (a member of matchmaker_client) trying to break the contract: each
//! attempt fails with a permission error (SQLSTATE 42501) or a refusal (22023) or is
//! harmless, changes nothing it should not, and the daemon's next round still commits
//! with the invariants intact. Plus a catalogue of malformed inputs, each refused with
//! 22023, a message naming the field and the rule, and no row left behind.

use std::sync::Arc;
use std::time::{Duration, Instant};

use matchmaker::config::{Config, QueueConfig};
use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::round::{RoundReport, RoundRunner};
use matchmaker::daemon::worker::{QueueWorker, StepOutcome};
use matchmaker::db::{self, RoundTrigger};
use sqlx::PgPool;

use crate::support::*;

/// q: 2 teams of 3, no roles, any region. r: roles, and latencies only to eu and us.
const QUEUES: &str = include_str!("configs/client_abuse.toml");

/// A database whose queues q and r are published, and the worker of q on a manual clock.
struct World {
    tdb: TestDb,
    clock: ManualClock,
    runner: RoundRunner,
    worker: QueueWorker,
    q: Arc<QueueConfig>,
}

impl World {
    async fn new() -> World {
        let tdb = fresh_db().await;
        let Leader {
            clock,
            runner,
            worker,
            config: q,
        } = leader(&tdb.pool, QUEUES, "q", "abuse").await;
        let config = Config::from_toml_str(QUEUES).expect("valid config");
        db::queues::publish_queue(&tdb.pool, "r", &config.queues["r"], "abuse")
            .await
            .unwrap();
        World {
            tdb,
            clock,
            runner,
            worker,
            q,
        }
    }

    fn db(&self) -> &PgPool {
        &self.tdb.pool
    }

    /// The next tick of q: a round must run.
    async fn round(&mut self) -> RoundReport {
        self.clock.advance(secs(1));
        expect_round(self.worker.step().await.unwrap(), "q")
    }
}

async fn solos(client: &PgPool, queue: &str, players: &[&str]) {
    for (i, p) in players.iter().enumerate() {
        enqueue(client, queue, p, 1400.0 + 25.0 * i as f64)
            .latency("eu", 30.0)
            .await;
    }
}

/// `sql` as `client` must fail with a permission error.
async fn denied<'e>(client: impl sqlx::PgExecutor<'e>, sql: &str) -> String {
    let err = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(client)
        .await
        .err()
        .unwrap_or_else(|| panic!("a client may not run: {sql}"));
    let (code, message) = db_error(&err);
    assert_eq!(code, "42501", "{sql}: {message}");
    message
}

/// `sql` as `client` must be refused with 22023 and a message containing every needle.
async fn refused<'e>(client: impl sqlx::PgExecutor<'e>, sql: &str, needles: &[&str]) -> String {
    let err = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(client)
        .await
        .err()
        .unwrap_or_else(|| panic!("should be refused: {sql}"));
    let (code, message) = db_error(&err);
    assert_eq!(code, "22023", "{sql}: {message}");
    for needle in needles {
        assert!(
            message.contains(needle),
            "{sql}\n  message: {message}\n  lacks: {needle}"
        );
    }
    message
}

async fn status_of(db: &PgPool, player: &str) -> Vec<(String, String, Option<String>)> {
    sqlx::query_as(
        "SELECT queue, status, reject_reason FROM queue_entries WHERE player_id = $1
          ORDER BY entry_id",
    )
    .bind(player)
    .fetch_all(db)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_client_reads_four_views_calls_four_functions_and_owns_nothing() {
    let w = World::new().await;
    let (_, client) = client_login(&w.tdb, 1).await;

    // What the login may read and call, enumerated by the server itself.
    let readable: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_class c
          WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
            AND has_table_privilege(c.oid, 'SELECT') ORDER BY 1",
    )
    .fetch_all(&client)
    .await
    .unwrap();
    assert_eq!(
        readable,
        [
            // avoid_list: the login's players' avoids.
            "avoid_list",
            // backfill_status is a game server's (matchmaker_server), not a client's.
            "match_details",
            // player_ratings: the login's players' built-in ratings.
            "player_ratings",
            "player_status",
            "queue_catalog",
            "queue_countdown"
        ]
    );
    let writable: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_class c
          WHERE c.relnamespace = 'public'::regnamespace
            AND CASE WHEN c.relkind = 'S'
                     THEN has_sequence_privilege(c.oid, 'USAGE, SELECT, UPDATE')
                     WHEN c.relkind IN ('r', 'v', 'm', 'p', 'f')
                     THEN has_table_privilege(
                              c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
                     ELSE false END",
    )
    .fetch_all(&client)
    .await
    .unwrap();
    assert!(writable.is_empty(), "{writable:?}");
    let mut callable: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT p.proname::text FROM pg_proc p
          WHERE p.pronamespace = 'public'::regnamespace
            AND has_function_privilege(p.oid, 'EXECUTE')",
    )
    .fetch_all(&client)
    .await
    .unwrap();
    callable.sort();
    // matchmaker_sees_all: the views call it as their reader; it answers false here.
    // queue_channel: the name of a queue's notification channel.
    assert_eq!(
        callable,
        [
            // accept_match / decline_match: the ready check of a pending match.
            "accept_match",
            // avoid / unavoid: the login's players' avoid lists.
            "avoid",
            "cancel",
            "decline_match",
            // request_backfill / cancel_backfill belong to game servers (matchmaker_server).
            "enqueue",
            "enqueue_party",
            "keep_alive",
            // match_details(match_id): one match's roster, by index.
            "match_details",
            // The caller-only functions the views read through.
            "matchmaker_avoid_list",
            // matchmaker_estimate_wait: player_status calls it as its reader.
            "matchmaker_estimate_wait",
            "matchmaker_match_details",
            // matchmaker_player_ratings: player_ratings reads through it.
            "matchmaker_player_ratings",
            "matchmaker_player_status",
            "matchmaker_sees_all",
            // player_matches / player_status(player_id): a player's matches and status,
            // by index.
            "player_matches",
            "player_status",
            "queue_channel",
            // report_result: the result of a match with the login's players.
            "report_result",
            "unavoid"
        ]
    );
    let sees_all: bool = sqlx::query_scalar("SELECT matchmaker_sees_all()")
        .fetch_one(&client)
        .await
        .unwrap();
    assert!(!sees_all);

    // (e) No table, and no view but the four.
    for table in [
        "queue_entries",
        "matches",
        "match_players",
        "rounds",
        "leases",
        "queues",
        "queue_state",
        "round_summaries",
        "avoids",
        "ratings",
        "match_results",
        "result_reports",
        "rating_changes",
        "_sqlx_migrations",
    ] {
        denied(&client, &format!("SELECT count(*) FROM {table}")).await;
    }
    // (f) No internal function.
    for call in [
        "SELECT matchmaker_refuse('skill', '1', 'a rule')",
        "SELECT matchmaker_check_id('player_id', 'x')",
        "SELECT matchmaker_check_ms_map('latencies', '{}', 32, '{}')",
        "SELECT matchmaker_check_member(NULL::queues, 'x', 1, NULL, '{}', '{}', '{}', NULL)",
        "SELECT matchmaker_active_queue('q')",
        "SELECT matchmaker_rated_entry()",
        "SELECT matchmaker_notify_enqueue()",
        "SELECT matchmaker_notify_round()",
        "SELECT nextval('queue_entries_entry_id_seq')",
        "SELECT setval('matches_match_id_seq', 1)",
    ] {
        denied(&client, call).await;
    }
    // (g) No object of its own next to the matchmaker's, no change to them.
    for ddl in [
        "CREATE TABLE public.notes (x int)",
        "CREATE TABLE notes (x int)",
        "CREATE VIEW public.everything AS SELECT 1 AS x",
        "CREATE FUNCTION public.matchmaker_refuse(text) RETURNS void LANGUAGE sql AS ''",
        "CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE sql AS 'SELECT ''2000-01-01''::timestamptz'",
        "CREATE TYPE public.ticket AS (x int)",
        "CREATE SCHEMA mine",
        "CREATE INDEX ON queue_entries (player_id)",
        "ALTER TABLE queue_entries ADD COLUMN vip boolean",
        "ALTER TABLE queue_entries DISABLE TRIGGER ALL",
        "ALTER FUNCTION enqueue(text, text, double precision, jsonb, jsonb, text[], double precision, double precision, jsonb) SECURITY INVOKER",
        "ALTER VIEW player_status SET (security_barrier = false)",
        "DROP TABLE queue_entries",
        "DROP VIEW player_status",
        "COMMENT ON TABLE queue_entries IS 'mine'",
        "TRUNCATE queue_entries",
        "LOCK TABLE queue_entries IN ACCESS EXCLUSIVE MODE",
        "LOCK TABLE player_status IN EXCLUSIVE MODE",
        "SELECT * FROM player_status FOR UPDATE",
        "SELECT * FROM queue_catalog FOR KEY SHARE",
        "SELECT * FROM match_details FOR SHARE",
    ] {
        if ddl.starts_with("LOCK") {
            // LOCK TABLE only runs inside a transaction.
            let mut tx = client.begin().await.unwrap();
            denied(&mut *tx, ddl).await;
            tx.rollback().await.unwrap();
        } else {
            denied(&client, ddl).await;
        }
    }

    // Temporary objects of the login's own do not shadow the matchmaker's inside the front
    // door (its search_path is pinned to public, then pg_temp).
    let mut conn = client.acquire().await.unwrap();
    for sql in [
        "CREATE TEMP TABLE queues (queue text, active boolean)",
        "CREATE TEMP TABLE queue_entries (queue text, player_id text, skill float8)",
        "CREATE FUNCTION pg_temp.now() RETURNS timestamptz LANGUAGE sql
             AS 'SELECT ''2000-01-01''::timestamptz'",
    ] {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&mut *conn)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let entry = enqueue(&mut *conn, "q", "shadow", 1500.0).await;
    drop(conn);
    let (queue, live): (String, bool) = sqlx::query_as(
        "SELECT queue, expires_at > now() + interval '4 minutes' FROM queue_entries
          WHERE entry_id = $1",
    )
    .bind(entry)
    .fetch_one(w.db())
    .await
    .unwrap();
    assert_eq!(queue, "q");
    assert!(live, "the server's clock, not the login's pg_temp.now()");
    assert_contract_invariants(w.db()).await;
}

#[tokio::test]
async fn direct_writes_are_denied_and_the_next_round_commits() {
    let mut w = World::new().await;
    let (_, client) = client_login(&w.tdb, 1).await;
    solos(&client, "q", &["a0", "a1", "a2", "a3", "a4", "a5"]).await;
    let report = w.round().await;
    assert_eq!(report.matched, 6);
    solos(&client, "q", &["w0", "w1"]).await;
    let before = fingerprint(w.db()).await;

    for sql in [
        // (a) Back into the queue after the match.
        "UPDATE queue_entries SET status = 'queued' WHERE player_id = 'a0'",
        "UPDATE queue_entries SET status = 'queued', match_id = NULL WHERE player_id = 'a0'",
        // (d) The daemon's columns.
        "UPDATE queue_entries SET enqueued_at = now() - interval '1 hour' WHERE player_id = 'w0'",
        "UPDATE queue_entries SET expires_at = 'infinity' WHERE player_id = 'w0'",
        "UPDATE queue_entries SET status = 'rejected', reject_reason = 'spite' WHERE player_id = 'w1'",
        "UPDATE queue_entries SET reject_reason = 'spite'",
        "UPDATE queue_entries SET owner = 'someone_else' WHERE player_id = 'w0'",
        "UPDATE queue_entries SET status = 'cancelled'",
        "DELETE FROM queue_entries",
        "INSERT INTO queue_entries (queue, player_id, skill) VALUES ('q', 'mallory', 1500)",
        "INSERT INTO queue_entries (queue, player_id, skill, enqueued_at)
             VALUES ('q', 'mallory', 1500, now() - interval '1 day')",
        "UPDATE match_players SET team = 1 - team",
        "DELETE FROM matches",
        "INSERT INTO rounds (queue) VALUES ('q')",
        "UPDATE leases SET holder = 'me', term = term + 1",
        "UPDATE queues SET active = false",
        "INSERT INTO queues (queue) VALUES ('mine')",
        "UPDATE queue_state SET next_round_at = now()",
        "DELETE FROM rounds",
    ] {
        denied(&client, sql).await;
    }
    assert_eq!(fingerprint(w.db()).await, before, "nothing changed");
    assert_eq!(
        status_of(w.db(), "a0").await,
        [("q".into(), "matched".into(), None)]
    );

    // The daemon goes on: the two waiting players and four more make a match.
    solos(&client, "q", &["w2", "w3", "w4", "w5"]).await;
    let report = w.round().await;
    assert_eq!((report.matched, report.rejected), (6, 0));
    assert_contract_invariants(w.db()).await;
}

#[tokio::test]
async fn a_client_transaction_holding_locks_never_holds_up_a_round() {
    let mut w = World::new().await;
    let (_, client) = client_login(&w.tdb, 4).await;
    solos(
        &client,
        "q",
        &["alice", "p0", "p1", "p2", "p3", "p4", "p5", "p6"],
    )
    .await;

    // (b) A cancel and a keep_alive in open transactions hold their rows; an enqueue in an
    // open transaction holds an uncommitted entry.
    let mut cancelling = client.begin().await.unwrap();
    let n = cancel(&mut *cancelling, "alice").await;
    assert_eq!(n, 1);
    let mut refreshing = client.begin().await.unwrap();
    let n = keep_alive(&mut *refreshing, &["p6"]).await;
    assert_eq!(n, 1);
    let mut enqueueing = client.begin().await.unwrap();
    enqueue(&mut *enqueueing, "q", "zed", 1500.0).await;

    // The round takes who it can lock (p0..p5) and does not wait for the rest.
    let started = Instant::now();
    let report = tokio::time::timeout(secs(10), w.round())
        .await
        .expect("a round never waits for a client");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the round committed promptly: {:?}",
        started.elapsed()
    );
    assert_eq!((report.matches, report.matched), (1, 6), "{report:?}");
    for held in ["alice", "p6"] {
        assert_eq!(status_of(w.db(), held).await[0].1, "queued", "{held}");
    }
    cancelling.rollback().await.unwrap();
    refreshing.commit().await.unwrap();
    enqueueing.commit().await.unwrap();

    // A cancel that arrives between the solve and the commit: the commit skips the locked
    // row, drops that match, and commits at once without it.
    solos(&client, "q", &["c0", "c1", "c2"]).await;
    let lease = w
        .worker
        .lease_handle()
        .current()
        .await
        .expect("the worker leads q");
    let prepared = w
        .runner
        .prepare("q", w.q.clone(), RoundTrigger::Manual)
        .await
        .unwrap();
    assert_eq!(prepared.snapshot.entries.len(), 6, "alice, p6, zed, c0..c2");
    let solved = w.runner.solve(prepared).await.unwrap();
    assert_eq!(solved.outcome.matches.len(), 1);
    let mut cancelling = client.begin().await.unwrap();
    let n = cancel(&mut *cancelling, "alice").await;
    assert_eq!(n, 1);
    let mut enqueueing = client.begin().await.unwrap();
    enqueue(&mut *enqueueing, "q", "yan", 1500.0).await;
    let started = Instant::now();
    let report = tokio::time::timeout(secs(10), w.runner.commit(solved, &lease))
        .await
        .expect("a commit never waits for a client")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        (report.matches, report.dropped_by_cancel),
        (0, 5),
        "{report:?}"
    );
    cancelling.commit().await.unwrap();
    enqueueing.commit().await.unwrap();
    let alice = status_of(w.db(), "alice").await;
    assert_eq!(alice.len(), 1, "{alice:?}");
    assert_eq!(alice[0].1, "cancelled");
    for other in ["p6", "zed", "c0", "c1", "c2", "yan"] {
        assert_eq!(status_of(w.db(), other).await[0].1, "queued", "{other}");
    }

    // The next round matches the six waiting players.
    let report = w.round().await;
    assert_eq!(report.matched, 6, "{report:?}");
    assert_contract_invariants(w.db()).await;
}

#[tokio::test]
async fn an_enqueue_racing_the_retirement_of_its_queue_is_rejected_by_the_next_sweep() {
    let w = World::new().await;
    let (_, client) = client_login(&w.tdb, 1).await;
    // The client's enqueue reads queue r as active, and stays open while r is retired.
    let mut enqueueing = client.begin().await.unwrap();
    enqueue(&mut *enqueueing, "r", "late", 1500.0).await;
    let rejected = tokio::time::timeout(
        secs(10),
        db::queues::retire_queue(w.db(), "r", "queue r was removed from the config"),
    )
    .await
    .expect("retiring never waits for a client's enqueue")
    .unwrap();
    assert_eq!(rejected, 0, "the open enqueue's entry is not visible yet");
    enqueueing.commit().await.unwrap();
    assert_eq!(
        status_of(w.db(), "late").await,
        [("r".into(), "queued".into(), None)],
        "the race: an entry in a retired queue"
    );

    // The supervisor's sweep (every poll interval) finds it and rejects it with a reason.
    db::queues::retire_unlisted(w.db(), "sweeper", &["q".into()], secs(15))
        .await
        .unwrap();
    assert_eq!(
        status_of(w.db(), "late").await,
        [(
            "r".into(),
            "rejected".into(),
            Some("queue r is not served: no matchmaker config lists it".into())
        )]
    );
    refused(
        &client,
        "SELECT enqueue('r', 'later', 1500)",
        &["queue = 'r': unknown queue; queues: q"],
    )
    .await;
    assert_contract_invariants(w.db()).await;
}

#[tokio::test]
async fn retiring_a_queue_waits_for_a_clients_row_lock_by_the_lock_timeout_at_most() {
    let w = World::new().await;
    let (_, client) = client_login(&w.tdb, 1).await;
    enqueue(&client, "r", "held", 1500.0).await;
    // A keep_alive in an open transaction holds the entry's row.
    let mut refreshing = client.begin().await.unwrap();
    let n: i32 = sqlx::query_scalar("SELECT keep_alive('{held}', 'r')")
        .fetch_one(&mut *refreshing)
        .await
        .unwrap();
    assert_eq!(n, 1);

    let err = tokio::time::timeout(
        secs(10),
        db::queues::retire_queue(w.db(), "r", "queue r was removed from the config"),
    )
    .await
    .expect("retiring never waits for a client without bound")
    .expect_err("the client's open keep_alive holds the entry's row");
    assert!(
        err.to_string().contains("lock timeout"),
        "the wait ends with the lock timeout: {err}"
    );
    let active: bool = sqlx::query_scalar("SELECT active FROM queues WHERE queue = 'r'")
        .fetch_one(w.db())
        .await
        .unwrap();
    assert!(active, "nothing retired by the failed attempt");

    // The client commits; the retry retires the queue and rejects the entry with it.
    refreshing.commit().await.unwrap();
    let rejected = db::queues::retire_queue(w.db(), "r", "queue r was removed from the config")
        .await
        .unwrap();
    assert_eq!(rejected, 1);
    assert_eq!(
        status_of(w.db(), "held").await,
        [(
            "r".into(),
            "rejected".into(),
            Some("queue r was removed from the config".into())
        )]
    );
    assert_contract_invariants(w.db()).await;
}

#[tokio::test]
async fn a_party_cannot_be_split_or_joined() {
    let mut w = World::new().await;
    let (_, a) = client_login(&w.tdb, 1).await;
    let (_, b) = client_login(&w.tdb, 1).await;
    enqueue_party(&a, "q", "crew")
        .members_at(&["bob", "carol"], 1500.0, "eu", 35.0)
        .await;
    let before = fingerprint(w.db()).await;

    // (c) Joining a queued party, by its id. (Another login's "crew" is its own party:
    // see two_logins_may_each_queue_a_party_of_one_id.)
    refused(
        &a,
        r#"SELECT * FROM enqueue_party('q', 'crew', '[{"player_id": "dan", "skill": 1500},
                                                      {"player_id": "eve", "skill": 1500}]')"#,
        &["party_id = 'crew': is already queued in queue q (cancel it first)"],
    )
    .await;
    // Taking a member out into a party of one's own, or queueing a member alone.
    refused(
        &a,
        r#"SELECT * FROM enqueue_party('q', 'crew2', '[{"player_id": "bob", "skill": 1500},
                                                       {"player_id": "mallory", "skill": 1500}]')"#,
        &["members[].player_id = 'bob': is already queued in queue q"],
    )
    .await;
    refused(
        &a,
        "SELECT enqueue('q', 'carol', 1500)",
        &["player_id = 'carol': is already queued in queue q"],
    )
    .await;
    // Rows by hand.
    for sql in [
        "INSERT INTO queue_entries (queue, player_id, party_id, skill)
             VALUES ('q', 'mallory', 'crew', 1500)",
        "UPDATE queue_entries SET party_id = NULL, party_key = NULL WHERE player_id = 'bob'",
        "UPDATE queue_entries SET party_size = 1 WHERE party_id = 'crew'",
    ] {
        denied(&a, sql).await;
    }
    // Another login cannot cancel (or see) a member.
    assert_eq!(cancel(&b, "carol").await, 0);
    assert_eq!(fingerprint(w.db()).await, before, "nothing changed");

    // Cancelling one member cancels the party.
    assert_eq!(cancel(&a, "bob").await, 2);
    assert_eq!(
        status_of(w.db(), "bob").await,
        [(
            "q".into(),
            "cancelled".into(),
            Some("cancelled by the client".into())
        )]
    );
    assert_eq!(
        status_of(w.db(), "carol").await,
        [(
            "q".into(),
            "cancelled".into(),
            Some("party member bob cancelled".into())
        )]
    );

    // The round goes on without them.
    solos(&a, "q", &["s0", "s1", "s2", "s3", "s4", "s5"]).await;
    let report = w.round().await;
    assert_eq!((report.players, report.matched), (6, 6), "{report:?}");
    assert_contract_invariants(w.db()).await;
}

#[tokio::test]
async fn two_logins_may_each_queue_a_party_of_one_id() {
    let mut w = World::new().await;
    let (_, a) = client_login(&w.tdb, 1).await;
    let (_, b) = client_login(&w.tdb, 1).await;
    enqueue_party(&a, "q", "crew")
        .members_at(&["bob", "carol"], 1500.0, "eu", 35.0)
        .await;
    // Another login's party id neither blocks this one's nor says that it is queued.
    enqueue_party(&b, "q", "crew")
        .members_at(&["dan", "eve"], 1500.0, "eu", 35.0)
        .await;
    refused(
        &b,
        r#"SELECT * FROM enqueue_party('q', 'crew', '[{"player_id": "fay", "skill": 1500},
                                                      {"player_id": "gus", "skill": 1500}]')"#,
        &["party_id = 'crew': is already queued in queue q (cancel it first)"],
    )
    .await;
    // A third login picks the id the daemon would give one of them if it named them apart
    // by their keys: still three parties.
    let (_, c) = client_login(&w.tdb, 1).await;
    let key: i64 =
        sqlx::query_scalar("SELECT max(party_key) FROM queue_entries WHERE party_id = 'crew'")
            .fetch_one(w.db())
            .await
            .unwrap();
    enqueue_party(&c, "q", &format!("crew#{key}"))
        .members_at(&["hal", "ida"], 1500.0, "eu", 35.0)
        .await;

    // Three parties of two: two matches of 3v3 with solos, each party on one team.
    solos(&a, "q", &["s0", "s1", "s2", "s3", "s4", "s5"]).await;
    let report = w.round().await;
    assert_eq!((report.players, report.matched), (12, 12), "{report:?}");
    let team_of = |rows: &[(String, i64, i32)], p: &str| {
        rows.iter()
            .find(|(id, _, _)| id == p)
            .map(|(_, m, t)| (*m, *t))
            .unwrap_or_else(|| panic!("{p} not matched: {rows:?}"))
    };
    let rows: Vec<(String, i64, i32)> =
        sqlx::query_as("SELECT player_id, match_id, team FROM match_players")
            .fetch_all(w.db())
            .await
            .unwrap();
    for (x, y) in [("bob", "carol"), ("dan", "eve"), ("hal", "ida")] {
        assert_eq!(team_of(&rows, x), team_of(&rows, y), "party {x}+{y} split");
    }
    let crews: Vec<(String, String)> = sqlx::query_as(
        "SELECT player_id, party_id FROM match_players WHERE party_id LIKE 'crew%'
          ORDER BY player_id",
    )
    .fetch_all(w.db())
    .await
    .unwrap();
    let crew_key = format!("crew#{key}");
    assert_eq!(
        crews,
        [
            ("bob", "crew"),
            ("carol", "crew"),
            ("dan", "crew"),
            ("eve", "crew"),
            ("hal", crew_key.as_str()),
            ("ida", crew_key.as_str()),
        ]
        .map(|(p, c)| (p.to_string(), c.to_string())),
        "the rows keep the ids their logins gave"
    );
    assert_contract_invariants(w.db()).await;
}

/// Two calls of one login for one player at once (a client's retry while its first call
/// is still open): the second waits for the first, then is refused readably if the first
/// committed, or goes in if it rolled back. Never the bare unique violation, never two
/// queued rows. (Another login's call for the same id is another player's: it waits for
/// nothing, see tenancy_ids.rs.)
#[tokio::test]
async fn two_enqueues_of_one_player_at_once_queue_it_once() {
    let w = World::new().await;
    let (_, a) = client_login(&w.tdb, 2).await;
    let b = a.clone();
    for (player, first_commits) in [("racer", true), ("racer2", false)] {
        let mut tx = a.begin().await.unwrap();
        let first: i64 = sqlx::query_scalar("SELECT enqueue('q', $1, 1500)")
            .bind(player)
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        let second = tokio::spawn({
            let b = b.clone();
            async move {
                sqlx::query_scalar::<_, i64>("SELECT enqueue('q', $1, 1500)")
                    .bind(player)
                    .fetch_one(&b)
                    .await
            }
        });
        // The second call waits on the first's row.
        let asked = Instant::now();
        while count(
            w.db(),
            "SELECT count(*) FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'
                AND query LIKE 'SELECT enqueue(%'",
        )
        .await
            < 1
        {
            assert!(
                asked.elapsed() < Duration::from_secs(30),
                "the second call never waited"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(!second.is_finished(), "the second call did not wait");
        if first_commits {
            tx.commit().await.unwrap();
            let err = time_limit::within("the second call", second)
                .await
                .unwrap()
                .expect_err("a second queued row");
            let (code, message) = db_error(&err);
            assert_eq!(code, "22023", "{message}");
            assert!(
                message.contains(&format!(
                    "player_id = '{player}': is already queued in queue q (cancel it first)"
                )),
                "{message}"
            );
        } else {
            tx.rollback().await.unwrap();
            let second = time_limit::within("the second call", second)
                .await
                .unwrap()
                .expect("the first call rolled back");
            assert_ne!(second, first);
        }
        let queued: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM queue_entries WHERE player_id = $1 AND status = 'queued'",
        )
        .bind(player)
        .fetch_one(w.db())
        .await
        .unwrap();
        assert_eq!(queued, 1, "{player}");
    }
    assert_contract_invariants(w.db()).await;
}

/// A player the fast path is too strict for (a quote in a region name shows as a backslash
/// in the map's text) goes in through the slow route that checks rule by rule, once: a
/// second call is refused as already queued on that route too.
#[tokio::test]
async fn a_player_only_the_slow_route_accepts_is_queued_once() {
    let w = World::new().await;
    let (_, a) = client_login(&w.tdb, 1).await;
    let sql = r#"SELECT enqueue('q', 'quoted', 1500, '{"eu \"north\"": 30}')"#;
    let id: i64 = sqlx::query_scalar(sql).fetch_one(&a).await.unwrap();
    let latencies: serde_json::Value =
        sqlx::query_scalar("SELECT latencies FROM queue_entries WHERE entry_id = $1")
            .bind(id)
            .fetch_one(w.db())
            .await
            .unwrap();
    assert_eq!(latencies, serde_json::json!({"eu \"north\"": 30}));
    refused(
        &a,
        sql,
        &["player_id = 'quoted': is already queued in queue q (cancel it first)"],
    )
    .await;
    assert_contract_invariants(w.db()).await;
}

async fn visible_players(client: &PgPool) -> Vec<String> {
    sqlx::query_scalar("SELECT player_id FROM player_status ORDER BY player_id")
        .fetch_all(client)
        .await
        .unwrap()
}

async fn visible_matches(client: &PgPool) -> Vec<(i64, String)> {
    sqlx::query_as("SELECT match_id, player_id FROM match_details ORDER BY player_id")
        .fetch_all(client)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_login_sees_and_cancels_only_its_own_players() {
    let mut w = World::new().await;
    let (_, a) = client_login(&w.tdb, 1).await;
    let (_, b) = client_login(&w.tdb, 1).await;
    solos(&a, "q", &["a0", "a1", "a2", "a3", "a4", "a5"]).await;
    let first = w.round().await;
    assert_eq!(first.matched, 6);
    solos(&b, "q", &["b0", "b1", "b2", "b3", "b4", "b5"]).await;
    let second = w.round().await;
    assert_eq!(second.matched, 6);
    solos(&a, "q", &["a6"]).await;
    enqueue_party(&a, "q", "apar")
        .members_at(&["a7", "a8"], 1500.0, "eu", 35.0)
        .await;

    assert_eq!(
        visible_players(&a).await,
        ["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"]
    );
    assert_eq!(
        visible_players(&b).await,
        ["b0", "b1", "b2", "b3", "b4", "b5"]
    );
    let b_sees = visible_matches(&b).await;
    assert_eq!(b_sees.len(), 6, "{b_sees:?}");
    assert!(b_sees.iter().all(|(_, p)| p.starts_with('b')), "{b_sees:?}");
    let a_sees = visible_matches(&a).await;
    assert_eq!(a_sees.len(), 6);
    assert!(a_sees.iter().all(|(_, p)| p.starts_with('a')), "{a_sees:?}");
    let a_match = a_sees[0].0;
    let by_id: i64 = sqlx::query_scalar("SELECT count(*) FROM match_details WHERE match_id = $1")
        .bind(a_match)
        .fetch_one(&b)
        .await
        .unwrap();
    assert_eq!(by_id, 0, "another login's match, asked for by id");
    let by_player: i64 = count(
        &b,
        "SELECT count(*) FROM player_status WHERE player_id IN ('a0', 'a6', 'a7')",
    )
    .await;
    assert_eq!(by_player, 0, "another login's players, asked for by id");

    // B cannot cancel or refresh A's waiting players.
    let before = fingerprint(w.db()).await;
    for p in ["a6", "a7", "a8", "a0"] {
        assert_eq!(cancel(&b, p).await, 0, "{p}");
    }
    let refreshed: i32 = sqlx::query_scalar("SELECT keep_alive('{a6,a7,a8}')")
        .fetch_one(&b)
        .await
        .unwrap();
    assert_eq!(refreshed, 0);
    let all_queues: i32 = sqlx::query_scalar("SELECT cancel('a6', NULL)")
        .fetch_one(&b)
        .await
        .unwrap();
    assert_eq!(all_queues, 0);
    assert_eq!(fingerprint(w.db()).await, before, "A's entries untouched");

    // A function of B's own in the condition runs only on B's rows (security_barrier
    // views): it would raise on any other player it were shown.
    let mut conn = b.acquire().await.unwrap();
    sqlx::query(
        "CREATE FUNCTION pg_temp.peek(p text) RETURNS boolean
         LANGUAGE plpgsql IMMUTABLE COST 0.0000001 AS $$
         BEGIN
             IF p NOT LIKE 'b%' THEN RAISE EXCEPTION 'saw %', p; END IF;
             RETURN true;
         END $$",
    )
    .execute(&mut *conn)
    .await
    .unwrap();
    for sql in [
        "SELECT count(*) FROM player_status WHERE pg_temp.peek(player_id)",
        "SELECT count(*) FROM player_status WHERE pg_temp.peek(player_id) AND queue = 'q'",
        "SELECT count(*) FROM match_details WHERE pg_temp.peek(player_id)",
        "SELECT count(*) FROM match_details WHERE pg_temp.peek(player_id) AND match_id > 0",
    ] {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&mut *conn)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(n, 6, "{sql}");
    }
    drop(conn);

    // The countdown is everyone's: a count, no player.
    let look = w.worker.step().await.unwrap();
    assert!(matches!(look, StepOutcome::Waiting { .. }), "{look:?}");
    let pool: i32 = sqlx::query_scalar("SELECT pool_size FROM queue_countdown WHERE queue = 'q'")
        .fetch_one(&b)
        .await
        .unwrap();
    assert_eq!(pool, 3, "a6, a7, a8");
    assert_contract_invariants(w.db()).await;
}

#[tokio::test]
async fn huge_and_unknown_inputs_are_refused_readably() {
    let w = World::new().await;
    let (_, client) = client_login(&w.tdb, 1).await;
    let before = fingerprint(w.db()).await;

    // (h) A latency map of 50,000 regions.
    let regions: serde_json::Map<String, serde_json::Value> = (0..50_000)
        .map(|i| (format!("r{i}"), serde_json::json!(i % 300)))
        .collect();
    let map = serde_json::Value::Object(regions);
    let text = map.to_string();
    assert!(text.len() >= 186 * 1024, "{} bytes", text.len());
    let started = Instant::now();
    for (field, sql) in [
        (
            "latencies",
            "SELECT enqueue(queue => 'q', player_id => 'big', skill => 1500, latencies => $1::jsonb)",
        ),
        (
            "peer_pings",
            "SELECT enqueue(queue => 'q', player_id => 'big', skill => 1500, peer_pings => $1::jsonb)",
        ),
    ] {
        let err = sqlx::query(sql)
            .bind(&text)
            .execute(&client)
            .await
            .expect_err("refused");
        let (code, message) = db_error(&err);
        assert_eq!(code, "22023", "{message}");
        assert!(message.starts_with(&format!("{field} = {{")), "{message}");
        assert!(message.contains("has more than"), "{message}");
        assert!(message.len() < 200, "readable: {} chars", message.len());
    }
    assert!(started.elapsed() < secs(5), "{:?}", started.elapsed());

    // A megabyte of player id, a hundred thousand roles, a party of ten thousand.
    let message = refused(
        &client,
        "SELECT enqueue('q', repeat('x', 1000000), 1500)",
        &["player_id = 'xxx", "...: is longer than 64 characters"],
    )
    .await;
    assert!(message.len() < 200);
    let message = refused(
        &client,
        "SELECT enqueue('r', 'p', 1500,
                        roles => (SELECT array_agg('role' || i) FROM generate_series(1, 100000) i))",
        &["roles = {role1,role2,", "has more than 16 roles"],
    )
    .await;
    assert!(message.len() < 200);
    refused(
        &client,
        "SELECT * FROM enqueue_party('q', 'horde',
             (SELECT jsonb_agg(jsonb_build_object('player_id', 'h' || i, 'skill', 1500))
                FROM generate_series(1, 10000) i))",
        &["members = 10000 members: a party in queue q has 2 to 3 members"],
    )
    .await;

    // (i) An unknown queue: the message lists the queues there are.
    refused(
        &client,
        "SELECT enqueue('ranked_9v9', 'p', 1500)",
        &["queue = 'ranked_9v9': unknown queue; queues: q, r"],
    )
    .await;
    refused(
        &client,
        r#"SELECT * FROM enqueue_party('ranked_9v9', 'crew', '[{"player_id": "a", "skill": 1},
                                                             {"player_id": "b", "skill": 1}]')"#,
        &["queue = 'ranked_9v9': unknown queue; queues: q, r"],
    )
    .await;
    assert_eq!(fingerprint(w.db()).await, before, "nothing written");
    assert_contract_invariants(w.db()).await;
}

/// Malformed calls: (SQL as the client, what the message must contain). The database has
/// alice and the party crew (bob, carol) queued in q by this login, zoe by another (whose
/// zoe is another player: this login's zoe is not refused, see tenancy_ids.rs).
const MALFORMED: &[(&str, &[&str])] = &[
    // Player ids.
    (
        "SELECT enqueue('q', '', 1500)",
        &["player_id = '': is required (1-64 characters)"],
    ),
    (
        "SELECT enqueue('q', NULL, 1500)",
        &["player_id = NULL: is required (1-64 characters)"],
    ),
    (
        "SELECT enqueue('q', repeat('x', 65), 1500)",
        &["player_id = 'xxxxx", "is longer than 64 characters"],
    ),
    (
        r"SELECT enqueue('q', E'new\nline', 1500)",
        &["player_id = 'new", "contains control characters"],
    ),
    (
        r"SELECT enqueue('q', E'tab\there', 1500)",
        &["player_id = 'tab", "contains control characters"],
    ),
    (
        r"SELECT enqueue('q', E'bell\x07', 1500)",
        &["player_id = 'bell", "contains control characters"],
    ),
    // Skill, its uncertainty, side.
    (
        "SELECT enqueue('q', 'p1', 'NaN')",
        &["skill = NaN: must be a finite number in [-1000000, 1000000]"],
    ),
    (
        "SELECT enqueue('q', 'p1', 'Infinity')",
        &["skill = Infinity: must be a finite number"],
    ),
    (
        "SELECT enqueue('q', 'p1', '-Infinity')",
        &["skill = -Infinity: must be a finite number"],
    ),
    (
        "SELECT enqueue('q', 'p1', 1e300)",
        &["skill = 1e+300: must be a finite number in [-1000000, 1000000]"],
    ),
    (
        "SELECT enqueue('q', 'p1', -1000001)",
        &["skill = -1000001: must be a finite number"],
    ),
    (
        "SELECT enqueue('q', 'p1', NULL)",
        &["skill = NULL: is required (queue q has no built-in rating)"],
    ),
    (
        "SELECT enqueue('q', 'p1', 1500, skill_sigma => -1)",
        &["skill_sigma = -1: must be a number in [0, 1000000]"],
    ),
    (
        "SELECT enqueue('q', 'p1', 1500, skill_sigma => 'NaN')",
        &["skill_sigma = NaN: must be a number in [0, 1000000]"],
    ),
    (
        "SELECT enqueue('q', 'p1', 1500, side => 1.5)",
        &["side = 1.5: must be in [0, 1] (0: first team, 1: second)"],
    ),
    (
        "SELECT enqueue('q', 'p1', 1500, side => -0.1)",
        &["side = -0.1: must be in [0, 1]"],
    ),
    (
        "SELECT enqueue('q', 'p1', 1500, side => 'NaN')",
        &["side = NaN: must be in [0, 1]"],
    ),
    // Latencies.
    (
        "SELECT enqueue('q', 'p1', 1500, latencies => '[]')",
        &["latencies = []: must be a JSON object of names to milliseconds"],
    ),
    (
        r#"SELECT enqueue('q', 'p1', 1500, latencies => '[{"eu": 20}]')"#,
        &[r#"latencies = [{"eu": 20}]: must be a JSON object"#],
    ),
    (
        r#"SELECT enqueue('q', 'p1', 1500, latencies => '"eu"')"#,
        &[r#"latencies = "eu": must be a JSON object"#],
    ),
    (
        "SELECT enqueue('q', 'p1', 1500, latencies => NULL)",
        &["latencies = NULL: must be a JSON object"],
    ),
    (
        r#"SELECT enqueue('q', 'p1', 1500, latencies => '{"eu": "25"}')"#,
        &[r#"latencies.eu = "25": must be a number of ms"#],
    ),
    (
        r#"SELECT enqueue('q', 'p1', 1500, latencies => '{"eu": null}')"#,
        &["latencies.eu = null: must be a number of ms"],
    ),
    (
        r#"SELECT enqueue('q', 'p1', 1500, latencies => '{"eu": {"ms": 25}}')"#,
        &[r#"latencies.eu = {"ms": 25}: must be a number of ms"#],
    ),
    (
        r#"SELECT enqueue('q', 'p1', 1500, latencies => '{"eu": -1}')"#,
        &["latencies.eu = -1: must be between 0 and 10000 ms"],
    ),
    (
        r#"SELECT enqueue('q', 'p1', 1500, latencies => '{"eu": 10001}')"#,
        &["latencies.eu = 10001: must be between 0 and 10000 ms"],
    ),
    (
        "SELECT enqueue('q', 'p1', 1500,
                        latencies => (SELECT jsonb_object_agg('dc' || i, 20)
                                        FROM generate_series(1, 33) i))",
        &["latencies = {", "has more than 32 entries"],
    ),
    (
        r#"SELECT enqueue('q', 'p1', 1500, latencies => '{"": 20}')"#,
        &["latencies key = '': is required"],
    ),
    (
        "SELECT enqueue('q', 'p1', 1500, latencies => jsonb_build_object(repeat('r', 65), 20))",
        &["latencies key = 'rrrr", "is longer than 64 characters"],
    ),
    (
        r"SELECT enqueue('q', 'p1', 1500, latencies => jsonb_build_object(E'e\tu', 20))",
        &["latencies key = ", "contains control characters"],
    ),
    (
        r#"SELECT enqueue('r', 'p1', 1500, latencies => '{"eu": 20, "mars": 20}')"#,
        &["latencies = 'mars': unknown region; this queue's regions: eu, us"],
    ),
    // Peer pings.
    (
        "SELECT enqueue('q', 'p1', 1500,
                        peer_pings => (SELECT jsonb_object_agg('peer' || i, 20)
                                         FROM generate_series(1, 101) i))",
        &["peer_pings = {", "has more than 100 entries"],
    ),
    (
        r#"SELECT enqueue('q', 'p1', 1500, peer_pings => '{"bob": -5}')"#,
        &["peer_pings.bob = -5: must be between 0 and 10000 ms"],
    ),
    (
        r#"SELECT enqueue('q', 'p1', 1500, peer_pings => '{"bob": "fast"}')"#,
        &[r#"peer_pings.bob = "fast": must be a number of ms"#],
    ),
    (
        "SELECT enqueue('q', 'p1', 1500, peer_pings => '[]')",
        &["peer_pings = []: must be a JSON object"],
    ),
    // Roles.
    (
        "SELECT enqueue('r', 'p1', 1500, roles => '{mage}')",
        &["roles = 'mage': unknown role; this queue's roles: tank, healer, dps"],
    ),
    (
        "SELECT enqueue('q', 'p1', 1500, roles => '{tank}')",
        &["roles = 'tank': this queue has no roles"],
    ),
    (
        "SELECT enqueue('r', 'p1', 1500, roles => '{tank,tank}')",
        &["roles = {tank,tank}: names a role twice"],
    ),
    (
        "SELECT enqueue('r', 'p1', 1500,
                        roles => (SELECT array_agg('role' || i) FROM generate_series(1, 17) i))",
        &["roles = {role1,", "has more than 16 roles"],
    ),
    (
        "SELECT enqueue('r', 'p1', 1500, roles => ARRAY['tank', NULL])",
        &["roles = NULL: unknown role; this queue's roles: tank, healer, dps"],
    ),
    (
        r#"SELECT enqueue('r', 'p1', 1500, roles => '{""}')"#,
        &["roles = '': unknown role"],
    ),
    (
        "SELECT enqueue('q', 'p1', 1500, roles => NULL)",
        &["roles = NULL: must be an array (empty: any role)"],
    ),
    // Queues.
    (
        "SELECT enqueue('nope', 'p1', 1500)",
        &["queue = 'nope': unknown queue; queues: q, r"],
    ),
    (
        "SELECT enqueue(NULL, 'p1', 1500)",
        &["queue = NULL: unknown queue; queues: q, r"],
    ),
    // Already queued: this login's, a party member.
    (
        "SELECT enqueue('q', 'alice', 1500)",
        &["player_id = 'alice': is already queued in queue q (cancel it first)"],
    ),
    (
        "SELECT enqueue('q', 'bob', 1500)",
        &["player_id = 'bob': is already queued in queue q"],
    ),
    // Parties: size, members, fields.
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1500}]')"#,
        &[
            "members = 1 member: a party in queue q has 2 to 3 members (enqueue a solo player with enqueue)",
        ],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1500},
             {"player_id": "m2", "skill": 1500}, {"player_id": "m3", "skill": 1500},
             {"player_id": "m4", "skill": 1500}]')"#,
        &["members = 4 members: a party in queue q has 2 to 3 members"],
    ),
    (
        "SELECT * FROM enqueue_party('q', 'pty', '[]')",
        &["members = 0 members: a party in queue q has 2 to 3 members"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1500},
                                                   {"player_id": "m1", "skill": 1600}]')"#,
        &["members[].player_id = 'm1': appears twice in the party"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1500, "nickname": "zz"},
                                                   {"player_id": "m2", "skill": 1500}]')"#,
        &["members[].nickname = zz: unknown field (player_id, skill, skill_sigma"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1"},
                                                   {"player_id": "m2", "skill": 1500}]')"#,
        &["skill = NULL: is required (queue q has no built-in rating)"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": "1500"},
                                                   {"player_id": "m2", "skill": 1500}]')"#,
        &[r#"members[].skill = "1500": must be a number"#],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '{"player_id": "m1", "skill": 1500}')"#,
        &["members = {", "must be a JSON array of members"],
    ),
    (
        "SELECT * FROM enqueue_party('q', 'pty', NULL)",
        &["members = NULL: must be a JSON array of members"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '"m1"')"#,
        &[r#"members = "m1": must be a JSON array of members"#],
    ),
    (
        "SELECT * FROM enqueue_party('q', 'pty', '[1, 2]')",
        &["members[] = 1: must be a JSON object"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[["m1"], ["m2"]]')"#,
        &[r#"members[] = ["m1"]: must be a JSON object"#],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', '', '[{"player_id": "m1", "skill": 1500},
                                                {"player_id": "m2", "skill": 1500}]')"#,
        &["party_id = '': is required (1-64 characters)"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', NULL, '[{"player_id": "m1", "skill": 1500},
                                                  {"player_id": "m2", "skill": 1500}]')"#,
        &["party_id = NULL: is required"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', repeat('p', 65), '[{"player_id": "m1", "skill": 1500},
                                                              {"player_id": "m2", "skill": 1500}]')"#,
        &["party_id = 'pppp", "is longer than 64 characters"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', E'cr\new', '[{"player_id": "m1", "skill": 1500},
                                                       {"player_id": "m2", "skill": 1500}]')"#,
        &["party_id = 'cr", "contains control characters"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": 5, "skill": 1500},
                                                   {"player_id": "m2", "skill": 1500}]')"#,
        &["members[].player_id = 5: must be a string"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"skill": 1500},
                                                   {"player_id": "m2", "skill": 1500}]')"#,
        &["player_id = NULL: is required"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1500, "roles": "tank"},
                                                   {"player_id": "m2", "skill": 1500}]')"#,
        &[r#"members[].roles = "tank": must be a JSON array of role names"#],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1e400},
                                                   {"player_id": "m2", "skill": 1500}]')"#,
        &["members[].skill = 1000", "must be in [-1000000, 1000000]"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1e-400},
                                                   {"player_id": "m2", "skill": 1500}]')"#,
        &["members[].skill = 0.000", "is too close to 0"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1500, "side": 2},
                                                   {"player_id": "m2", "skill": 1500}]')"#,
        &["side = 2: must be in [0, 1]"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1500, "side": "left"},
                                                   {"player_id": "m2", "skill": 1500}]')"#,
        &[r#"members[].side = "left": must be a number"#],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1500, "skill_sigma": -3},
                                                   {"player_id": "m2", "skill": 1500}]')"#,
        &["skill_sigma = -3: must be a number in [0, 1000000]"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1500, "latencies": []},
                                                   {"player_id": "m2", "skill": 1500}]')"#,
        &["latencies = []: must be a JSON object"],
    ),
    (
        r#"SELECT * FROM enqueue_party('r', 'pty', '[{"player_id": "m1", "skill": 1500, "roles": ["mage"]},
                                                   {"player_id": "m2", "skill": 1500}]')"#,
        &["roles = 'mage': unknown role; this queue's roles: tank, healer, dps"],
    ),
    (
        // The first member is fine; the second is not: nothing of the party is written.
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1500},
                                                   {"player_id": "m2", "skill": 1500, "side": 5}]')"#,
        &["side = 5: must be in [0, 1]"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1500},
                                                   {"player_id": "alice", "skill": 1500}]')"#,
        &["members[].player_id = 'alice': is already queued in queue q (cancel it first)"],
    ),
    (
        r#"SELECT * FROM enqueue_party('q', 'crew', '[{"player_id": "m1", "skill": 1500},
                                                    {"player_id": "m2", "skill": 1500}]')"#,
        &["party_id = 'crew': is already queued in queue q (cancel it first)"],
    ),
    (
        r#"SELECT * FROM enqueue_party('nope', 'pty', '[{"player_id": "m1", "skill": 1500},
                                                      {"player_id": "m2", "skill": 1500}]')"#,
        &["queue = 'nope': unknown queue; queues: q, r"],
    ),
    // keep_alive and cancel.
    (
        "SELECT keep_alive((SELECT array_agg('p' || i) FROM generate_series(1, 10001) i))",
        &["player_ids = 10001 ids: must be an array of at most 10000 player ids"],
    ),
    (
        "SELECT keep_alive(NULL)",
        &["player_ids = NULL: must be an array of at most 10000 player ids"],
    ),
    (
        "SELECT cancel('')",
        &["player_id = '': is required (1-64 characters)"],
    ),
    ("SELECT cancel(NULL)", &["player_id = NULL: is required"]),
    (
        "SELECT cancel(repeat('x', 65))",
        &["player_id = 'xxxx", "is longer than 64 characters"],
    ),
    (
        r"SELECT cancel(E'a\nb', 'q')",
        &["player_id = 'a", "contains control characters"],
    ),
];

#[tokio::test]
async fn malformed_inputs_are_refused_with_22023_naming_field_and_rule() {
    let mut w = World::new().await;
    let (_, client) = client_login(&w.tdb, 1).await;
    let (_, other) = client_login(&w.tdb, 1).await;
    enqueue(&client, "q", "alice", 1500.0)
        .latency("eu", 30.0)
        .await;
    enqueue_party(&client, "q", "crew")
        .members_at(&["bob", "carol"], 1500.0, "eu", 35.0)
        .await;
    enqueue(&other, "q", "zoe", 1500.0)
        .latency("eu", 30.0)
        .await;
    assert!(MALFORMED.len() >= 40, "{} cases", MALFORMED.len());

    for (sql, needles) in MALFORMED {
        let before = fingerprint(w.db()).await;
        refused(&client, sql, needles).await;
        assert_eq!(
            fingerprint(w.db()).await,
            before,
            "no row written or changed by: {sql}"
        );
    }
    // Every refusal reads `field = value: rule`.
    for (sql, needles) in MALFORMED {
        assert!(
            needles.iter().any(|n| n.contains(" = ")),
            "the case names a field: {sql}"
        );
    }

    // Everyone queued before is still there, and the next round runs as usual.
    solos(&client, "q", &["dave", "erin"]).await;
    let report = w.round().await;
    assert_eq!((report.players, report.matched), (6, 6), "{report:?}");
    assert_contract_invariants(w.db()).await;
}

/// sqlx's migration lock key for a database (`generate_lock_id` in sqlx-postgres): a
/// client that knows the database's name can take it.
fn sqlx_migration_lock_id(database: &str) -> i64 {
    // CRC-32/ISO-HDLC, bitwise.
    let mut crc = !0u32;
    for b in database.bytes() {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    0x3d32_ad9e * (!crc as i64)
}

#[tokio::test]
async fn a_client_holding_the_migration_lock_cannot_hang_a_start_up() {
    let tdb = fresh_db().await;
    let (_, client) = client_login(&tdb, 1).await;
    let database: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&client)
        .await
        .unwrap();
    let mut held = client.acquire().await.unwrap();
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(sqlx_migration_lock_id(&database))
        .execute(&mut *held)
        .await
        .expect("any role may take an advisory lock");

    let err = db::migrate_waiting(&tdb.pool, Duration::from_millis(300))
        .await
        .expect_err("the migration lock is held");
    let text = err.to_string();
    assert!(
        text.contains("lock timeout") && text.contains("held the migration lock"),
        "{text}"
    );
    // The wait did not leave its timeout on a pooled connection.
    let lock_timeout: String = sqlx::query_scalar("SHOW lock_timeout")
        .fetch_one(&tdb.pool)
        .await
        .unwrap();
    assert_ne!(lock_timeout, "300ms");

    held.close().await.unwrap();
    db::migrate_waiting(&tdb.pool, Duration::from_millis(300))
        .await
        .expect("the lock is gone with the client's session");
}
