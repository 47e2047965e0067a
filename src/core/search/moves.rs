//! Random moves for the local searches: player-player and party-party swaps between
//! matches (units of the same size), a party against the same number of solos (or a
//! smaller party plus solos), and swaps with the unmatched bench. Half of the draws
//! swap a unit with one close to it in skill (wherever it is); the other half exchange
//! a unit of a random match with units of another random match or the bench.
//! (Measured on 300-player pools: picking the second match among index neighbours, as
//! a first version did, converged slower than these two.)

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
    if rng.random::<bool>() {
        return similar_swap(sc, st, rng, mv);
    }
    let use_bench = !st.bench.is_empty() && (nm == 1 || rng.random_range(0..8u32) == 0);
    let i = rng.random_range(0..nm) as u32;
    let j = if use_bench {
        BENCH
    } else {
        let j = rng.random_range(0..nm) as u32;
        if j == i {
            return false;
        }
        j
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

/// Swap a random unit with a unit of the same size close to it in skill (within 8
/// places of the skill order), wherever that unit is (another match or the bench):
/// keeps the skill factors roughly intact while exploring ping, premades and hosts.
fn similar_swap(sc: &Scorer, st: &State, rng: &mut Xoshiro256PlusPlus, mv: &mut Exchange) -> bool {
    let ix = sc.ix;
    let nu = ix.units.len();
    let u = rng.random_range(0..nu) as u32;
    let r = ix.skill_rank[u as usize] as i64;
    let w = 8;
    let mut off = rng.random_range(1..=w);
    if rng.random::<bool>() {
        off = -off;
    }
    let r2 = r + off;
    if r2 < 0 || r2 >= nu as i64 {
        return false;
    }
    let v = ix.by_skill[r2 as usize];
    let (a, b) = (st.loc[u as usize].0, st.loc[v as usize].0);
    if a == b || ix.unit_size[u as usize] != ix.unit_size[v as usize] {
        return false;
    }
    let (a, u, b, v) = if a == BENCH {
        (b, v, a, u)
    } else {
        (a, u, b, v)
    };
    mv.a = a;
    mv.b = b;
    mv.a_out.push(u);
    mv.b_out.push(v);
    true
}
