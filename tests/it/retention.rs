//! Bounded history against a real PostgreSQL: pruning deletes what is past the horizon
//! and nothing else, while a round runs; queued entries stay whatever their age; each
//! player's last matches stay as long as the snapshot's history depth needs them; the
//! dry run changes nothing; the daemon prunes on its own. Ages are set with the round
//! clock (a manual clock in the past) or written directly, as the test's superuser.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use matchmaker::config::{Config, QueueConfig};
use matchmaker::daemon::clock::{Clock, ManualClock};
use matchmaker::daemon::round::RoundRunner;
use matchmaker::db::retention::{self, Pruned, QueuePruner};
use matchmaker::db::{self, RoundTrigger};

use crate::support::*;

const DAY: Duration = Duration::from_secs(86_400);

fn config(extra: &str) -> Arc<QueueConfig> {
    let config = Config::from_toml_str(&format!(
        "[queues.q]\n{extra}\n[queues.q.round]\nbudget = \"50ms\"\n"
    ))
    .expect("test config is valid");
    Arc::new(config.queues["q"].clone())
}

/// One pass over `queue`, every batch committed.
async fn prune(db: &sqlx::PgPool, queue: &str, cutoff: DateTime<Utc>, keep: usize) -> Pruned {
    let mut pruner = QueuePruner::new(queue, cutoff, keep, 3);
    retention::prune_queue(db, &mut pruner, Duration::ZERO, DAY, || async { true })
        .await
        .unwrap()
}

async fn ids(db: &sqlx::PgPool, sql: &'static str) -> Vec<i64> {
    sqlx::query_scalar(sql).fetch_all(db).await.unwrap()
}

/// Row counts and id sums of every table pruning touches.
async fn table_counts(db: &sqlx::PgPool) -> Vec<i64> {
    let mut out = Vec::new();
    for sql in [
        "SELECT count(*) FROM rounds",
        "SELECT count(*) FROM matches",
        "SELECT count(*) FROM match_players",
        "SELECT count(*) FROM queue_entries",
        "SELECT coalesce(sum(entry_id), 0)::bigint FROM queue_entries",
        "SELECT coalesce(sum(match_id), 0)::bigint FROM match_players",
    ] {
        out.push(count(db, sql).await);
    }
    out
}

/// The audit's count of match_players rows whose match or entry is gone: their links
/// are not foreign keys, so pruning must keep them whole itself.
async fn players_without_match_or_entry(db: &sqlx::PgPool) -> i64 {
    let audit = audit::audit(db, Default::default()).await.unwrap();
    audit.players_without_match_or_entry
}

/// What a pass deleted: (rounds, matches, match players, entries).
fn deleted(p: &Pruned) -> (u64, u64, u64, u64) {
    (p.rounds, p.matches, p.match_players, p.entries)
}

