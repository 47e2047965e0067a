//! Map choices for a drawn pool (`[queues.NAME.maps]`): what players veto and prefer, and
//! the maps of their last matches, for the maps tests and the bench.

use std::collections::HashMap;

use matchmaker_optimizer::{Attribute, PastMatch, Pool};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Give `pool`'s players choices over `maps` (at least two): up to two vetoes each (four
/// in ten veto the last map, which many dislike; half veto one other), half prefer one to
/// three maps they do not veto; party members share their vetoes. Everyone has played
/// three matches of six players, on a map each, 15, 30 and 45 minutes before the pool's
/// clock. Deterministic for `seed`.
pub fn add_map_choices(pool: &mut Pool, maps: &[&str], seed: u64) {
    let n = maps.len();
    assert!(n >= 2, "a map pool of at least two");
    let names =
        |list: &[usize]| Attribute::Many(list.iter().map(|&m| maps[m].to_string()).collect());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut party_vetoes: HashMap<String, Vec<usize>> = HashMap::new();
    for p in &mut pool.players {
        let draw = |rng: &mut Xoshiro256PlusPlus| {
            let mut v = Vec::new();
            if rng.random_bool(0.4) {
                v.push(n - 1);
            }
            if rng.random_bool(0.5) {
                v.push(rng.random_range(0..n - 1));
            }
            v.truncate(2);
            v
        };
        let vetoes = match &p.party {
            Some(x) => party_vetoes
                .entry(x.clone())
                .or_insert_with(|| draw(&mut rng))
                .clone(),
            None => draw(&mut rng),
        };
        if !vetoes.is_empty() {
            p.attributes.insert("veto".into(), names(&vetoes));
        }
        if rng.random_bool(0.5) {
            let liked: Vec<usize> = (0..rng.random_range(1..=3))
                .map(|_| rng.random_range(0..n))
                .filter(|m| !vetoes.contains(m))
                .collect();
            if !liked.is_empty() {
                p.attributes.insert("maps".into(), names(&liked));
            }
        }
    }
    let now = pool.now.expect("generated pools have a clock");
    let ids: Vec<String> = pool.players.iter().map(|p| p.id.clone()).collect();
    for back in 1..=3 {
        let mut order = ids.clone();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        for six in order.chunks(6) {
            pool.history.push(PastMatch {
                teams: vec![six[..six.len() / 2].to_vec(), six[six.len() / 2..].to_vec()],
                at: now - chrono::Duration::minutes(15 * back),
                map: Some(maps[rng.random_range(0..n)].to_string()),
            });
        }
    }
}
