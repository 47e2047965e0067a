//! Random moves for the local searches: player-player and party-party swaps between
//! matches (units of the same size), a party against the same number of solos (or a
//! smaller party plus solos), and swaps with the unmatched bench. Half of the draws
//! swap a unit with one close to it in skill (wherever it is); the other half exchange
//! a unit of a random match with units of another random match or the bench.
//! (Measured on 300-player pools: picking the second match among index neighbours, as
//! a first version did, converged slower than these two.)

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::score::Scorer;

use super::state::{BENCH, State};

/// In one random exchange in eight the match side is the worst of this many random
/// matches (docs/optimizer-tuning.md: with the late skip of shape-changing exchanges in
/// `anneal`, +0.00010 ± 0.00004 and +0.00012 ± 0.00005 of round score at 1 s in two
/// batches of paired runs).
const WORST_OF: usize = 4;

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
/// single match) involves the bench, in either direction. In one draw in eight the
/// match side (the source, or the bench's partner) is the worst of `WORST_OF` random
/// matches.
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
    // one 64-bit draw carved into the move's small decisions (this runs millions of
    // times a second; `random_range` per decision cost a fifth of a move)
    let r = rng.next_u64();
    if r & 1 == 0 {
        return similar_swap(sc, st, r >> 1, mv);
    }
    let use_bench = !st.bench.is_empty() && (nm == 1 || (r >> 1) & 7 == 0);
    let (flip, same_size) = ((r >> 4) & 1 == 1, (r >> 5) & 1 == 1);
    let r2 = rng.next_u64();
    let i = source_match(st, r, rng);
    let j = if use_bench {
        BENCH
    } else {
        let j = below(r2, nm) as u32;
        if j == i {
            return false;
        }
        j
    };
    // the source is the match, or (bench moves, half of the time) the bench
    let (a, b) = if j == BENCH && flip {
        (BENCH, i)
    } else {
        (i, j)
    };
    let src = st.container(a);
    let u = src[below(r2 >> 32, src.len())];
    mv.a = a;
    mv.b = b;
    mv.a_out.push(u);
    counterpart(sc, st.container(b), u, same_size, rng.next_u64(), mv)
}

/// Fill `mv.b_out` with units of the target container `dst` to exchange against unit
/// `u`: with `same_size`, a random unit of u's size when there is one; otherwise a
/// random set of units adding up to u's size. False if none fits. `r`: random bits.
pub(super) fn counterpart(
    sc: &Scorer,
    dst: &[u32],
    u: u32,
    same_size: bool,
    r: u64,
    mv: &mut Exchange,
) -> bool {
    let unit_size = |x: u32| sc.ix.unit_size[x as usize];
    let size = unit_size(u);
    if same_size {
        let same = dst.iter().filter(|&&x| unit_size(x) == size).count();
        if same > 0 {
            let pick = below(r, same);
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
    let start = below(r, len);
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

/// The source match of an exchange from the draw `r`: a random match, in one draw in
/// eight (bits 6-8 zero) the worst of `WORST_OF` random matches.
pub(super) fn source_match(st: &State, r: u64, rng: &mut Xoshiro256PlusPlus) -> u32 {
    let i = below(r >> 32, st.matches.len()) as u32;
    if (r >> 6) & 7 == 0 {
        worst_of(st, i, rng)
    } else {
        i
    }
}

/// The lowest-scoring of `start` and `WORST_OF - 1` more random matches: aims the move
/// where the round loses most.
fn worst_of(st: &State, start: u32, rng: &mut Xoshiro256PlusPlus) -> u32 {
    let nm = st.matches.len();
    let (mut pick, mut worst) = (start, st.evals[start as usize].score);
    for _ in 1..WORST_OF {
        let c = below(rng.next_u64(), nm) as u32;
        let score = st.evals[c as usize].score;
        if score < worst {
            (pick, worst) = (c, score);
        }
    }
    pick
}

/// Swap a random unit with a unit of the same size close to it in skill (within 8
/// places of the skill order), wherever that unit is (another match or the bench):
/// keeps the skill factors roughly intact while exploring ping, premades and hosts.
/// `r`: 63 random bits.
fn similar_swap(sc: &Scorer, st: &State, r: u64, mv: &mut Exchange) -> bool {
    let ix = sc.ix;
    let nu = ix.units.len();
    let u = below(r >> 31, nu) as u32;
    let rank = ix.skill_rank[u as usize] as i64;
    let mut off = 1 + (r & 7) as i64;
    if (r >> 3) & 1 == 1 {
        off = -off;
    }
    let r2 = rank + off;
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

/// A uniform draw in 0..n from the low 32 bits of `bits` (multiply-shift; the bias,
/// below n / 2^32, is far below anything the search could notice).
#[inline]
pub(super) fn below(bits: u64, n: usize) -> usize {
    (((bits & 0xFFFF_FFFF) * n as u64) >> 32) as usize
}