#[tokio::test]
async fn prune_removes_only_what_is_past_the_horizon_while_a_round_runs() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let config = config("");
    assert_eq!(config.history_matches(), 1);
    let clock = ManualClock::new(t0());

    // Old history: rounds A and B of the same twelve players, round C of six others.
    enqueue_n(db, "q", "p", 12, clock.now()).await;
    run_round(db, &clock, &config).await;
    clock.advance(secs(120));
    enqueue_n(db, "q", "p", 12, clock.now()).await;
    run_round(db, &clock, &config).await;
    clock.advance(secs(120));
    enqueue_n(db, "q", "x", 6, clock.now()).await;
    run_round(db, &clock, &config).await;
    let rounds = ids(db, "SELECT round_id FROM rounds ORDER BY round_id").await;
    let [a, b, c] = rounds[..] else {
        panic!("three rounds: {rounds:?}")
    };
    // Old entries that ended without a match: two cancelled.
    enqueue_n(db, "q", "c", 2, clock.now()).await;
    sqlx::query(
        "UPDATE queue_entries SET status = 'cancelled', reject_reason = 'cancelled by the client',
                updated_at = $1 WHERE player_id LIKE 'c%'",
    )
    .bind(clock.now())
    .execute(db)
    .await
    .unwrap();
    // Queued entries as old as the history: two whose tickets ran out (not yet swept by
    // a leader), one in another queue that nobody serves.
    enqueue_n(db, "q", "w", 2, t0()).await;
    enqueue_n(db, "other", "o", 1, t0()).await;
    sqlx::query(
        "UPDATE queue_entries SET updated_at = $1, expires_at = $1
          WHERE player_id LIKE 'w%' OR player_id LIKE 'o%'",
    )
    .bind(t0())
    .execute(db)
    .await
    .unwrap();

    // Twenty days later a round starts with the twelve players back and six new ones.
    clock.advance(20 * DAY);
    enqueue_n(db, "q", "p", 12, clock.now()).await;
    enqueue_n(db, "q", "n", 6, clock.now()).await;
    let lease = lead(db, &clock).await;
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let prepared = runner
        .prepare("q", config.clone(), RoundTrigger::Manual)
        .await
        .unwrap();
    assert_eq!(prepared.snapshot.entries.len(), 18);
    // Their history: each p player's last match, round B's two matches.
    assert_eq!(prepared.snapshot.history.len(), 2);

    // Pruning runs between the round's snapshot and its commit, horizon 30 days at
    // t0 + 40 days: rounds A, B, C are past it, the running round is not.
    let cutoff = retention::cutoff(db, 30 * DAY, Some(t0() + chrono::Duration::days(40)))
        .await
        .unwrap();
    assert_eq!(cutoff, t0() + chrono::Duration::days(10));
    let before_b: Vec<i64> =
        sqlx::query_scalar("SELECT match_id FROM matches WHERE round_id = ANY($1) ORDER BY 1")
            .bind([b, c])
            .fetch_all(db)
            .await
            .unwrap();
    let pruned = prune(db, "q", cutoff, config.history_matches()).await;
    // Round A: its 2 matches, 12 players, 12 entries; and the 2 cancelled entries. B and
    // C stay: they are their players' last matches, which the snapshot reads.
    assert_eq!(deleted(&pruned), (1, 2, 12, 14));
    assert_eq!(
        ids(db, "SELECT round_id FROM rounds ORDER BY round_id").await,
        [b, c]
    );
    assert_eq!(
        ids(db, "SELECT match_id FROM matches ORDER BY 1").await,
        before_b
    );
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM queue_entries WHERE player_id LIKE 'c%'"
        )
        .await,
        0
    );
    // Queued entries stay, however old.
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM queue_entries WHERE status = 'queued'
                AND (player_id LIKE 'w%' OR player_id LIKE 'o%')"
        )
        .await,
        3
    );
    let other = prune(db, "other", cutoff, 1).await;
    assert!(other.is_empty(), "{other:?}");

    // The round goes on and commits: its pool and the history it read are intact.
    let solved = runner.solve(prepared).await.unwrap();
    let report = runner.commit(solved, &lease).await.unwrap();
    assert_eq!((report.matched, report.matches), (18, 3));
    assert_nobody_matched_twice(db).await;

    // Next pass: round B is no longer anyone's last match; C still is, and the new
    // round is inside the horizon.
    let pruned = prune(db, "q", cutoff, config.history_matches()).await;
    assert_eq!(deleted(&pruned), (1, 2, 12, 12));
    assert_eq!(
        ids(db, "SELECT round_id FROM rounds ORDER BY round_id").await,
        [c, report.round_id]
    );
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM queue_entries WHERE status = 'queued'"
        )
        .await,
        3
    );
    assert_eq!(
        count(db, "SELECT count(*) FROM match_players").await,
        6 + 18
    );
    assert_eq!(a, rounds[0]);
    assert_nobody_matched_twice(db).await;
    assert_eq!(players_without_match_or_entry(db).await, 0);
}

