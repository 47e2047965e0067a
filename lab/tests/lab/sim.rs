//! The simulator against a real PostgreSQL: it speaks the client contract (functions and
//! views only): parties in one enqueue_party() call, cancels, keep-alive, refusals
//! counted, the wait for the daemon to publish the queue, the clean-up at the end, and
//! it runs as a login that is only a member of matchmaker_client.

use std::collections::BTreeMap;
use std::time::Duration;

use matchmaker::config::{Config, QueueConfig};
use matchmaker_lab::sim::population::{Population, PopulationSpec};
use matchmaker_lab::sim::simulator::{SimReport, SimulatorOptions, run_simulator};
use sqlx::PgPool;

use crate::support::{fresh_db, time_limit};

/// A 3v3 queue config with these `[tickets]` keys.
fn ticket_config(tickets: &str) -> QueueConfig {
    let config = Config::from_toml_str(&format!(
        "[queues.sim_test]\n[queues.sim_test.round]\nevery = \"1m\"\n\
         [queues.sim_test.tickets]\n{tickets}\n"
    ))
    .expect("test config is valid");
    config.queues["sim_test"].clone()
}

/// What a daemon does when it takes the queue's lease: publish it.
async fn publish(db: &PgPool, config: &QueueConfig) {
    matchmaker::db::queues::publish_queue(db, "sim_test", config, "test")
        .await
        .expect("publish the queue");
}

/// Players who all give up quickly (no daemon runs in these tests).
fn cancelling_options(seconds: u64) -> SimulatorOptions {
    SimulatorOptions {
        queue: "sim_test".into(),
        rate: 40.0,
        duration: Duration::from_secs(seconds),
        population: 400,
        seed: 5,
        cancel_share: 1.0,
        patience: (Duration::from_millis(200), Duration::from_millis(800)),
        spec: PopulationSpec {
            party_share: 0.4,
            ..PopulationSpec::default()
        },
        ..SimulatorOptions::default()
    }
}

async fn simulate(db: &PgPool, options: &SimulatorOptions) -> SimReport {
    run_simulator(
        db,
        &Population::realistic(),
        options,
        None,
        std::future::pending(),
    )
    .await
    .expect("the simulator runs")
}

