//! The search state: matches as sets of units, the unmatched bench, and where each unit
//! is. A move exchanges units between two containers (two matches, or a match and the
//! bench); it is scored by re-scoring only the matches it touches (delta), and
//! `full_value` recomputes everything from scratch (the oracle the delta is checked
//! against in tests and with `SolveOptions::check_delta`).

use crate::core::score::{MatchEval, RoundValue, Scorer};

pub const BENCH: u32 = u32::MAX;

#[derive(Debug, Clone)]
pub struct State {
    pub matches: Vec<Vec<u32>>,
    pub evals: Vec<MatchEval>,
    pub bench: Vec<u32>,
    /// Per unit: (container, position in it).
    pub loc: Vec<(u32, u32)>,
    pub value: RoundValue,
}

/// A scored but not yet applied exchange.
#[derive(Debug, Clone, Copy)]
pub struct Scored {
    pub delta: RoundValue,
    pub new_a: MatchEval,
    pub new_b: MatchEval,
}

/// Scratch buffers for scoring moves without allocating.
#[derive(Debug, Default)]
pub struct Scratch {
    a: Vec<u32>,
    b: Vec<u32>,
}

impl State {
    /// Build from matches (each must be feasible) and a bench.
    pub fn new(sc: &Scorer, matches: Vec<Vec<u32>>, bench: Vec<u32>) -> State {
        let mut s = State {
            evals: Vec::with_capacity(matches.len()),
            matches,
            bench,
            loc: vec![(BENCH, 0); sc.ix.units.len()],
            value: RoundValue::default(),
        };
        for m in &s.matches {
            let e = sc.evaluate(m);
            debug_assert!(e.feasible);
            s.value.add(&e, 1.0);
            s.evals.push(e);
        }
        s.reindex();
        s
    }

    fn reindex(&mut self) {
        for (i, m) in self.matches.iter().enumerate() {
            for (k, &u) in m.iter().enumerate() {
                self.loc[u as usize] = (i as u32, k as u32);
            }
        }
        for (k, &u) in self.bench.iter().enumerate() {
            self.loc[u as usize] = (BENCH, k as u32);
        }
    }

    pub fn container(&self, c: u32) -> &[u32] {
        if c == BENCH {
            &self.bench
        } else {
            &self.matches[c as usize]
        }
    }

    /// From-scratch objective (the oracle).
    pub fn full_value(&self, sc: &Scorer) -> RoundValue {
        let mut v = RoundValue::default();
        for m in &self.matches {
            v.add(&sc.evaluate(m), 1.0);
        }
        v
    }

    /// Score exchanging `a_out` (units of container a) with `b_out` (units of b).
    /// None when a touched match would become infeasible.
    pub fn score_exchange(
        &self,
        sc: &Scorer,
        a: u32,
        a_out: &[u32],
        b: u32,
        b_out: &[u32],
        scratch: &mut Scratch,
    ) -> Option<Scored> {
        debug_assert_ne!(a, b);
        let mut delta = RoundValue::default();
        let mut new_a = MatchEval::INFEASIBLE;
        let mut new_b = MatchEval::INFEASIBLE;
        if a != BENCH {
            replaced(&self.matches[a as usize], a_out, b_out, &mut scratch.a);
            new_a = sc.evaluate(&scratch.a);
            if !new_a.feasible {
                return None;
            }
            delta.add(&new_a, 1.0);
            delta.add(&self.evals[a as usize], -1.0);
        }
        if b != BENCH {
            replaced(&self.matches[b as usize], b_out, a_out, &mut scratch.b);
            new_b = sc.evaluate(&scratch.b);
            if !new_b.feasible {
                return None;
            }
            delta.add(&new_b, 1.0);
            delta.add(&self.evals[b as usize], -1.0);
        }
        Some(Scored {
            delta,
            new_a,
            new_b,
        })
    }

    /// Apply a scored exchange.
    pub fn apply_exchange(&mut self, a: u32, a_out: &[u32], b: u32, b_out: &[u32], s: &Scored) {
        for (&x, &y) in a_out.iter().zip(b_out) {
            self.swap_pair(a, x, b, y);
        }
        // unequal counts (party vs solos): move the rest
        if a_out.len() > b_out.len() {
            for &x in &a_out[b_out.len()..] {
                self.move_unit(a, x, b);
            }
        } else {
            for &y in &b_out[a_out.len()..] {
                self.move_unit(b, y, a);
            }
        }
        if a != BENCH {
            self.evals[a as usize] = s.new_a;
        }
        if b != BENCH {
            self.evals[b as usize] = s.new_b;
        }
        self.value.quality += s.delta.quality;
        self.value.overdue += s.delta.overdue;
        self.value.matches += s.delta.matches;
    }

    fn slot(&mut self, c: u32) -> &mut Vec<u32> {
        if c == BENCH {
            &mut self.bench
        } else {
            &mut self.matches[c as usize]
        }
    }

    fn swap_pair(&mut self, a: u32, x: u32, b: u32, y: u32) {
        let (_, px) = self.loc[x as usize];
        let (_, py) = self.loc[y as usize];
        self.slot(a)[px as usize] = y;
        self.slot(b)[py as usize] = x;
        self.loc[y as usize] = (a, px);
        self.loc[x as usize] = (b, py);
    }

    fn move_unit(&mut self, from: u32, x: u32, to: u32) {
        let (_, px) = self.loc[x as usize];
        let v = self.slot(from);
        v.swap_remove(px as usize);
        if let Some(&moved) = v.get(px as usize) {
            self.loc[moved as usize] = (from, px);
        }
        let v = self.slot(to);
        v.push(x);
        let pos = (v.len() - 1) as u32;
        self.loc[x as usize] = (to, pos);
    }

    /// Add a new match formed from bench units (must be feasible).
    pub fn add_match(&mut self, units: Vec<u32>, eval: MatchEval) {
        for &u in &units {
            let (_, p) = self.loc[u as usize];
            self.bench.swap_remove(p as usize);
            if let Some(&moved) = self.bench.get(p as usize) {
                self.loc[moved as usize] = (BENCH, p);
            }
        }
        let i = self.matches.len() as u32;
        for (k, &u) in units.iter().enumerate() {
            self.loc[u as usize] = (i, k as u32);
        }
        self.value.add(&eval, 1.0);
        self.matches.push(units);
        self.evals.push(eval);
    }
}

/// `m` without `out`, plus `inn`.
fn replaced(m: &[u32], out: &[u32], inn: &[u32], buf: &mut Vec<u32>) {
    buf.clear();
    buf.extend(m.iter().copied().filter(|u| !out.contains(u)));
    buf.extend_from_slice(inn);
}