/// match_players' links are written, not checked by foreign keys: a
/// match or an entry deleted around the daemon leaves its match players behind, and the
/// audit (`matchmaker-lab soak`, the fault tests) counts each of them.
#[tokio::test]
async fn the_audit_counts_match_players_whose_match_or_entry_is_gone() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let config = config("");
    let clock = ManualClock::new(t0());
    enqueue_n(db, "q", "p", 12, clock.now()).await;
    run_round(db, &clock, &config).await;
    let matches = ids(db, "SELECT match_id FROM matches ORDER BY match_id").await;
    assert!(matches.len() >= 2, "two matches at least: {matches:?}");
    assert_eq!(players_without_match_or_entry(db).await, 0);

    // As the owner, around the daemon: the first match's row, then one entry of the second.
    let first_players = count(
        db,
        "SELECT count(*) FROM match_players
          WHERE match_id = (SELECT min(match_id) FROM matches)",
    )
    .await;
    assert!(first_players > 0);
    sqlx::query("DELETE FROM matches WHERE match_id = $1")
        .bind(matches[0])
        .execute(db)
        .await
        .unwrap();
    assert_eq!(players_without_match_or_entry(db).await, first_players);
    sqlx::query(
        "DELETE FROM queue_entries
          WHERE entry_id = (SELECT min(entry_id) FROM match_players WHERE match_id = $1)",
    )
    .bind(matches[1])
    .execute(db)
    .await
    .unwrap();
    assert_eq!(players_without_match_or_entry(db).await, first_players + 1);
}