#[tokio::test]
async fn simulator_enqueues_parties_cancels_and_cleans_up() {
    let db = fresh_db().await;
    publish(&db.pool, &ticket_config("")).await;
    let population = Population::realistic();
    let report = simulate(&db.pool, &cancelling_options(3)).await;

    type Row = (
        String,
        Option<String>,
        Option<i64>,
        Option<i32>,
        String,
        serde_json::Value,
        f64,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT player_id, party_id, party_key, party_size, status, latencies,
                extract(epoch FROM enqueued_at)::float8
           FROM queue_entries WHERE queue = 'sim_test'",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert!(report.enqueued > 0, "{report}");
    assert_eq!(rows.len() as u64, report.enqueued, "{report}");
    assert!(report.cancelled > 0, "{report}");
    assert_eq!(
        report.cancelled + report.cleaned_up,
        report.enqueued,
        "every entry ends cancelled: {report}"
    );
    assert!(
        rows.iter().all(|r| r.4 == "cancelled"),
        "nothing left queued"
    );
    assert_eq!(report.refused, 0, "{report}");

    let regions = population.region_names();
    for (player, _, _, _, _, latencies, _) in &rows {
        let map = latencies.as_object().expect("latencies is an object");
        assert_eq!(map.len(), regions.len(), "{player}: {latencies}");
        assert!(map.values().all(|v| v.as_f64().is_some_and(|ms| ms >= 0.0)));
    }

    // A party is one enqueue_party() call: one party_key for its 2-3 members, who share
    // the enqueue time and the party size. Solo players have neither.
    let mut parties: BTreeMap<i64, Vec<&Row>> = BTreeMap::new();
    for row in &rows {
        match row.2 {
            Some(key) => parties.entry(key).or_default().push(row),
            None => assert!(row.1.is_none() && row.3.is_none(), "{row:?}"),
        }
    }
    assert!(
        !parties.is_empty() && report.enqueued_in_parties > 0,
        "{report}"
    );
    let in_parties: usize = parties.values().map(Vec::len).sum();
    assert_eq!(in_parties as u64, report.enqueued_in_parties);
    for (key, members) in &parties {
        assert!((2..=3).contains(&members.len()), "party {key}: {members:?}");
        assert!(
            members.iter().all(|m| m.3 == Some(members.len() as i32)
                && m.1 == members[0].1
                && m.6 == members[0].6),
            "party {key}: {members:?}"
        );
    }
}

#[tokio::test]
async fn simulator_keeps_its_tickets_alive() {
    let db = fresh_db().await;
    // Tickets expire 6 s after the last keep-alive; the simulator refreshes them every
    // 2 s (ttl / 3, from queue_catalog). Nobody cancels and no daemon matches: every
    // entry waits until the clean-up, 8.5 s in, so the early ones outlive the TTL.
    publish(&db.pool, &ticket_config("ttl = \"6s\"")).await;
    let options = SimulatorOptions {
        rate: 10.0,
        duration: Duration::from_millis(8500),
        cancel_share: 0.0,
        ..cancelling_options(0)
    };
    let report = simulate(&db.pool, &options).await;
    assert!(report.enqueued > 0, "{report}");
    assert!(report.keep_alive_calls >= 3, "{report}");
    assert!(report.kept_alive > 0, "{report}");
    assert_eq!(report.expired, 0, "{report}");
    assert_eq!(report.cleaned_up, report.enqueued, "{report}");

    let (statuses, longest): (Vec<String>, f64) = sqlx::query_as(
        "SELECT array_agg(DISTINCT status),
                max(extract(epoch FROM updated_at - enqueued_at))::float8
           FROM queue_entries WHERE queue = 'sim_test'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    // An expired ticket would still read 'queued' here (no daemon sweeps it) and the
    // clean-up, which cancels what player_status shows queued, would have left it.
    assert_eq!(statuses, ["cancelled"], "{report}");
    assert!(longest > 6.0, "an entry outlived the TTL: {longest} s");
}

#[tokio::test]
async fn simulator_counts_refused_enqueues_and_carries_on() {
    let db = fresh_db().await;
    // The queue knows one region; the simulated players report latencies to ten.
    publish(&db.pool, &ticket_config("regions = [\"eu-west\"]")).await;
    let report = simulate(&db.pool, &cancelling_options(2)).await;
    assert!(report.refused > 0, "{report}");
    assert_eq!(report.enqueued, 0, "{report}");
    let first = report.first_refusal.as_deref().unwrap_or_default();
    assert!(
        first.starts_with("latencies = '") && first.contains("unknown region"),
        "{first}"
    );
    assert!(report.to_string().contains("enqueues refused"), "{report}");
}

#[tokio::test]
async fn simulator_waits_for_the_daemon_to_publish_its_queue() {
    let db = fresh_db().await;
    // Nobody publishes: a clear error after the timeout, naming the queue.
    let options = SimulatorOptions {
        publish_timeout: Duration::from_millis(600),
        ..cancelling_options(2)
    };
    let err = run_simulator(
        &db.pool,
        &Population::realistic(),
        &options,
        None,
        std::future::pending(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("queue \"sim_test\" was not published") && err.contains("none"),
        "{err}"
    );

    // Published a second after the start: the simulator waits, then plays.
    let pool = db.pool.clone();
    let publisher = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        publish(&pool, &ticket_config("")).await;
    });
    let options = SimulatorOptions {
        publish_timeout: Duration::from_secs(30),
        ..cancelling_options(2)
    };
    let report = simulate(&db.pool, &options).await;
    time_limit::within("the publisher", publisher)
        .await
        .unwrap();
    assert!(report.enqueued > 0, "{report}");
}

#[tokio::test]
async fn simulator_runs_as_a_client_login() {
    let db = fresh_db().await;
    publish(&db.pool, &ticket_config("")).await;
    // A studio's login: a member of matchmaker_client, no table privileges. Roles are
    // the cluster's: the name is this test's own, and the role is dropped at the end.
    let role = format!("{}_client", db.name);
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE ROLE {role} LOGIN PASSWORD 'sim' CONNECTION LIMIT 4 IN ROLE matchmaker_client"
    )))
    .execute(&db.pool)
    .await
    .unwrap();
    let client = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect_with(db.options.clone().username(&role).password("sim"))
        .await
        .expect("the client login connects");
    let denied = sqlx::query("SELECT 1 FROM queue_entries LIMIT 1")
        .execute(&client)
        .await;
    assert!(denied.is_err(), "a client reads no table");

    let report = simulate(&client, &cancelling_options(2)).await;
    client.close().await;
    let owners: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT owner FROM queue_entries WHERE queue = 'sim_test'")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    let queued: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM queue_entries WHERE queue = 'sim_test' AND status = 'queued'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP ROLE {role}")))
        .execute(&db.pool)
        .await
        .unwrap();
    assert!(report.enqueued > 0 && report.cancelled > 0, "{report}");
    assert_eq!(report.cancelled + report.cleaned_up, report.enqueued);
    assert_eq!(owners, [role]);
    assert_eq!(queued, 0, "the client cancelled its own entries");
}

#[tokio::test]
async fn simulator_refuses_a_database_without_the_schema() {
    let db = fresh_db().await;
    sqlx::query("DROP TABLE queue_entries CASCADE")
        .execute(&db.pool)
        .await
        .unwrap();
    let err = run_simulator(
        &db.pool,
        &Population::realistic(),
        &SimulatorOptions::default(),
        None,
        std::future::pending(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("matchmaker migrate"), "{err}");
}

/// Against a daemon whose queue has a ready check and a built-in rating: the simulator
/// accepts its players' matches, plays them, and reports each result when it ends; the
/// results move the players' ratings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulator_answers_ready_checks_and_reports_results() {
    let db = fresh_db().await;
    let config = Config::from_toml_str(
        "[daemon]\npoll_interval = \"200ms\"\n\
         [queues.sim_test.round]\nevery = \"1s\"\nbudget = \"50ms\"\n\
         [queues.sim_test.ready_check]\ntimeout = \"5s\"\n\
         [queues.sim_test.rating]\n",
    )
    .expect("test config is valid");
    let daemon = crate::support::spawn_daemon(db.new_pool(4).await, config, "sim");
    let options = SimulatorOptions {
        queue: "sim_test".into(),
        rate: 30.0,
        duration: Duration::from_secs(8),
        population: 300,
        seed: 9,
        cancel_share: 0.0,
        // A match lasts about a second of the run.
        match_duration: Duration::from_secs(60),
        speedup: 60.0,
        requeue_share: 1.0,
        spec: PopulationSpec {
            party_share: 0.0,
            ..PopulationSpec::default()
        },
        ..SimulatorOptions::default()
    };
    let report = time_limit::within("the simulator", simulate(&db.pool, &options)).await;
    daemon.stop().await;
    assert!(report.matches > 0, "{report}");
    assert!(report.accepted > 0, "{report}");
    assert!(report.results_reported > 0, "{report}");
    let (results, rated): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM match_results),
                (SELECT count(*) FROM ratings WHERE matches > 0)",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(results as u64, report.results_reported, "{report}");
    assert!(rated > 0, "the results moved ratings: {report}");
}
