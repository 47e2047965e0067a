//! The `chunk` and `greedy` baselines (no search).
//!
//! `chunk` (Alman and McKay's offline approximation): sort by skill, cut into windows of one
//! match, split each window by the exhaustive split over all factors.
//!
//! `greedy` (the AccelByte guide's greedy rebalance): the same sorted windows, but each is split
//! greedily: parties by total skill, highest first, each to the team with the lowest
//! total skill that still has room (ties: the first team). When that fails (no room,
//! or strict roles unfilled) the exhaustive split is used.

use crate::score::Scorer;

use super::construct;
use super::state::State;

pub fn chunk(sc: &Scorer) -> State {
    construct::cut(sc, &construct::skill_order(sc))
}

pub fn greedy(sc: &Scorer) -> State {
    let mut st = chunk(sc);
    for i in 0..st.matches.len() {
        let m = &st.matches[i];
        if let Some(e) = greedy_split(sc, m).and_then(|t| sc.evaluate_fixed(m, &t)) {
            let old = st.evals[i];
            st.value.add(&old, -1.0);
            st.value.add(&e, 1.0);
            st.evals[i] = e;
        }
    }
    st
}

/// The AccelByte guide's greedy assignment: team of each unit of `units` (same order).
pub fn greedy_split(sc: &Scorer, units: &[u32]) -> Option<Vec<u8>> {
    let ix = sc.ix;
    let teams = sc.model.teams;
    let cap = sc.model.team_size;
    let total = |u: u32| -> f64 {
        ix.units[u as usize]
            .members
            .iter()
            .map(|&p| ix.skill[p as usize])
            .sum()
    };
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by(|&a, &b| total(units[b]).total_cmp(&total(units[a])).then(a.cmp(&b)));
    let mut sum = vec![0.0f64; teams];
    let mut room = vec![cap; teams];
    let mut out = vec![0u8; units.len()];
    for k in order {
        let size = ix.units[units[k] as usize].size();
        let t = (0..teams)
            .filter(|&t| room[t] >= size)
            .min_by(|&a, &b| sum[a].total_cmp(&sum[b]).then(a.cmp(&b)))?;
        room[t] -= size;
        sum[t] += total(units[k]);
        out[k] = t as u8;
    }
    Some(out)
}