/// An entry's match is a copy without a foreign key: the entries a
/// match took from other queues (withdrawn) go by their own age in their own queue,
/// before or after the match, and the matched ones go with their match.
#[tokio::test]
async fn withdrawn_entries_go_by_their_age_in_their_own_queue() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let config = config("");
    let clock = ManualClock::new(t0());
    // Six players queued in q and in a second queue; q's round matches them and
    // withdraws their other entries, naming the match.
    enqueue_n(db, "q", "p", 6, clock.now()).await;
    enqueue_n(db, "other", "p", 6, clock.now()).await;
    run_round(db, &clock, &config).await;
    let match_id = count(db, "SELECT max(match_id) FROM matches").await;
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM queue_entries WHERE queue = 'other' AND status = 'withdrawn'"
        )
        .await,
        6
    );
    // Twenty days later a player queues in the second queue: newer than the cutoff.
    clock.advance(20 * DAY);
    enqueue_n(db, "other", "late", 1, clock.now()).await;
    let cutoff = t0() + chrono::Duration::days(10);

    // The second queue first: its six withdrawn entries, while their match still stands.
    let other = prune(db, "other", cutoff, 0).await;
    assert_eq!(deleted(&other), (0, 0, 0, 6));
    assert_eq!(
        count(db, "SELECT count(*) FROM match_players").await,
        6,
        "the match and its players stay with q"
    );
    // Then q: the match, its players and their matched entries (the round stays: it is
    // the queue's last, which the countdown names).
    let q = prune(db, "q", cutoff, 0).await;
    assert_eq!(deleted(&q), (0, 1, 6, 6));
    assert_eq!(
        ids(
            db,
            "SELECT entry_id FROM queue_entries WHERE match_id IS NOT NULL"
        )
        .await,
        Vec::<i64>::new(),
        "no entry names match {match_id} any more"
    );
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM queue_entries WHERE player_id = 'late0' AND status = 'queued'"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn the_history_the_depth_needs_is_kept() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    // Depth 2, and the snapshot reads 3 matches per player.
    let mut config = config("[queues.q.opponent_variation]\ndepth = 2\n")
        .as_ref()
        .clone();
    config.round.history_matches = Some(3);
    let config = Arc::new(config);
    assert_eq!(config.history_matches(), 3);
    let clock = ManualClock::new(t0());
    // Five rounds of the same twelve players; then six of them once more.
    for _ in 0..5 {
        enqueue_n(db, "q", "p", 12, clock.now()).await;
        run_round(db, &clock, &config).await;
        clock.advance(secs(60));
    }
    let players: Vec<matchmaker_optimizer::Player> = (0..6)
        .map(|i| player(&format!("p{i}"), 1000.0 + 37.0 * i as f64, clock.now()))
        .collect();
    db::enqueue::enqueue_many(db, "q", &players, clock.now())
        .await
        .unwrap();
    run_round(db, &clock, &config).await;

    // What the next round of all twelve would read, before and after pruning everything
    // past a horizon that all of it is past.
    enqueue_n(db, "q", "p", 12, clock.now()).await;
    let read = || async {
        let mut h = db::snapshot_pool(db, "q", 100, config.history_matches())
            .await
            .unwrap()
            .history;
        h.sort_by(|x, y| (x.at, &x.teams).cmp(&(y.at, &y.teams)));
        h
    };
    let before = read().await;
    // At least 6 matches (rounds 3-6; more when a round mixes the two halves).
    assert!(before.len() >= 6, "{}", before.len());
    let cutoff = t0() + chrono::Duration::days(10);
    let pruned = prune(db, "q", cutoff, config.history_matches()).await;
    let after = read().await;
    assert_eq!(before, after, "the history a round reads is unchanged");
    assert_recent_matches_agree(db, 3).await;
    // Each player keeps exactly their last 3 matches: p0-p5 rounds 4, 5, 6, p6-p11
    // rounds 3, 4, 5. So rounds 3-6 keep the matches their players need, rounds 1-2 go.
    let kept = count(db, "SELECT count(*) FROM matches").await;
    assert!(pruned.matches >= 4, "{pruned:?}");
    assert_eq!(kept + pruned.matches as i64, 11);
    let per_player: Vec<(String, i64)> =
        sqlx::query_as("SELECT player_id, count(*) FROM match_players GROUP BY 1 ORDER BY 1")
            .fetch_all(db)
            .await
            .unwrap();
    for (player, n) in &per_player {
        assert!(*n >= 3, "{player} kept {n} matches");
    }
    assert_eq!(per_player.len(), 12);
    // Pruning again finds nothing more to do.
    assert!(prune(db, "q", cutoff, 3).await.is_empty());
    // Depth 0 (history off, which a config cannot set): the last matches go too.
    let rest = prune(db, "q", cutoff, 0).await;
    assert_eq!(rest.matches as i64, kept);
    assert_eq!(
        count(db, "SELECT count(*) FROM rounds").await,
        1,
        "the last round"
    );
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM queue_entries WHERE status = 'queued'"
        )
        .await,
        12
    );
}

#[tokio::test]
async fn prune_dry_run_changes_nothing_and_counts_what_prune_deletes() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let config = config("");
    // Forty days ago by the database's clock (the command reads now() there).
    let now: DateTime<Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(db)
        .await
        .unwrap();
    let clock = ManualClock::new(now - chrono::Duration::days(40));
    for _ in 0..3 {
        enqueue_n(db, "q", "p", 12, clock.now()).await;
        run_round(db, &clock, &config).await;
        clock.advance(secs(60));
    }
    enqueue_n(db, "q", "c", 3, clock.now()).await;
    sqlx::query(
        "UPDATE queue_entries SET status = 'expired', reject_reason = 'expired: test',
                updated_at = $1 WHERE player_id LIKE 'c%'",
    )
    .bind(clock.now())
    .execute(db)
    .await
    .unwrap();
    enqueue_n(db, "q", "w", 2, clock.now()).await;

    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("matchmaker.toml");
    std::fs::write(&config_path, "[queues.q]\n").unwrap();
    let prune_cli = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_matchmaker"))
            .args(["prune", "--horizon", "30d", "--config"])
            .arg(&config_path)
            .args(extra)
            .env("DATABASE_URL", tdb.url())
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The queue's line: queue, keep/player, rounds, matches, match players, entries.
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some("q"))
            .unwrap_or_else(|| panic!("no line for queue q:\n{stdout}"))
            .to_string();
        let n: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse().unwrap())
            .collect();
        (stdout, n)
    };

    let before = table_counts(db).await;
    let (text, dry) = prune_cli(&["--dry-run"]);
    assert!(text.starts_with("Dry run (nothing is deleted)"), "{text}");
    assert_eq!(
        table_counts(db).await,
        before,
        "the dry run changed nothing"
    );
    // keep 1; rounds 1 and 2 (round 3 holds everyone's last match); their 4 matches, 24
    // players and entries, and the 3 expired entries.
    assert_eq!(&dry[..5], &[1, 2, 4, 24, 27], "{text}");

    let (text, real) = prune_cli(&[]);
    assert!(text.starts_with("Pruning"), "{text}");
    assert_eq!(&real[..5], &dry[..5], "{text}");
    let after = table_counts(db).await;
    assert_eq!(after[0], before[0] - 2);
    assert_eq!(after[2], before[2] - 24);
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM queue_entries WHERE status = 'queued'"
        )
        .await,
        2
    );

    // A horizon below the minimum is refused with the rule.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_matchmaker"))
        .args(["prune", "--horizon", "30m", "--dry-run"])
        .env("DATABASE_URL", tdb.url())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("shorter than the minimum of 1h"),
        "{stderr}"
    );
}

