//! The sample configs in `deploy/config/` are valid configs: the daemon would load them.

use std::path::Path;

use std::time::Duration;

use matchmaker::config::Config;
use matchmaker_optimizer::Network;
use matchmaker_population::population::Population;

fn load(name: &str) -> Config {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/config")
        .join(name);
    Config::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn peer_to_peer_3v3_sample_loads() {
    let config = load("ranked_3v3_p2p.toml");
    let queue = &config.queues[&config.default_queue];
    assert_eq!(config.default_queue, "ranked_3v3");
    assert_eq!((queue.model.teams, queue.model.team_size), (2, 3));
    assert_eq!(queue.model.network, Network::PeerToPeer);
    assert_eq!(queue.tickets.ttl, Duration::from_secs(300));
    assert!(queue.tickets.regions.is_empty());
}

#[test]
fn dedicated_5v5_sample_loads() {
    let config = load("casual_5v5_dedicated.toml");
    let queue = &config.queues[&config.default_queue];
    assert_eq!((queue.model.teams, queue.model.team_size), (2, 5));
    assert_eq!(queue.model.network, Network::Dedicated);
    assert_eq!(queue.model.weights.two_hosts, 0.0);
    // The regions its comment names, the simulator's: `simulate` can play against it.
    assert_eq!(
        queue.tickets.regions,
        Population::realistic().region_names()
    );
    assert_eq!(queue.tickets.ttl, Duration::from_secs(300));
}
