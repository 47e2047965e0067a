//! Lobby formation: sort and cut, then a local search that exchanges units between
//! lobbies and with the bench.
//!
//! Cut (Alman and McKay's offline approximation, one lobby per window): units in order
//! (by region, then skill) into the current lobby while they still fit (the sizes pack
//! into the format's teams or squads, the meeting rules hold); a unit that does not
//! fit waits for the next lobby. What is left at the end is the bench.
//!
//! Search: a unit exchanged with a unit of the same size of a lobby near in skill, of a
//! random lobby or of the bench. Same sizes keep every lobby full and packable, so a
//! move is judged on the two lobbies it changes, re-scored from scratch
//! (`Ctx::evaluate`: no incremental twin to drift), and kept when the round's value
//! improves: overdue players placed first, then valid lobbies, then the lobbies'
//! scores plus the wait credit (the small path's lexicographic objective). A restart
//! stops after `patience` moves without an improvement, or at the deadline.

use std::collections::VecDeque;

use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::score::{Ctx, Eval};
use super::squads::fits_partial;
use crate::deadline::Deadline;

/// The round's value over its valid lobbies, compared lexicographically.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Value {
    pub overdue: i64,
    pub lobbies: i64,
    pub quality: f64,
}

impl Value {
    fn add(&mut self, e: &Eval, sign: i64) {
        if e.valid() {
            self.overdue += sign * e.overdue as i64;
            self.lobbies += sign;
            self.quality += sign as f64 * e.quality;
        }
    }

    pub fn better_than(&self, o: &Value) -> bool {
        (self.overdue, self.lobbies)
            .cmp(&(o.overdue, o.lobbies))
            .then(self.quality.total_cmp(&(o.quality + 1e-12)))
            .is_gt()
    }
}

/// Lobbies (units each, every lobby full), their evaluations and the bench.
#[derive(Debug, Clone)]
pub struct Formation {
    pub lobbies: Vec<Vec<u32>>,
    pub evals: Vec<Eval>,
    pub bench: Vec<u32>,
    pub value: Value,
}

impl Formation {
    pub fn new(ctx: &Ctx, lobbies: Vec<Vec<u32>>, bench: Vec<u32>) -> Self {
        let mut value = Value::default();
        let evals: Vec<Eval> = lobbies
            .iter()
            .map(|l| {
                let e = ctx.evaluate(&players(ctx, l));
                value.add(&e, 1);
                e
            })
            .collect();
        Formation {
            lobbies,
            evals,
            bench,
            value,
        }
    }
}

/// The players of some units.
pub fn players(ctx: &Ctx, units: &[u32]) -> Vec<u32> {
    units
        .iter()
        .flat_map(|&u| ctx.ix.members_of(u).iter().copied())
        .collect()
}

