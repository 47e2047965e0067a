//! The default strategy's restart: simulated annealing over random exchanges (the
//! blog comments on the Awesomenauts matchmaker post suggest it; the mutual-information
//! balancing note names it), from a sorted or semi-random construction.
//!
//! Each step draws one random exchange (`moves`), scores it by re-scoring only the two
//! touched matches, and accepts it if it does not worsen the objective, or with
//! probability exp(delta / T) otherwise. T falls from T0 (calibrated so an average
//! worsening move is accepted half of the time, scaled by `heat`) to T0 / 1000 over the
//! restart's length: `moves_per_restart` steps, or, under a time budget, the time left
//! when the restart began, whichever ends first. At progress p in [0, 1],
//! T = T0 (1/1000)^(p^0.6): faster than geometric while hot, where the walk only
//! forgets its start, so that more of the run is spent cold, where the matches take
//! shape (`SCHEDULE_SHAPE`). Moves that change which players are placed (bench swaps)
//! are accepted only if they do not lose overdue players or matches. From
//! `neighbours::FROM` of the run on, a share of the draws are neighbour exchanges
//! (`neighbours`), where lists are given.

use std::time::Duration;

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::deadline::Deadline;
use crate::score::{RoundValue, Scorer};

use super::moves::{Exchange, chance, random_exchange};
use super::neighbours::{self, Neighbours, neighbour_exchange};
use super::state::{Scratch, State, Verdict};
use super::threshold::LnUniform;

/// With at least this many steps per unit the run starts at the full calibrated T0;
/// with fewer, T0 shrinks proportionally (`heat`).
const FULL_HEAT_STEPS_PER_UNIT: f64 = 2000.0;

/// Pools of more matches than this need proportionally more steps per unit for the
/// same heat (`heat`); up to it (300 players 3v3) the rule is the one above alone.
const FULL_HEAT_MATCHES: f64 = 50.0;

/// The share of the calibrated T0 that a run of `steps` steps starts at, on a pool of
/// `units` units in `matches` matches.
///
/// Heat only pays when the rest of the run can rebuild what the hot walk breaks. A
/// random exchange draws its partner among all matches, so putting a unit back with
/// the right players takes of the order of `matches` draws of it: the steps per unit a
/// given heat needs grow with the matches. With 2,000 steps per unit whatever the pool,
/// a 10,000-player pool (1,000 matches) was at full heat from about 16 M steps a
/// thread: longer budgets started hotter faster than they could cool back, and scored
/// lower (fixed-step runs on `simulate --write-pool --players 10000 --queue casual_5v5
/// --max-party-size 5 --seed 1`, 2 threads: 1 M steps 0.95585, 3 M 0.95294, 10 M
/// 0.95192, 30 M 0.95493). Scaled by the matches: 1 M 0.95653, 5 M 0.95758, 15 M 0.95815.
///
/// The heat is also capped at `FULL_HEAT_MATCHES / matches`: without the cap a run of
/// 100 s (about 3 times the heat of 30 s) still scored below 30 s on two of the three
/// pools (`bench --large`: 0.95426 against 0.95702, 0.95332 against 0.95652), while
/// from 2 s to 30 s every pool gained with the budget. With the start capped, a longer
/// run only cools more slowly through the same temperatures.
pub fn heat(steps: f64, units: f64, matches: f64) -> f64 {
    let scale = (matches / FULL_HEAT_MATCHES).max(1.0);
    let per_unit = FULL_HEAT_STEPS_PER_UNIT * scale;
    // the cap wins over the floor (no panic of `clamp` past 50,000 matches)
    (steps / units.max(1.0) / per_unit)
        .max(0.001)
        .min(1.0 / scale)
}

/// Exponent on the progress in the cooling schedule (1 would be geometric cooling).
/// Measured on the three 300-player bench pools at 1 s, 2 threads, 24 seeds each:
/// 0.65 beat 1.0 by +0.00016 ± 0.00007 of round score and 0.5 by +0.00015 ± 0.00006
/// (0.6 sits between them); in 1-thread runs 0.4 fell back to the level of 1.0. The
/// power is taken once every 256 steps, with the deadline check.
const SCHEDULE_SHAPE: f64 = 0.6;

pub struct Outcome {
    pub state: State,
    pub moves: u64,
    /// Moves rejected by a bound before their split loops (see `Verdict::Below`).
    pub bounded: u64,
    /// Elapsed time of the deadline when the returned state was found.
    pub found_at: Duration,
    /// Applied moves checked against the from-scratch score (`check_delta`).
    pub delta_checks: u64,
}

/// Check that the incrementally maintained value equals the from-scratch score.
pub fn assert_delta(sc: &Scorer, st: &State) {
    let full = st.full_value(sc);
    assert!(
        full.overdue == st.value.overdue
            && full.matches == st.value.matches
            && (full.quality - st.value.quality).abs() <= 1e-9 * (1.0 + full.quality.abs()),
        "delta scoring drifted: incremental {:?}, from scratch {:?}",
        st.value,
        full
    );
}

