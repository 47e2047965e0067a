//! Starting rounds: sort and cut (the Awesomenauts post's first rule, Alman and McKay's offline
//! approximation), keeping parties whole, plus semi-random orders for restarts.
//!
//! Units are taken in order into the current match while they still fit: the sizes
//! must pack into the teams (no 2+2+2 in 3v3) and, in strict-role queues, the players
//! must still be able to take distinct role slots. A unit that does not fit waits for
//! the next match. A full match without a valid split goes to the bench; what is left
//! over stays unmatched (the search swaps with the bench later).

use std::collections::VecDeque;

use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::factors::roles;
use crate::score::Scorer;

use super::state::State;

/// Units by skill, best first (ties by index): the Awesomenauts post's sorted start.
pub fn skill_order(sc: &Scorer) -> Vec<u32> {
    let units = &sc.ix.units;
    let mut order: Vec<u32> = (0..units.len() as u32).collect();
    order.sort_by(|&a, &b| {
        units[b as usize]
            .skill
            .total_cmp(&units[a as usize].skill)
            .then(a.cmp(&b))
    });
    order
}

/// Units grouped by their best region (lowest latency of their first member; units
/// without latencies last), best skill first within a region: matches start close in
/// ping as well as in skill. Without regions this is `skill_order`.
pub fn region_order(sc: &Scorer) -> Vec<u32> {
    let ix = sc.ix;
    let units = &ix.units;
    let nreg = ix.regions.len();
    let best_region = |u: u32| {
        let p = units[u as usize].members[0];
        (0..nreg)
            .filter_map(|r| ix.latency(p, r).map(|l| (l, r)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map_or(nreg, |x| x.1)
    };
    let mut order = skill_order(sc);
    order.sort_by_key(|&u| best_region(u)); // stable: skill order within a region
    order
}

/// Share of the semi-random starts grouped by each unit's best region first.
pub const REGION_GROUPED_STARTS: f64 = 0.5;

/// The noise of a semi-random start, in standard deviations of the pool's skill: drawn
/// uniformly in this range once per start.
pub const START_NOISE_SD: (f64, f64) = (0.05, 0.65);

/// A semi-random order: skill plus uniform noise of a random strength
/// (`START_NOISE_SD`), and for `REGION_GROUPED_STARTS` of the starts grouped by each
/// unit's best region first (so that matches start close in ping as well as in skill).
pub fn random_order(sc: &Scorer, rng: &mut Xoshiro256PlusPlus) -> Vec<u32> {
    let ix = sc.ix;
    let units = &ix.units;
    let n = units.len().max(1) as f64;
    let mean = units.iter().map(|u| u.skill).sum::<f64>() / n;
    let sd = (units.iter().map(|u| (u.skill - mean).powi(2)).sum::<f64>() / n).sqrt();
    let (lo, hi) = START_NOISE_SD;
    let strength = sd * (lo + (hi - lo) * rng.random::<f64>());
    let by_region = !ix.regions.is_empty() && rng.random_bool(REGION_GROUPED_STARTS);
    let nreg = ix.regions.len();
    let mut keyed: Vec<(usize, f64, u32)> = units
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let region = if by_region {
                let p = u.members[0];
                (0..nreg)
                    .filter_map(|r| ix.latency(p, r).map(|l| (l, r)))
                    .min_by(|a, b| a.0.total_cmp(&b.0))
                    .map_or(nreg, |x| x.1)
            } else {
                0
            };
            let noise = (rng.random::<f64>() - 0.5) * 2.0 * strength;
            (region, -(u.skill + noise), i as u32)
        })
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
    keyed.into_iter().map(|k| k.2).collect()
}

/// Cut an order into matches (see the module docs).
pub fn cut(sc: &Scorer, order: &[u32]) -> State {
    let (matches, bench) = cut_units(sc, order);
    let mut state = State::new(sc, matches, bench);
    fill_from_bench(sc, &mut state);
    state
}