/// Units grouped by their best region (lowest worst latency of their members; units
/// without latencies last), strongest first within a region; `noise` (skill points)
/// perturbs the skills for the restarts.
pub fn region_order(ctx: &Ctx, rng: Option<(&mut Xoshiro256PlusPlus, f64)>) -> Vec<u32> {
    let ix = ctx.ix;
    let nreg = ix.regions.len();
    let best_region = |u: u32| -> usize {
        (0..nreg)
            .filter_map(|r| {
                let worst = ix
                    .members_of(u)
                    .iter()
                    .map(|&p| ix.latency(p, r).map(f64::from))
                    .try_fold(0.0f64, |w, l| l.map(|l| w.max(l)))?;
                Some((worst, r))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .map_or(nreg, |(_, r)| r)
    };
    let mut keyed: Vec<(usize, f64, u32)> = (0..ix.units.len() as u32)
        .map(|u| (best_region(u), ix.units[u as usize].skill, u))
        .collect();
    if let Some((rng, noise)) = rng {
        for k in &mut keyed {
            k.1 += rng.random_range(-noise..=noise);
        }
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
    keyed.into_iter().map(|k| k.2).collect()
}

/// Cut `order` into full lobbies; the rest is the bench.
pub fn cut(ctx: &Ctx, order: &[u32]) -> (Vec<Vec<u32>>, Vec<u32>) {
    let ix = ctx.ix;
    let (bins, cap) = (ctx.model.teams, ctx.model.team_size);
    let mut input: VecDeque<u32> = order.iter().copied().collect();
    let mut lobbies = Vec::new();
    loop {
        let mut cur: Vec<u32> = Vec::new();
        let mut sizes: Vec<usize> = Vec::new();
        let mut skipped: Vec<u32> = Vec::new();
        let mut filled = 0;
        while filled < ctx.size {
            let Some(u) = input.pop_front() else { break };
            let s = ix.units[u as usize].size();
            sizes.push(s);
            cur.push(u);
            let fits = filled + s <= ctx.size
                && fits_partial(&sizes, bins, cap)
                && (!ix.meet.any() || ctx.meet_rule(&players(ctx, &cur), None).is_none());
            if fits {
                filled += s;
            } else {
                sizes.pop();
                cur.pop();
                skipped.push(u);
            }
        }
        if filled < ctx.size {
            cur.extend(skipped);
            cur.extend(input);
            return (lobbies, cur);
        }
        lobbies.push(cur);
        for u in skipped.into_iter().rev() {
            input.push_front(u);
        }
    }
}

/// One local search from `start`: exchanges until `patience` moves in a row find
/// nothing better, `max_moves` were tried, or the deadline passes. Returns the moves
/// tried.
pub fn improve(
    ctx: &Ctx,
    st: &mut Formation,
    rng: &mut Xoshiro256PlusPlus,
    patience: u64,
    max_moves: u64,
    deadline: &Deadline,
) -> u64 {
    let ix = ctx.ix;
    let n = st.lobbies.len();
    if n == 0 {
        return 0;
    }
    let size = |u: u32| ix.units[u as usize].size();
    let mut idle = 0u64;
    let mut moves = 0u64;
    while idle < patience && moves < max_moves {
        if moves.is_multiple_of(256) && deadline.expired() {
            break;
        }
        moves += 1;
        idle += 1;
        let a = rng.random_range(0..n);
        let i = rng.random_range(0..st.lobbies[a].len());
        let u = st.lobbies[a][i];
        let s = size(u);
        let pick = rng.random_range(0..100u32);
        // the partner container: None for the bench
        let b = if pick < 15 || n == 1 {
            None
        } else if pick < 30 {
            Some(rng.random_range(0..n))
        } else {
            let step = rng.random_range(1..=2usize);
            let up = rng.random_bool(0.5);
            Some(if up {
                (a + step).min(n - 1)
            } else {
                a.saturating_sub(step)
            })
        };
        let list = match b {
            Some(b) if b == a => continue,
            Some(b) => &st.lobbies[b],
            None => &st.bench,
        };
        if list.is_empty() {
            continue;
        }
        let Some(j) = (0..8)
            .map(|_| rng.random_range(0..list.len()))
            .find(|&j| size(list[j]) == s)
        else {
            continue;
        };
        let v = list[j];
        let mut la = st.lobbies[a].clone();
        la[i] = v;
        let ea = ctx.evaluate(&players(ctx, &la));
        let mut value = st.value;
        value.add(&st.evals[a], -1);
        value.add(&ea, 1);
        let eb = b.map(|b| {
            let mut lb = st.lobbies[b].clone();
            lb[j] = u;
            let eb = ctx.evaluate(&players(ctx, &lb));
            value.add(&st.evals[b], -1);
            value.add(&eb, 1);
            eb
        });
        if !value.better_than(&st.value) {
            continue;
        }
        st.lobbies[a][i] = v;
        st.evals[a] = ea;
        match (b, eb) {
            (Some(b), Some(eb)) => {
                st.lobbies[b][j] = u;
                st.evals[b] = eb;
            }
            _ => st.bench[j] = u,
        }
        st.value = value;
        idle = 0;
    }
    moves
}