/// Anneal from `st` and return the best state found; `neighbours`: the pool's neighbour
/// lists, for the exchanges late in the run.
pub fn anneal(
    sc: &Scorer,
    neighbours: Option<&Neighbours>,
    mut st: State,
    rng: &mut Xoshiro256PlusPlus,
    length: u64,
    deadline: &Deadline,
    check_delta: bool,
) -> Outcome {
    let t_start = deadline.elapsed();
    let mut scratch = Scratch::default();
    let mut mv = Exchange::default();
    let mut moves = 0u64;
    let mut bounded = 0u64;
    let mut delta_checks = 0u64;
    let ln_u = LnUniform::default();

    // calibrate T0 on a sample of worsening moves
    let mut worse = 0.0;
    let mut count = 0;
    for _ in 0..200 {
        if !random_exchange(sc, &st, rng, &mut mv) {
            continue;
        }
        moves += 1;
        if let Some(s) = st.score_exchange(sc, mv.a, &mv.a_out, mv.b, &mv.b_out, &mut scratch)
            && s.delta.overdue == 0
            && s.delta.matches == 0
            && s.delta.quality < 0.0
        {
            worse += -s.delta.quality;
            count += 1;
        }
    }
    let mut t0 = if count > 0 {
        worse / count as f64 / std::f64::consts::LN_2
    } else {
        1e-3
    };
    // Few steps per unit for the pool (huge pools, short budgets): start colder, so that
    // the run does not spend its budget undoing a good construction.
    let units = sc.ix.units.len().max(1) as f64;
    let steps = if length == u64::MAX {
        let spent = (deadline.elapsed() - t_start).as_secs_f64().max(1e-6);
        let left = deadline
            .budget()
            .map_or(0.0, |b| b.saturating_sub(deadline.elapsed()).as_secs_f64());
        moves as f64 / spent * left
    } else {
        length as f64
    };
    t0 *= heat(steps, units, st.matches.len() as f64);
    let t_end = t0 * 1e-3;
    let ratio = t_end / t0;

    let mut best_value = st.value;
    let mut best = st.clone();
    let mut found_at = t_start;
    let mut last_snap = 0u64;
    let mut temp = t0;
    let mut progress = 0.0f64;
    let mut step = 0u64;
    while step < length {
        if step.is_multiple_of(256) {
            let time_frac = deadline.progress_since(t_start);
            progress = (step as f64 / length as f64).max(time_frac);
            if progress >= 1.0 || deadline.expired() {
                break;
            }
            temp = t0 * ratio.powf(progress.powf(SCHEDULE_SHAPE));
        }
        step += 1;
        let drawn = match neighbours {
            Some(nb) if progress >= neighbours::FROM && chance(rng, neighbours::SHARE) => {
                neighbour_exchange(sc, &st, nb, rng, &mut mv)
            }
            _ => random_exchange(sc, &st, rng, &mut mv),
        };
        if !drawn {
            continue;
        }
        moves += 1;
        // Metropolis with the threshold drawn first: accept a worsening dq when
        // u < exp(dq / T), i.e. dq > T ln u; a move whose bound is below that is
        // rejected before its split loops run.
        let min_quality = temp * ln_u.ln(rng.next_u64());
        let s = match st.score_exchange_above(
            sc,
            mv.a,
            &mv.a_out,
            mv.b,
            &mv.b_out,
            min_quality,
            &mut scratch,
        ) {
            Verdict::Scored(s) => s,
            Verdict::Infeasible => continue,
            Verdict::Below => {
                bounded += 1;
                continue;
            }
        };
        let d = s.delta;
        let accept = if d.overdue != 0 {
            d.overdue > 0
        } else if d.matches != 0 {
            d.matches > 0
        } else {
            d.quality >= min_quality
        };
        if !accept {
            continue;
        }
        st.apply_exchange(sc, mv.a, &mv.a_out, mv.b, &mv.b_out, &s, &mut scratch);
        if check_delta {
            assert_delta(sc, &st);
            delta_checks += 1;
        }
        if st.value.better_than(&best_value) {
            best_value = st.value;
            if step - last_snap >= 128 || progress >= 0.9 {
                best = st.clone();
                found_at = deadline.elapsed();
                last_snap = step;
            }
        }
    }
    if st.value.better_than(&best.value) || !best.value.better_than(&st.value) {
        if st.value.better_than(&best.value) {
            found_at = deadline.elapsed();
        }
        best = st;
    }
    Outcome {
        state: best,
        moves,
        bounded,
        found_at,
        delta_checks,
    }
}

/// Compare helper used by the solver: is `a` strictly better than `b`?
pub fn better(a: &RoundValue, b: &RoundValue) -> bool {
    a.better_than(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heat_is_the_old_rule_up_to_fifty_matches() {
        // 300 players 3v3: the bench pools' trajectories are unchanged
        for matches in [1.0, 10.0, 47.0, 50.0] {
            for steps in [1e4, 3e5, 1e6, 1e8] {
                let old = (steps / 250.0 / FULL_HEAT_STEPS_PER_UNIT).clamp(0.001, 1.0);
                assert_eq!(heat(steps, 250.0, matches), old);
            }
        }
    }

    #[test]
    fn more_matches_need_proportionally_more_steps() {
        let units = 8000.0;
        // (below the cap of 1000 matches, 0.05)
        let small = heat(5e5, units, 50.0);
        assert!((heat(10e6, units, 1000.0) - small).abs() < 1e-15);
        assert!(heat(5e5, units, 1000.0) < small);
        // never hotter with fewer steps, never below the floor or past the pool's cap:
        // full heat up to 50 matches, 50 / matches above
        for (matches, cap) in [(50.0, 1.0), (1000.0, 0.05)] {
            let mut last = 0.0;
            for k in 0..60 {
                let h = heat(1e4 * 1.5f64.powi(k), units, matches);
                assert!(h >= last && (0.001..=cap).contains(&h));
                last = h;
            }
            assert_eq!(last, cap);
        }
    }
}
