//! The `awesomenauts` strategy's restart, faithful to the Awesomenauts matchmaker post: from a construction,
//! repeatedly try every swap of two units of the same size between two matches or
//! with the bench (each swap re-splits both matches), perform the best one, and stop
//! at a local optimum (no swap improves).

use std::time::Duration;

use crate::deadline::Deadline;
use crate::score::Scorer;

use super::anneal::{Outcome, assert_delta};
use super::state::{BENCH, Scratch, State};

pub fn hill_climb(sc: &Scorer, mut st: State, deadline: &Deadline, check_delta: bool) -> Outcome {
    let mut scratch = Scratch::default();
    let mut moves = 0u64;
    let mut delta_checks = 0u64;
    let mut found_at: Duration = deadline.elapsed();
    let size = |u: u32| sc.ix.units[u as usize].size();
    'outer: loop {
        let mut best: Option<(crate::search::state::Scored, u32, u32, u32, u32)> = None;
        let nm = st.matches.len() as u32;
        for a in 0..nm {
            for b in (a + 1..nm).chain(std::iter::once(BENCH)) {
                for &x in st.container(a) {
                    for &y in st.container(b) {
                        if size(x) != size(y) {
                            continue;
                        }
                        moves += 1;
                        if moves.is_multiple_of(1024) && deadline.expired() {
                            break 'outer;
                        }
                        let Some(s) = st.score_exchange(sc, a, &[x], b, &[y], &mut scratch) else {
                            continue;
                        };
                        let improves = s.delta.overdue > 0
                            || (s.delta.overdue == 0 && s.delta.matches > 0)
                            || (s.delta.overdue == 0
                                && s.delta.matches == 0
                                && s.delta.quality > 1e-12);
                        if !improves {
                            continue;
                        }
                        let better = match &best {
                            None => true,
                            Some((bs, ..)) => s.delta.better_than(&bs.delta),
                        };
                        if better {
                            best = Some((s, a, x, b, y));
                        }
                    }
                }
            }
        }
        let Some((s, a, x, b, y)) = best else {
            break;
        };
        st.apply_exchange(sc, a, &[x], b, &[y], &s, &mut scratch);
        found_at = deadline.elapsed();
        if check_delta {
            assert_delta(sc, &st);
            delta_checks += 1;
        }
    }
    Outcome {
        state: st,
        moves,
        bounded: 0,
        found_at,
        delta_checks,
    }
}
