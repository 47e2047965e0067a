//! Replay, what-if and explain against a real PostgreSQL: a round solved with a
//! deterministic budget (restarts) replays to the identical matches; a what-if that
//! changes a weight changes the reported factor; a left-over player's reason is named,
//! by `explain` and by the `player_rounds` view; the CLI does the same end to end.

use std::process::Command;
use std::sync::Arc;

use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::round::RoundRunner;
use matchmaker::db::{self, RoundTrigger};
use matchmaker::ops::explain::explain_player;
use matchmaker::ops::replay::{ReplayOptions, apply_sets, effective_config, replay_round};
use matchmaker_optimizer::{LeftOverKind, Network};
use matchmaker_population::population::{Population, PopulationSpec};

use crate::support::*;

fn args(_database_url: String) -> ReplayOptions {
    ReplayOptions::default()
}

/// A realistic world-wide pool (parties, latencies, sigmas) enqueued into queue `q`.
async fn enqueue_world(db: &sqlx::PgPool, players: usize, seed: u64) {
    let spec = PopulationSpec {
        players,
        network: Network::PeerToPeer,
        now: Some(t0()),
        id_prefix: "w".into(),
        ..PopulationSpec::default()
    };
    let pool = Population::realistic().generate_pool(&spec, seed);
    db::enqueue::enqueue_many(db, "q", &pool.players, t0())
        .await
        .expect("enqueue");
}

#[tokio::test]
async fn a_deterministic_round_replays_to_identical_matches_and_a_weight_what_if_changes_its_factor()
 {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    // restarts: the deterministic budget; two threads in the round, one in the replay
    let config = queue_config("restarts = 4\nmoves_per_restart = 20000\nthreads = 2\nseed = 11");
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let lease = lead(db, &clock).await;

    // Two rounds of the same players: the second reads the first's matches as history.
    enqueue_world(db, 90, 3).await;
    clock.advance(secs(1));
    let first = runner
        .run("q", config.clone(), RoundTrigger::Manual, &lease)
        .await
        .unwrap();
    assert!(first.matches >= 10, "{first:?}");
    sqlx::query("UPDATE queue_entries SET status = 'cancelled' WHERE status = 'queued'")
        .execute(db)
        .await
        .unwrap();
    enqueue_world(db, 90, 3).await;
    clock.advance(secs(5));
    let round = runner
        .run("q", config.clone(), RoundTrigger::Manual, &lease)
        .await
        .unwrap();

    let stored = db::load_round(db, round.round_id).await.unwrap().unwrap();
    assert_eq!(stored.pool.players.len(), 90);
    assert!(
        !stored.pool.history.is_empty(),
        "the history the solver read is stored"
    );
    assert!(
        stored
            .pool
            .players
            .iter()
            .any(|p| p.party.is_some() && !p.latencies.is_empty()),
        "parties and latencies are stored"
    );
    assert_eq!(stored.budget.restarts, Some(4));

    let mut plain = args(tdb.url());
    plain.threads = Some(1);
    let config = effective_config(&stored, &plain).unwrap();
    // the stored config file reads back to the round's config
    assert_eq!(config.hash(), stored.config_hash);
    let replay = replay_round(&stored, &config, &plain).unwrap();
    assert!(replay.identical, "{replay:#?}");
    assert_eq!(replay.same_matches, round.matches);
    assert_eq!(replay.stored_matches, round.matches);
    assert_eq!(replay.replay.matched, round.matched);
    let (a, b) = (replay.stored.score.unwrap(), replay.replay.score.unwrap());
    assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    for (factor, v) in &replay.stored.factors {
        assert!(
            (v - replay.replay.factors[factor]).abs() < 1e-12,
            "{factor}"
        );
    }

    // What-if: ping weighs ten times more. The replay's enemy ping average must move up
    // (the solver now trades skill balance for ping), and the config is another one.
    let mut what_if = args(tdb.url());
    what_if.set = vec!["queue.weights.enemy_ping=30".into()];
    let changed = effective_config(&stored, &what_if).unwrap();
    assert_eq!(changed.model.weights.enemy_ping, 30.0);
    assert_ne!(changed.hash(), stored.config_hash);
    let replay = replay_round(&stored, &changed, &what_if).unwrap();
    let (before, after) = (
        replay.stored.factors["enemy_ping"],
        replay.replay.factors["enemy_ping"],
    );
    assert!(after > before, "enemy_ping {before} -> {after}");
    assert!(!replay.identical);
    assert_eq!(replay.what_if, vec!["--set queue.weights.enemy_ping=30"]);

    // A bad key or value is refused with the key named.
    let err = apply_sets(&config, "q", &["queue.weights.enemy_pong=3".into()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("enemy_pong"), "{err}");
    let err = format!(
        "{:#}",
        apply_sets(&config, "q", &["queue.weights.enemy_ping=-1".into()]).unwrap_err()
    );
    assert!(err.contains("weights.enemy_ping"), "{err}");
}

#[tokio::test]
async fn explain_names_why_a_player_was_left_over() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let lease = lead(db, &clock).await;
    // seven solos of one skill ladder: one match, one player outscored
    enqueue_n(db, "q", "p", 7, t0()).await;
    clock.advance(secs(1));
    let report = runner
        .run(
            "q",
            queue_config("restarts = 2"),
            RoundTrigger::Manual,
            &lease,
        )
        .await
        .unwrap();
    assert_eq!((report.matched, report.left_over), (6, 1));
    let left: String = sqlx::query_scalar(
        "SELECT player_id FROM queue_entries WHERE queue = 'q' AND status = 'queued'",
    )
    .fetch_one(db)
    .await
    .unwrap();

    let e = explain_player(db, &left, 10).await.unwrap();
    assert_eq!(e.rounds.len(), 1, "{e:?}");
    assert_eq!(e.rounds[0].round_id, report.round_id);
    assert_eq!(e.rounds[0].pool_size, 7);
    assert_eq!(e.rounds[0].outcome, "outscored", "{e:?}");
    assert!(
        e.rounds[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("in place of"),
        "{e:?}"
    );
    let matched = explain_player(db, if left == "p0" { "p1" } else { "p0" }, 10)
        .await
        .unwrap();
    assert_eq!(matched.rounds[0].outcome, "matched");
    assert!(matched.rounds[0].match_id.is_some());

    // The view says the same, and only operators (and the daemon) may read it.
    let (outcome, reason): (String, String) = sqlx::query_as(
        "SELECT outcome, reason FROM player_rounds WHERE player_id = $1 AND round_id = $2",
    )
    .bind(&left)
    .bind(report.round_id)
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(outcome, "outscored");
    assert!(reason.contains("in place of"), "{reason}");
    let grants: (bool, bool, bool) = sqlx::query_as(
        "SELECT has_table_privilege('matchmaker_ops', 'player_rounds', 'SELECT'),
                has_table_privilege('matchmaker_client', 'player_rounds', 'SELECT'),
                has_table_privilege('matchmaker_client', 'round_snapshots', 'SELECT')",
    )
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(grants, (true, false, false));
}

#[tokio::test]
async fn the_commit_names_who_left_during_the_solve_and_whose_match_was_dropped() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let lease = lead(db, &clock).await;
    enqueue_n(db, "q", "p", 6, t0()).await;
    let prepared = runner
        .prepare("q", queue_config("restarts = 2"), RoundTrigger::Manual)
        .await
        .unwrap();
    let solved = runner.solve(prepared).await.unwrap();
    assert_eq!(solved.outcome.matches.len(), 1);
    // p0 cancels while "the solver runs"
    assert_eq!(db::enqueue::cancel(db, None, "p0").await.unwrap(), 1);
    let report = runner.commit(solved, &lease).await.unwrap();
    assert_eq!(report.matches, 0);

    let stored = db::load_round(db, report.round_id).await.unwrap().unwrap();
    assert_eq!(
        stored.left_over["p0"].outcome,
        LeftOverKind::LeftDuringSolve
    );
    assert_eq!(stored.left_over["p1"].outcome, LeftOverKind::MatchDropped);
    assert!(
        stored.left_over["p1"].reason.contains("p0"),
        "{:?}",
        stored.left_over["p1"]
    );
    // the dropped match is kept: with the committed ones, the solver's output
    assert_eq!(stored.dropped_matches.len(), 1);
    let replay = replay_round(
        &stored,
        &effective_config(&stored, &args(tdb.url())).unwrap(),
        &args(tdb.url()),
    )
    .unwrap();
    assert!(replay.identical, "{replay:#?}");
}

