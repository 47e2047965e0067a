//! The optimizer embedded in a studio's own backend: one round, no database.
//!
//! `cargo run --release -p matchmaker-optimizer --example embed`

use std::time::Duration;

use matchmaker_optimizer::{Budget, Network, Player, Pool, QueueModel, SolveOptions, solve};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Twelve solo players of a 3v3 queue; a real backend fills latencies, parties, roles.
    let players = (0..12)
        .map(|i| Player {
            id: format!("p{i}"),
            party: None,
            skill: 1200.0 + 50.0 * i as f64,
            skill_sigma: None,
            enqueued_at: None,
            latencies: [("eu".to_string(), 30.0 + i as f64)].into(),
            peer_pings: Default::default(),
            roles: Vec::new(),
            side: None,
            ..Default::default()
        })
        .collect();
    let pool = Pool {
        players,
        ..Pool::default()
    };
    // Two teams of three on dedicated servers; weights and factor parameters live here too.
    let model = QueueModel {
        network: Network::Dedicated,
        ..QueueModel::default()
    };
    let options = SolveOptions {
        budget: Budget::Time(Duration::from_millis(200)),
        seed: 7,
        ..SolveOptions::default()
    };

    let outcome = solve(&pool, &model, &options)?;
    for m in &outcome.matches {
        println!("{:?}  score {:.3}", m.teams, m.score);
    }
    println!("left for the next round: {:?}", outcome.unmatched);
    Ok(())
}