#[test]
fn retention_config_is_validated() {
    let base = "[queues.q]\n";
    let ok = Config::from_toml_str(&format!(
        "{base}[retention]\nhorizon = \"30d\"\nbatch_size = 200\ninterval = \"5m\"\n"
    ))
    .unwrap();
    assert_eq!(ok.retention.horizon, Some(30 * DAY));
    assert_eq!(ok.retention.batch_size, 200);
    assert_eq!(Config::from_toml_str(base).unwrap().retention.horizon, None);
    for (text, key) in [
        ("horizon = \"30m\"", "retention.horizon"),
        ("batch_size = 0", "retention.batch_size"),
        ("batch_size = 100000", "retention.batch_size"),
        ("interval = \"10ms\"", "retention.interval"),
        ("horizon = \"soon\"", "retention.horizon"),
        ("keep = 3", "retention.keep"),
    ] {
        let err = Config::from_toml_str(&format!("{base}[retention]\n{text}\n")).unwrap_err();
        assert!(
            err.to_string().contains(&format!("`{key}`")),
            "{text}: {err}"
        );
    }
}

/// The daemon as deployed: the queue's leader prunes on its timer while it runs rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_prunes_its_queue_while_running_rounds() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let config_q = config("");
    // History two days old: three rounds of the same twelve players.
    let now: DateTime<Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(db)
        .await
        .unwrap();
    let clock = ManualClock::new(now - chrono::Duration::days(2));
    for _ in 0..3 {
        enqueue_n(db, "q", "p", 12, clock.now()).await;
        run_round(db, &clock, &config_q).await;
        clock.advance(secs(60));
    }
    // A player waiting as long in a second queue (too few players for a round there).
    enqueue_n(db, "idle", "old-waiting", 1, clock.now()).await;
    sqlx::query("UPDATE queue_entries SET updated_at = $1 WHERE player_id LIKE 'old-%'")
        .bind(clock.now())
        .execute(db)
        .await
        .unwrap();
    let last_old_round = count(db, "SELECT max(round_id) FROM rounds").await;

    let config = Config::from_toml_str(
        "default_queue = \"q\"\n[daemon]\npoll_interval = \"200ms\"\nlease_ttl = \"3s\"\nlease_renew = \"1s\"\n\
         [retention]\nhorizon = \"1d\"\ninterval = \"1s\"\nbatch_size = 2\n\
         [queues.q.round]\nevery = \"1h\"\nbudget = \"50ms\"\ntarget_pool = 8\n\
         [queues.idle.round]\nevery = \"1h\"\n",
    )
    .unwrap();
    let daemon = spawn_daemon(db.clone(), config, "pruner");
    // Rounds keep running meanwhile: eight new players, an early start.
    enqueue_n(db, "q", "new", 8, Utc::now()).await;

    // The two older rounds go (round 3 holds each player's last match); the new round,
    // round 3 and the waiting entry stay.
    let start = Instant::now();
    while count(db, "SELECT count(*) FROM rounds WHERE round_id < 3").await > 0
        || count(
            db,
            "SELECT count(*) FROM match_players WHERE player_id LIKE 'new%'",
        )
        .await
            < 6
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the daemon did not prune and match within a minute"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    daemon.stop().await;

    assert_eq!(last_old_round, 3);
    assert_eq!(
        count(db, "SELECT count(*) FROM matches WHERE round_id = 3").await,
        2
    );
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM match_players WHERE player_id LIKE 'p%'"
        )
        .await,
        12
    );
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM match_players WHERE player_id LIKE 'new%'"
        )
        .await,
        6
    );
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM queue_entries
              WHERE queue = 'idle' AND player_id = 'old-waiting0' AND status = 'queued'"
        )
        .await,
        1
    );
    assert_nobody_matched_twice(db).await;
}

