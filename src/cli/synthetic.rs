//! A small seeded pool generator for `matchmaker bench` and the optimizer tests, used
//! until `matchmaker::sim::population` lands: seven regions with a realistic skew
//! (mostly Europe and North America, thin Oceania and South America), latencies from a
//! region-to-region table plus a last-mile term, Elo-like skills dense around 1500 with
//! a thin upper tail, 2-3 player parties from one region, waits up to 12 minutes.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::core::{Player, Pool};

const REGIONS: [&str; 7] = [
    "eu-west",
    "eu-east",
    "us-east",
    "us-west",
    "sa-east",
    "ap-southeast",
    "ap-northeast",
];
/// Share of players per home region (percent).
const SHARE: [u32; 7] = [30, 15, 25, 12, 7, 5, 6];
/// Round-trip ms between regions (symmetric).
const RTT: [[f64; 7]; 7] = [
    [0.0, 30.0, 80.0, 140.0, 190.0, 280.0, 230.0],
    [30.0, 0.0, 105.0, 165.0, 215.0, 260.0, 210.0],
    [80.0, 105.0, 0.0, 65.0, 120.0, 200.0, 160.0],
    [140.0, 165.0, 65.0, 0.0, 170.0, 145.0, 110.0],
    [190.0, 215.0, 120.0, 170.0, 0.0, 310.0, 280.0],
    [280.0, 260.0, 200.0, 145.0, 310.0, 0.0, 110.0],
    [230.0, 210.0, 160.0, 110.0, 280.0, 110.0, 0.0],
];

pub struct SyntheticSpec {
    pub players: usize,
    /// Share of players in parties (0..1).
    pub party_share: f64,
    pub max_party: usize,
    /// Give every player roles from this list (1-2 each); empty: no roles.
    pub roles: Vec<String>,
    /// Share of players with a side preference.
    pub side_share: f64,
    /// Share of players with a skill sigma.
    pub sigma_share: f64,
}

impl Default for SyntheticSpec {
    fn default() -> Self {
        SyntheticSpec {
            players: 300,
            party_share: 0.3,
            max_party: 3,
            roles: Vec::new(),
            side_share: 0.0,
            sigma_share: 0.0,
        }
    }
}

fn normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let u1: f64 = rng.random::<f64>().max(1e-12);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

pub fn synthetic_pool(spec: &SyntheticSpec, seed: u64) -> Pool {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let now: DateTime<Utc> = "2026-11-21T20:00:00Z".parse().unwrap();
    let mut players = Vec::with_capacity(spec.players);
    let mut party_no = 0;
    while players.len() < spec.players {
        let left = spec.players - players.len();
        let size = if rng.random::<f64>() < spec.party_share / 2.0 && left >= 2 {
            rng.random_range(2..=spec.max_party.min(left).max(2))
        } else {
            1
        };
        let mut roll = rng.random_range(0..100u32);
        let home = SHARE
            .iter()
            .position(|&s| {
                if roll < s {
                    true
                } else {
                    roll -= s;
                    false
                }
            })
            .unwrap_or(0);
        let enqueued = now - Duration::milliseconds(rng.random_range(0..12 * 60_000));
        let party = (size > 1).then(|| {
            party_no += 1;
            format!("g{party_no}")
        });
        for _ in 0..size {
            let id = format!("p{}", players.len() + 1);
            let last_mile = 5.0 + 35.0 * rng.random::<f64>();
            let latencies: BTreeMap<String, f64> = REGIONS
                .iter()
                .enumerate()
                .map(|(r, name)| {
                    let ms = RTT[home][r] + last_mile + 10.0 * rng.random::<f64>();
                    (name.to_string(), (ms * 10.0).round() / 10.0)
                })
                .collect();
            let z = normal(&mut rng);
            // dense near 1500, thin upper tail
            let skill = (1500.0
                + 60.0 * z
                + if z > 1.5 {
                    150.0 * (z - 1.5).powi(2)
                } else {
                    0.0
                })
            .max(100.0);
            let roles = if spec.roles.is_empty() {
                Vec::new()
            } else {
                let a = rng.random_range(0..spec.roles.len());
                let mut r = vec![spec.roles[a].clone()];
                if rng.random::<bool>() {
                    let b = rng.random_range(0..spec.roles.len());
                    if b != a {
                        r.push(spec.roles[b].clone());
                    }
                }
                r
            };
            players.push(Player {
                id,
                party: party.clone(),
                skill: (skill * 10.0).round() / 10.0,
                skill_sigma: (rng.random::<f64>() < spec.sigma_share)
                    .then(|| 20.0 + 150.0 * rng.random::<f64>()),
                enqueued_at: Some(enqueued),
                latencies,
                peer_pings: BTreeMap::new(),
                roles,
                side: (rng.random::<f64>() < spec.side_share).then(|| rng.random::<f64>()),
            });
        }
    }
    Pool {
        queue: None,
        now: Some(now),
        players,
        history: Vec::new(),
    }
}
