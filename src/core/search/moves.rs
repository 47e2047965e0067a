//! Random moves for the local searches: player-player and party-party swaps between
//! matches (units of the same size), a party against the same number of solos, and
//! swaps with the unmatched bench. The second match is usually a neighbour in the
//! match list (constructions lay matches out by skill, so neighbours are close in
//! skill), sometimes any match.

use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::core::score::Scorer;

use super::state::{BENCH, State};

/// An exchange of `a_out` (in container `a`) against `b_out` (in `b`).
#[derive(Debug, Clone, Default)]
pub struct Exchange {
    pub a: u32,
    pub a_out: Vec<u32>,
    pub b: u32,
    pub b_out: Vec<u32>,
}

/// Draw a random exchange into `mv`; false if the draw found nothing to exchange.
pub fn random_exchange(
    sc: &Scorer,
    st: &State,
    rng: &mut Xoshiro256PlusPlus,
    mv: &mut Exchange,
) -> bool {
    let nm = st.matches.len();
    if nm == 0 {
        return false;
    }
    mv.a_out.clear();
    mv.b_out.clear();
    let use_bench = !st.bench.is_empty() && (nm == 1 || rng.random_range(0..8u32) == 0);
    let i = rng.random_range(0..nm);
    let m = &st.matches[i];
    let u = m[rng.random_range(0..m.len())];
    let j = if use_bench {
        BENCH
    } else {
        let near = rng.random_range(0..4u32) != 0;
        let j = if near {
            let w = 3.min(nm - 1).max(1) as i64;
            let off = rng.random_range(1..=w) * if rng.random::<bool>() { 1 } else { -1 };
            (i as i64 + off).rem_euclid(nm as i64) as usize
        } else {
            rng.random_range(0..nm)
        };
        if j == i {
            return false;
        }
        j as u32
    };
    let other = st.container(j);
    let size = sc.ix.units[u as usize].size();
    let unit_size = |x: u32| sc.ix.units[x as usize].size();
    mv.a = i as u32;
    mv.b = j;
    mv.a_out.push(u);
    // party against solos of the other container, half of the time when possible
    if size > 1 && rng.random::<bool>() {
        let solos = other.iter().filter(|&&x| unit_size(x) == 1).count();
        if solos >= size {
            // pick `size` distinct solos uniformly (reservoir-free: partial Fisher-Yates
            // over their positions)
            let mut pos: Vec<u32> = other
                .iter()
                .copied()
                .filter(|&x| unit_size(x) == 1)
                .collect();
            for k in 0..size {
                let r = rng.random_range(k..pos.len());
                pos.swap(k, r);
                mv.b_out.push(pos[k]);
            }
            return true;
        }
    }
    let same = other.iter().filter(|&&x| unit_size(x) == size).count();
    if same == 0 {
        return false;
    }
    let pick = rng.random_range(0..same);
    let v = other
        .iter()
        .copied()
        .filter(|&x| unit_size(x) == size)
        .nth(pick)
        .unwrap();
    mv.b_out.push(v);
    true
}