#[tokio::test]
async fn ended_backfill_requests_go_with_the_history_and_open_ones_stay() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    // Written as the daemon and request_backfill leave them: old filled, expired and
    // cancelled requests, an old one still open, and a recent filled one.
    for (session, status, days_ago) in [
        ("old-filled", "filled", 20),
        ("old-expired", "expired", 20),
        ("old-cancelled", "cancelled", 20),
        ("old-open", "open", 20),
        ("new-filled", "filled", 1),
    ] {
        sqlx::query(
            "INSERT INTO backfill_requests
                    (queue, session_id, members, open_slots, status, reason, match_id,
                     created_at, expires_at, updated_at)
             VALUES ('q', $1, '[]', '{1,0}', $2,
                     CASE WHEN $2 <> 'open' THEN 'ended' END,
                     CASE WHEN $2 = 'filled' THEN 1 END,
                     $3, $3 + interval '1 minute', $3)",
        )
        .bind(session)
        .bind(status)
        .bind(t0() - chrono::Duration::days(days_ago))
        .execute(db)
        .await
        .unwrap();
    }
    let pruned = prune(db, "q", t0() - chrono::Duration::days(10), 1).await;
    assert_eq!(pruned.backfill_requests, 3, "{pruned:?}");
    let left: Vec<String> =
        sqlx::query_scalar("SELECT session_id FROM backfill_requests ORDER BY session_id")
            .fetch_all(db)
            .await
            .unwrap();
    assert_eq!(left, ["new-filled", "old-open"]);
}

