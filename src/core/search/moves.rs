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
///
/// One unit u of a source container is exchanged against units of a target container
/// whose sizes add up to u's size: a unit of the same size half of the time when there
/// is one (player-player, party-party), otherwise a random set (party against solos,
/// or against a smaller party plus solos). One draw in eight (always when there is a
/// single match) involves the bench, in either direction.
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
    let i = rng.random_range(0..nm) as u32;
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
        if j == i as usize {
            return false;
        }
        j as u32
    };
    // the source is the match, or (bench moves, half of the time) the bench
    let (a, b) = if j == BENCH && rng.random::<bool>() {
        (BENCH, i)
    } else {
        (i, j)
    };
    let src = st.container(a);
    let dst = st.container(b);
    let u = src[rng.random_range(0..src.len())];
    let unit_size = |x: u32| sc.ix.units[x as usize].size();
    let size = unit_size(u);
    mv.a = a;
    mv.b = b;
    mv.a_out.push(u);
    if rng.random::<bool>() {
        let same = dst.iter().filter(|&&x| unit_size(x) == size).count();
        if same > 0 {
            let pick = rng.random_range(0..same);
            let v = dst
                .iter()
                .copied()
                .filter(|&x| unit_size(x) == size)
                .nth(pick)
                .unwrap();
            mv.b_out.push(v);
            return true;
        }
    }
    // a random set of the target's units adding up to `size`: scan from a random
    // offset, taking units that still fit
    let len = dst.len();
    let start = rng.random_range(0..len);
    let mut left = size;
    for k in 0..len.min(64) {
        let x = dst[(start + k) % len];
        let s = unit_size(x);
        if s <= left {
            mv.b_out.push(x);
            left -= s;
            if left == 0 {
                return true;
            }
        }
    }
    false
}
