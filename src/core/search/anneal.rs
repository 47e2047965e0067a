//! The default strategy's restart: simulated annealing over random exchanges (the
//! blog comments on seed 003 suggest it; seed 000 names it), from a sorted or
//! semi-random construction.
//!
//! Each step draws one random exchange (`moves`), scores it by re-scoring only the two
//! touched matches, and accepts it if it does not worsen the objective, or with
//! probability exp(delta / T) otherwise. T falls from T0 (calibrated so an average
//! worsening move is accepted half of the time) to T0 / 1000 over the restart's length:
//! `moves_per_restart` steps, or, under a time budget, the time left when the restart
//! began, whichever ends first. At progress p in [0, 1], T = T0 (1/1000)^(p^0.6): faster
//! than geometric while hot, where the walk only forgets its start, so that more of the
//! run is spent cold, where the matches take shape (`SCHEDULE_SHAPE`). Moves that
//! change which players are placed (bench swaps) are accepted only if they do not lose
//! overdue players or matches. From 30% of the run on, three in four exchanges that
//! change a match's party shape are dropped unscored (`SHAPE_CHANGE_SKIP_FROM`). The
//! objective may differ in the run's first part (`shaping`); the returned state is
//! valued by the true one. On two-team queues one step in `repair::REPAIR_EVERY` is a
//! premade repair instead of a random exchange. From `neighbours::FROM` of the run on,
//! half of the other draws are neighbour exchanges (`neighbours`), where lists are given.

use std::time::Duration;

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::core::deadline::Deadline;
use crate::core::score::{RoundValue, Scorer};

use super::moves::{Exchange, random_exchange};
use super::neighbours::{self, Neighbours, neighbour_exchange};
use super::repair::{self, premade_repair};
use super::shaping::Shaping;
use super::state::{Scratch, State, Verdict};
use super::threshold::LnUniform;

/// With at least this many steps per unit the run starts at the full calibrated T0;
/// with fewer, T0 shrinks proportionally (measured: 10,000 players 5v5 in 10 s).
const FULL_HEAT_STEPS_PER_UNIT: f64 = 2000.0;

/// Exponent on the progress in the cooling schedule (1 would be geometric cooling).
/// Measured on the three 300-player bench pools at 1 s, 2 threads, 24 seeds each:
/// 0.65 beat 1.0 by +0.00016 ± 0.00007 of round score and 0.5 by +0.00015 ± 0.00006
/// (0.6 sits between them); in 1-thread runs 0.4 fell back to the level of 1.0. The
/// power is taken once every 256 steps, with the deadline check.
const SCHEDULE_SHAPE: f64 = 0.6;

/// From this share of the run on, 3 in 4 shape-changing exchanges are dropped before
/// scoring. In the second half of a 3 M-step run such exchanges were proposed 134 k
/// times and accepted twice; dropping them gives 5% more moves a second (measured with
/// `moves::WORST_OF`, see there).
const SHAPE_CHANGE_SKIP_FROM: f64 = 0.3;

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

/// What the default strategy adds to plain annealing on large pools.
pub struct Guidance<'s, 'a> {
    /// The objective searched at each point of the run.
    pub shaping: &'s Shaping<'a>,
    /// Propose premade repairs (`repair`), where they apply.
    pub premade_repair: bool,
    /// Draw neighbour exchanges late in the run (`neighbours`).
    pub neighbours: Option<&'s Neighbours>,
}

/// Anneal from `st` (valued by `true_sc`) and return the best state found, valued by
/// `true_sc`.
pub fn anneal<'s, 'a>(
    true_sc: &'s Scorer<'a>,
    guide: &Guidance<'s, 'a>,
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
    let shaping = guide.shaping;
    let repairs = guide.premade_repair && repair::applies(true_sc);
    let mut sc = shaping.at(0.0, true_sc);
    if !std::ptr::eq(sc, true_sc) {
        st = st.revalued(sc);
    }

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
    // Few steps per unit (huge pools, short budgets): start colder, so that the run
    // does not spend its budget undoing a good construction.
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
    t0 *= (steps / units / FULL_HEAT_STEPS_PER_UNIT).clamp(0.001, 1.0);
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
            let now = shaping.at(progress, true_sc);
            if !std::ptr::eq(now, sc) {
                // the objective changed: value the walk and the best state anew
                sc = now;
                st = st.revalued(sc);
                best = best.revalued(sc);
                if st.value.better_than(&best.value) {
                    best = st.clone();
                    found_at = deadline.elapsed();
                }
                best_value = best.value;
            }
        }
        step += 1;
        let repair = repairs && step.is_multiple_of(repair::REPAIR_EVERY);
        let drawn = if repair {
            premade_repair(sc, &st, rng, &mut mv)
        } else if let Some(nb) = guide.neighbours
            && progress >= neighbours::FROM
            && rng.next_u64() & 15 < neighbours::SHARE_OF_16
        {
            neighbour_exchange(sc, &st, nb, rng, &mut mv)
        } else {
            random_exchange(sc, &st, rng, &mut mv)
        };
        if !drawn {
            continue;
        }
        // Late in the run, exchanges that change a match's party shape (a party against
        // solos) are almost never accepted yet rebuild both rows: drop 3 in 4 unscored
        // (but not the repairs, which are aimed).
        if !repair
            && progress >= SHAPE_CHANGE_SKIP_FROM
            && mv.a_out.len() != mv.b_out.len()
            && rng.next_u64() < 3 << 62
        {
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
    if !std::ptr::eq(sc, true_sc) {
        // the run ended early (deadline or step budget) while still shaped
        st = st.revalued(true_sc);
        best = best.revalued(true_sc);
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