/// An enqueue bucket that has refilled holds nothing (a missing row starts full): a pass
/// deletes it, and the rows of a retired or unknown queue, whatever the horizon, and
/// keeps a bucket still draining.
#[tokio::test]
async fn refilled_enqueue_buckets_go_and_draining_ones_stay() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    // A bucket of q refills in 1000 / 10 = 100 seconds.
    let q = config("[queues.q.limits]\nenqueue_rate = 10.0\nenqueue_burst = 1000.0");
    db::queues::publish_queue(db, "q", q.as_ref(), "test")
        .await
        .unwrap();
    db::queues::publish_queue(db, "r", q.as_ref(), "test")
        .await
        .unwrap();
    db::queues::retire_queue(db, "r", "retired by the test")
        .await
        .unwrap();
    // A real enqueue's bucket: 999 tokens left, taken a moment ago.
    let (login, client) = client_login(&tdb, 1).await;
    enqueue(&client, "q", "alice", 1500.0).await;
    let written: (f64, i32) =
        sqlx::query_as("SELECT tokens, pid FROM call_buckets WHERE login = $1")
            .bind(&login)
            .fetch_one(db)
            .await
            .unwrap();
    assert_eq!(written.0, 999.0);
    // Backends long gone: empty 300 s ago (refilled since), empty 1 s ago (still
    // draining), and buckets of a retired queue and of a queue never published.
    for (pid, queue, tokens, ago) in [
        (1, "q", 0.0, 300.0),
        (2, "q", 0.0, 1.0),
        (3, "r", 0.0, 1.0),
        (4, "gone", 50.0, 1.0),
    ] {
        sqlx::query(
            "INSERT INTO call_buckets (login, pid, queue, tokens, at)
             VALUES ($1, $2, $3, $4, now() - make_interval(secs => $5))",
        )
        .bind(&login)
        .bind(pid)
        .bind(queue)
        .bind(tokens)
        .bind(ago)
        .execute(db)
        .await
        .unwrap();
    }
    let left = || async {
        sqlx::query_as::<_, (i32, String)>(
            "SELECT pid, queue FROM call_buckets ORDER BY pid, queue",
        )
        .fetch_all(db)
        .await
        .unwrap()
    };
    assert_eq!(left().await.len(), 5);

    // Without a horizon (a daemon that keeps all history): the buckets only, in batches.
    let mut pruner = QueuePruner::call_buckets_only("q", 2);
    let pruned = retention::prune_queue(db, &mut pruner, Duration::ZERO, DAY, || async { true })
        .await
        .unwrap();
    assert_eq!((pruned.call_buckets, pruned.batches), (3, 2), "{pruned:?}");
    assert_eq!(
        left().await,
        [(2, "q".to_string()), (written.1, "q".to_string())]
    );

    // A full pass (with a horizon) deletes the draining one once it has refilled.
    sqlx::query("UPDATE call_buckets SET at = at - interval '200 seconds' WHERE pid = 2")
        .execute(db)
        .await
        .unwrap();
    let pruned = prune(db, "q", t0() - chrono::Duration::days(10), 1).await;
    assert_eq!(pruned.call_buckets, 1, "{pruned:?}");
    assert_eq!(left().await, [(written.1, "q".to_string())]);
}

/// A batch the database does not answer within its limit (here: it waits on a table
/// lock, on a pool without `lock_timeout`, as a statement sent into a cut route waits)
/// ends the pass with `Unanswered` and deletes nothing; the next pass deletes it all.
#[tokio::test]
async fn a_batch_not_answered_within_its_limit_is_given_up_and_the_next_pass_finishes() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let q = config("[queues.q.limits]\nenqueue_rate = 10.0\nenqueue_burst = 1000.0");
    db::queues::publish_queue(db, "q", q.as_ref(), "test")
        .await
        .unwrap();
    for pid in 1..=3 {
        sqlx::query(
            "INSERT INTO call_buckets (login, pid, queue, tokens, at)
             VALUES ('gone', $1, 'q', 0, now() - interval '300 seconds')",
        )
        .bind(pid)
        .execute(db)
        .await
        .unwrap();
    }
    let count = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM call_buckets")
            .fetch_one(db)
            .await
            .unwrap()
    };
    let mut holder = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE call_buckets IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *holder)
        .await
        .unwrap();
    let limit = Duration::from_millis(500);
    let started = Instant::now();
    let mut pruner = QueuePruner::call_buckets_only("q", 2);
    let given_up =
        retention::prune_queue(db, &mut pruner, Duration::ZERO, limit, || async { true }).await;
    let waited = started.elapsed();
    assert!(
        matches!(given_up, Err(db::DbError::Unanswered { waited }) if waited == limit),
        "{given_up:?}"
    );
    assert!(waited < Duration::from_secs(5), "gave up after {waited:?}");
    holder.rollback().await.unwrap();
    // The abandoned batch is rolled back: nothing deleted.
    assert_eq!(count().await, 3);

    let mut pruner = QueuePruner::call_buckets_only("q", 2);
    let pruned = retention::prune_queue(db, &mut pruner, Duration::ZERO, limit, || async { true })
        .await
        .unwrap();
    assert_eq!(pruned.call_buckets, 3, "{pruned:?}");
    assert_eq!(count().await, 0);
}