#[tokio::test]
async fn the_cli_replays_a_round_and_a_range_and_explains_a_player() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let report = round_of_thirteen(db).await;
    assert_eq!(report.left_over, 1);

    let cli = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_matchmaker"))
            .args(args)
            .env("DATABASE_URL", tdb.url())
            .env("NO_COLOR", "1")
            .output()
            .expect("run matchmaker");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        (out.status.success(), text, err)
    };
    let id = report.round_id.to_string();
    let (ok, out, err) = cli(&["replay", &id, "--json"]);
    assert!(ok, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["identical"], true, "{out}");
    assert_eq!(json["stored"]["matched"], 12);

    let (ok, out, err) = cli(&["replay", &id, "--set", "queue.weights.equal_teams=0"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("what-if: --set queue.weights.equal_teams=0"),
        "{out}"
    );
    assert!(out.contains("equal_players"), "{out}");
    // The predictions of both sides' matches, by the round's own predictor.
    assert!(
        out.contains("predicted gap from 50%") && out.contains("stomps expected"),
        "{out}"
    );

    let (ok, out, err) = cli(&[
        "replay",
        "--from",
        "2000-01-01T00:00:00Z",
        "--to",
        "now",
        "--queue",
        "q",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("1 rounds from") && out.contains("1 replayed to identical matches"),
        "{out}"
    );
    assert!(out.contains("lopsided (>=70%)"), "{out}");

    let left: String = sqlx::query_scalar(
        "SELECT player_id FROM queue_entries WHERE queue = 'q' AND status = 'queued'",
    )
    .fetch_one(db)
    .await
    .unwrap();
    let (ok, out, err) = cli(&["explain", &left]);
    assert!(ok, "{err}");
    assert!(out.contains("outscored: "), "{out}");

    let (ok, _, err) = cli(&["replay", "999999"]);
    assert!(!ok);
    assert!(err.contains("no round 999999"), "{err}");
}
