//! The demo's machinery end to end on a real PostgreSQL: the daemon on a fast schedule
//! and the simulator together make rounds; players come back after their match; the
//! status view shows the rounds.

use std::time::Duration;

use matchmaker::config::Config;
use matchmaker::daemon::{self, DaemonOptions};
use matchmaker::ops::status::read_status;
use matchmaker_lab::demo::demo_config;
use matchmaker_lab::sim::population::Population;
use matchmaker_lab::sim::simulator::{SimulatorOptions, run_simulator};
use tokio::sync::watch;

use crate::support::{fresh_db, time_limit};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_and_simulator_make_rounds_and_players_return() {
    let _load = crate::support::TIMING.read().await;
    let db = fresh_db().await;
    let config = demo_config(
        Config::embedded_default(),
        Duration::from_secs(1),
        "ranked_3v3",
    )
    .expect("demo config is valid");
    let (stop_tx, mut stop_rx) = watch::channel(false);
    let daemon = tokio::spawn(daemon::run(
        db.pool.clone(),
        config,
        DaemonOptions::default(),
        async move {
            let _ = stop_rx.wait_for(|s| *s).await;
        },
    ));

    let options = SimulatorOptions {
        queue: "ranked_3v3".into(),
        rate: 30.0,
        duration: Duration::from_secs(10),
        population: 600,
        // A 10-minute match lasts about a second: players come back within the run.
        speedup: 600.0,
        cancel_share: 0.0,
        ..SimulatorOptions::default()
    };
    let report = run_simulator(
        &db.pool,
        &Population::realistic(),
        &options,
        None,
        std::future::pending(),
    )
    .await
    .expect("the simulator runs");
    stop_tx.send(true).unwrap();
    time_limit::within("the daemon to stop", daemon)
        .await
        .unwrap()
        .expect("the daemon stops cleanly");

    assert!(report.matched > 0, "{report}");
    assert!(report.matches > 0, "{report}");
    assert!(
        report.requeued > 0,
        "players queue again after a match: {report}"
    );
    assert!(report.opponent_pairs > 0, "{report}");

    let view = read_status(&db.pool, Some("ranked_3v3"), 50)
        .await
        .expect("status reads");
    assert!(!view.rounds.is_empty());
    let matched: i64 = view.rounds.iter().map(|r| i64::from(r.matched)).sum();
    // A round may commit after the simulator's last look: the database knows at least
    // the matches the simulator saw.
    assert!(matched as u64 >= report.matched, "{matched} vs {report}");
    assert!(view.rounds.iter().any(|r| r.wait_secs.is_some()));
    assert_eq!(view.queues.len(), 1);
    assert_eq!(
        view.queues[0].pool_size, 0,
        "the simulator withdrew its players"
    );
}