fn cut_units(sc: &Scorer, order: &[u32]) -> (Vec<Vec<u32>>, Vec<u32>) {
    let per_match = sc.players_per_match();
    let ix = sc.ix;
    let mut queue: VecDeque<u32> = order.iter().copied().collect();
    let mut matches = Vec::new();
    let mut bench = Vec::new();
    let mut cur: Vec<u32> = Vec::new();
    let mut size = 0usize;
    let mut skipped: Vec<u32> = Vec::new();
    while let Some(u) = queue.pop_front() {
        let us = ix.units[u as usize].size();
        cur.push(u);
        if size + us <= per_match && fits(sc, &cur) {
            size += us;
            if size == per_match {
                let m = std::mem::take(&mut cur);
                if sc.evaluate(&m).feasible {
                    matches.push(m);
                } else {
                    bench.extend(m);
                }
                size = 0;
                for s in skipped.drain(..).rev() {
                    queue.push_front(s);
                }
            }
        } else {
            cur.pop();
            skipped.push(u);
        }
    }
    bench.extend(cur);
    bench.extend(skipped);
    (matches, bench)
}

/// Partial feasibility of a growing match: sizes pack into teams, and (strict roles)
/// the players can take distinct (team, role) or flex slots.
pub fn fits(sc: &Scorer, units: &[u32]) -> bool {
    let ix = sc.ix;
    let sizes: Vec<u8> = units
        .iter()
        .map(|&u| ix.units[u as usize].size() as u8)
        .collect();
    if !sc.tables.packable(&sizes) || !sc.last_may_meet(units) {
        return false;
    }
    let nroles = sc.model.roles.len();
    if nroles == 0 || sc.model.role_mode != crate::model::RoleMode::Strict {
        return true;
    }
    let teams = sc.model.teams;
    // role r copy c is bit c * nroles + r
    let masks: Vec<u32> = units
        .iter()
        .flat_map(|&u| ix.units[u as usize].members.iter())
        .map(|&p| {
            let m = ix.roles[p as usize];
            (0..teams).fold(0u32, |acc, c| acc | (m << (c * nroles)))
        })
        .collect();
    let (filled, _) = roles::fill(&masks, nroles * teams);
    let flex = teams * (sc.model.team_size - nroles);
    masks.len() - filled <= flex
}

/// Try to form more matches from the bench (leftovers of parties or roles that the
/// greedy cut could not fit, players of dissolved hostless matches): a bounded
/// depth-first search over the bench units in skill order for a set that makes a valid
/// match with a host.
pub fn fill_from_bench(sc: &Scorer, state: &mut State) {
    let per_match = sc.players_per_match();
    loop {
        let bench_players: usize = state
            .bench
            .iter()
            .map(|&u| sc.ix.units[u as usize].size())
            .sum();
        if bench_players < per_match {
            return;
        }
        let mut order = state.bench.clone();
        order.sort_by(|&a, &b| {
            let (ua, ub) = (&sc.ix.units[a as usize], &sc.ix.units[b as usize]);
            ub.skill.total_cmp(&ua.skill).then(a.cmp(&b))
        });
        let Some(m) = find_match(sc, &order) else {
            return;
        };
        let e = sc.evaluate(&m);
        state.add_match(sc, m, e);
    }
}

/// The first valid match (in depth-first order over `candidates`) within a node budget.
pub fn find_match(sc: &Scorer, candidates: &[u32]) -> Option<Vec<u32>> {
    fn go(
        sc: &Scorer,
        candidates: &[u32],
        from: usize,
        cur: &mut Vec<u32>,
        size: usize,
        budget: &mut u32,
    ) -> bool {
        let per_match = sc.players_per_match();
        if size == per_match {
            // a new match must have a host (a hostless one would count for nothing)
            return sc.evaluate(cur).valid();
        }
        for k in from..candidates.len() {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            let u = candidates[k];
            let us = sc.ix.units[u as usize].size();
            if size + us > per_match {
                continue;
            }
            cur.push(u);
            if fits(sc, cur) && go(sc, candidates, k + 1, cur, size + us, budget) {
                return true;
            }
            cur.pop();
        }
        false
    }
    let mut cur = Vec::new();
    let mut budget = 20_000;
    go(sc, candidates, 0, &mut cur, 0, &mut budget).then_some(cur)
}
