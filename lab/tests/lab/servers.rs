//! `matchmaker-lab simulate` with a fleet of simulated game servers, against a daemon
//! whose queue requires servers: two servers in one region for players from the whole
//! world, so supply is short. Every match is placed on a server, no server hosts two
//! matches at once (in the fleet's own log and in the matches the daemon wrote), some
//! matches wait for a server, and players are placed all the same.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use matchmaker::config::Config;
use matchmaker::ops::Database;
use matchmaker_lab::sim::game_servers::{FleetOptions, HostEnd};
use matchmaker_lab::sim::population::Population;
use matchmaker_lab::simulate::{LoadOptions, SimulateOptions, simulate};

use crate::support::*;

/// The length of a match on a server; each lasts 80% to 120% of it.
const MATCH_LENGTH: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_fleet_hosts_one_match_per_server_at_a_time() {
    let tdb = fresh_db().await;
    let regions = Population::realistic().region_names();
    assert!(regions.iter().any(|r| r == "eu-west"), "{regions:?}");
    let listed: Vec<String> = regions.iter().map(|r| format!("{r:?}")).collect();
    let config = Config::from_toml_str(&format!(
        "[daemon]\npoll_interval = \"200ms\"\n\
         [queues.fleet_test]\nteams = 2\nteam_size = 2\nnetwork = \"dedicated\"\n\
         [queues.fleet_test.round]\nevery = \"1s\"\nbudget = \"50ms\"\n\
         [queues.fleet_test.tickets]\nregions = [{}]\n\
         [queues.fleet_test.servers]\nrequired = true\nttl = \"6s\"\n",
        listed.join(", ")
    ))
    .expect("test config is valid");
    let daemon = spawn_daemon(tdb.new_pool(4).await, config, "fleet");
    let options = SimulateOptions {
        database: Database {
            database_url: Some(tdb.url()),
            local_pg_dir: PathBuf::from(".local-pg"),
        },
        write_pool: None,
        players: 300,
        duration: Duration::from_secs(20),
        load: LoadOptions {
            queue: "fleet_test".into(),
            rate: Some(8.0),
            population: 600,
            seed: 3,
            // A match lasts 3 s of the run, for the players as for the servers.
            speedup: Some(60.0),
            start_hour: Some(19),
            match_duration: Duration::from_secs(180),
            party_share: 0.0,
            max_party_size: 1,
            cancel_share: 0.0,
            requeue_share: 1.0,
            roles: Vec::new(),
            side_share: 0.0,
            id_prefix: None,
            publish_timeout: Duration::from_secs(30),
            meet: matchmaker_lab::sim::simulator::MeetSpec::none(),
        },
        fleet: FleetOptions {
            servers_per_region: 2,
            regions: vec!["eu-west".into()],
            match_length: Some(MATCH_LENGTH),
            crash_rate: 0.2,
            ..FleetOptions::default()
        },
    };
    let report = time_limit::within("simulate", simulate(&options, std::future::pending()))
        .await
        .expect("simulate runs with a fleet");
    daemon.stop().await;
    eprintln!("{report}");
    let fleet = report.fleet.as_ref().expect("a fleet ran");
    let figures = fleet.figures.as_ref().expect("the owner reads the figures");

    // The run places players, every match on a server of the fleet.
    assert!(report.players.matched > 0, "{report}");
    let (matches, without): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE server_id IS NULL) FROM matches
          WHERE queue = 'fleet_test'",
    )
    .fetch_one(&tdb.pool)
    .await
    .unwrap();
    assert!(matches > 0, "{report}");
    assert_eq!(without, 0, "every match has its server: {report}");
    assert_eq!(figures.placed, matches, "{report}");
    assert_eq!(
        figures.placed_by_region.keys().collect::<Vec<_>>(),
        ["eu-west"],
        "the only servers are in eu-west: {report}"
    );
    assert!(
        figures.cross_region > 0,
        "players from everywhere, servers in one region: {report}"
    );

    // Supply is short: rounds formed matches they could not place, and players stayed
    // queued for want of a server.
    assert!(figures.waited_for_server > 0, "{report}");
    assert!(figures.no_server_players > 0, "{report}");

    // No server hosts two matches at once. In the fleet's log: each hosting began after
    // the server's previous one ended (a crashed server never hosts again: it comes back
    // under a new id).
    let mut by_server: BTreeMap<&str, Vec<_>> = BTreeMap::new();
    for h in &fleet.report.hosted {
        by_server.entry(h.server_id.as_str()).or_default().push(h);
    }
    for (server, hosted) in &by_server {
        for pair in hosted.windows(2) {
            let ended = pair[0].ended.expect("a server's earlier match ended");
            assert!(
                pair[0].end != HostEnd::Crashed,
                "{server} hosted again after its crash"
            );
            assert!(pair[1].seen >= ended, "{server}: {pair:?}");
        }
    }
    // In the matches the daemon wrote: a server's next match is created at least the
    // shortest match length after its previous one (the fleet announces the end only
    // then), whatever the fleet believed.
    let rows: Vec<(String, Vec<f64>)> = sqlx::query_as(
        "SELECT server_id, array_agg(extract(epoch FROM created_at)::float8
                                     ORDER BY created_at)
           FROM matches WHERE queue = 'fleet_test' GROUP BY server_id",
    )
    .fetch_all(&tdb.pool)
    .await
    .unwrap();
    let shortest = MATCH_LENGTH.as_secs_f64() * 0.8;
    for (server, created) in &rows {
        for pair in created.windows(2) {
            assert!(
                pair[1] - pair[0] >= shortest - 0.2,
                "{server} was allocated again {:.2} s after its previous match",
                pair[1] - pair[0]
            );
        }
    }
    // Every match of the fleet's log is the daemon's match on that server.
    let server_of: BTreeMap<i64, String> =
        sqlx::query_as("SELECT match_id, server_id FROM matches WHERE queue = 'fleet_test'")
            .fetch_all(&tdb.pool)
            .await
            .unwrap()
            .into_iter()
            .collect();
    for h in &fleet.report.hosted {
        assert_eq!(server_of.get(&h.match_id), Some(&h.server_id), "{h:?}");
    }
    assert!(
        fleet.report.hosted.len() as i64 >= matches - 2,
        "the fleet saw its allocations (all but those after its last read): {report}"
    );
    // The fleet withdrew every server it announced.
    let left = count(&tdb.pool, "SELECT count(*) FROM servers").await;
    assert_eq!(left, 0, "{report}");
}
