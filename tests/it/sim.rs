//! The simulator against a real PostgreSQL: it speaks the client contract of
//! `queue_entries` (parties in one transaction, cancels, clean-up at the end).

use std::collections::BTreeMap;
use std::time::Duration;

use matchmaker::sim::population::{Population, PopulationSpec};
use matchmaker::sim::simulator::{SimulatorOptions, run_simulator};

use crate::support::fresh_db;

#[tokio::test]
async fn simulator_enqueues_parties_cancels_and_cleans_up() {
    let db = fresh_db().await;
    let population = Population::realistic();
    let options = SimulatorOptions {
        queue: "sim_test".into(),
        rate: 40.0,
        duration: Duration::from_secs(3),
        population: 400,
        seed: 5,
        // Everyone cancels quickly: no daemon runs in this test.
        cancel_share: 1.0,
        patience: (Duration::from_millis(200), Duration::from_millis(800)),
        spec: PopulationSpec {
            party_share: 0.4,
            ..PopulationSpec::default()
        },
        ..SimulatorOptions::default()
    };
    let report = run_simulator(
        &db.pool,
        &population,
        &options,
        None,
        std::future::pending(),
    )
    .await
    .expect("the simulator runs");

    let rows: Vec<(String, Option<String>, String, serde_json::Value, f64)> = sqlx::query_as(
        "SELECT player_id, party_id, status, latencies,
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
        rows.iter().all(|r| r.2 == "cancelled"),
        "nothing left queued"
    );

    let regions = population.region_names();
    for (player, _, _, latencies, _) in &rows {
        let map = latencies.as_object().expect("latencies is an object");
        assert_eq!(map.len(), regions.len(), "{player}: {latencies}");
        assert!(map.values().all(|v| v.as_f64().is_some_and(|ms| ms >= 0.0)));
    }

    // A party is enqueued in one transaction: same enqueue time, 2-3 members.
    let mut parties: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (_, party, _, _, at) in &rows {
        if let Some(party) = party {
            parties.entry(party).or_default().push(*at);
        }
    }
    assert!(
        !parties.is_empty() && report.enqueued_in_parties > 0,
        "{report}"
    );
    for (party, times) in &parties {
        // A party may queue more than once in a run; each enqueue adds 2-3 rows.
        assert!(times.len() >= 2, "{party}: {times:?}");
        let mut distinct = times.clone();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        for t in distinct {
            let members = times.iter().filter(|&&x| x == t).count();
            assert!((2..=3).contains(&members), "{party} at {t}: {members}");
        }
    }
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
