//! Random moves for the local searches: player-player and party-party swaps between
//! matches (units of the same size), a party against the same number of solos (or a
//! smaller party plus solos), and swaps with the unmatched bench. A share of the draws
//! (`SIMILAR_SWAP`) swap a unit with one close to it in skill (wherever it is); the
//! others exchange a unit of a random match with units of another random match or the
//! bench.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::score::Scorer;

use super::state::{BENCH, State};

/// Share of the draws that are similar-skill swaps (`similar_swap`): they keep the skill
/// factors roughly intact while exploring ping, premades and hosts; the rest are random
/// exchanges between two random containers.
pub const SIMILAR_SWAP: f64 = 0.5;

/// Share of the random exchanges that involve the bench (always when there is a single
/// match and a bench).
pub const BENCH_EXCHANGE: f64 = 0.125;

/// Share of the bench exchanges whose source is the bench (a bench unit in, match units
/// out); the others send a match unit to the bench.
pub const FROM_BENCH: f64 = 0.5;

/// Share of the random exchanges that ask for a counterpart of the same size when the
/// target has one (player-player, party-party); the others take a random set of units
/// adding up to the source unit's size (a party against solos).
pub const SAME_SIZE: f64 = 0.5;

/// How far in the skill order a similar-skill swap looks for its partner.
const SIMILAR_RANKS: usize = 8;

/// True with probability `p`, from one 64-bit draw (this runs millions of times a
/// second; `random_bool` per decision cost a fifth of a move).
#[inline(always)]
pub(super) fn chance(rng: &mut Xoshiro256PlusPlus, p: f64) -> bool {
    ((rng.next_u64() >> 11) as f64) < p * (1u64 << 53) as f64
}

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
/// `SIMILAR_SWAP` of the draws are `similar_swap`s. Otherwise one unit u of a source
/// container is exchanged against units of a target container whose sizes add up to
/// u's size: a unit of the same size (`SAME_SIZE`) when there is one, otherwise a random
/// set (party against solos, or against a smaller party plus solos). `BENCH_EXCHANGE`
/// of these draws involve the bench, in either direction (`FROM_BENCH`).
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
    if chance(rng, SIMILAR_SWAP) {
        return similar_swap(sc, st, rng.next_u64(), mv);
    }
    let use_bench = !st.bench.is_empty() && (nm == 1 || chance(rng, BENCH_EXCHANGE));
    let flip = use_bench && chance(rng, FROM_BENCH);
    let same_size = chance(rng, SAME_SIZE);
    let r = rng.next_u64();
    let i = below(r, nm) as u32;
    let j = if use_bench {
        BENCH
    } else {
        let j = below(r >> 32, nm) as u32;
        if j == i {
            return false;
        }
        j
    };
    // the source is the match, or (bench moves, `FROM_BENCH`) the bench
    let (a, b) = if j == BENCH && flip {
        (BENCH, i)
    } else {
        (i, j)
    };
    let src = st.container(a);
    let u = src[below(rng.next_u64(), src.len())];
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

/// Swap a random unit with a unit of the same size close to it in skill (within
/// `SIMILAR_RANKS` places of the skill order, either side, uniformly), wherever that unit is (another match or the bench):
/// keeps the skill factors roughly intact while exploring ping, premades and hosts.
/// `r`: 64 random bits.
fn similar_swap(sc: &Scorer, st: &State, r: u64, mv: &mut Exchange) -> bool {
    let ix = sc.ix;
    let nu = ix.units.len();
    let u = below(r >> 32, nu) as u32;
    let rank = ix.skill_rank[u as usize] as i64;
    let mut off = 1 + below(r, SIMILAR_RANKS) as i64;
    if r & 1 == 1 {
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
