//! The search state: matches as sets of units, the unmatched bench, and where each unit
//! is. A move exchanges units between two containers (two matches, or a match and the
//! bench); it is scored by re-scoring only the matches it touches (delta), and
//! `full_value` recomputes everything from scratch (the oracle the delta is checked
//! against in tests and with `SolveOptions::check_delta`).
//!
//! On the scorer's fast path the state also keeps each match's scoring row
//! (`score::incremental`), and a match's unit list is in the row's slot order, so that
//! a move re-scores only the pairs of the players it brings in.

use crate::score::incremental::{MatchRows, SoloProbe, by_size};
use crate::score::{MatchEval, RoundValue, Scorer};

pub const BENCH: u32 = u32::MAX;

#[derive(Debug, Clone)]
pub struct State {
    pub matches: Vec<Vec<u32>>,
    pub evals: Vec<MatchEval>,
    pub bench: Vec<u32>,
    /// Per unit: (container, position in it).
    pub loc: Vec<(u32, u32)>,
    pub value: RoundValue,
    /// Scoring rows of the matches (fast path only; `None` otherwise).
    rows: Option<MatchRows>,
}

/// A scored but not yet applied exchange.
#[derive(Debug, Clone, Copy)]
pub struct Scored {
    pub delta: RoundValue,
    pub new_a: MatchEval,
    pub new_b: MatchEval,
    /// Which scoring of the scratch this is (its candidate rows are reused on apply).
    generation: u64,
}

/// The result of scoring an exchange against a threshold.
#[derive(Debug, Clone, Copy)]
pub enum Verdict {
    /// A touched match would have no valid split.
    Infeasible,
    /// Rejected by a bound: the quality delta is below the threshold.
    Below,
    Scored(Scored),
}

/// Scratch buffers for scoring moves without allocating: the touched matches' new
/// unit lists and (fast path) their new scoring rows.
#[derive(Debug, Default)]
pub struct Scratch {
    a: Vec<u32>,
    b: Vec<u32>,
    row_a: Option<MatchRows>,
    row_b: Option<MatchRows>,
    /// A touched match's units before they are put in slot order.
    list: Vec<u32>,
    /// Per side: Some((position, unit)) when the new row replaced one unit of the
    /// match (its unit list is then the old one with that unit at that position, and
    /// `a` / `b` are not filled: most moves are never applied).
    replaced: [Option<(u32, u32)>; 2],
    /// Per side: a solo replacement scored for the bound (`Scorer::probe_sized`).
    probe: [SoloProbe; 2],
    generation: u64,
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
            rows: sc.is_fast().then(|| sc.new_rows(0)),
        };
        let mut order = Vec::new();
        for i in 0..s.matches.len() {
            let e = match &mut s.rows {
                Some(rows) => {
                    rows.push_row();
                    let ok = sc.build_row(&s.matches[i], rows, i, &mut order);
                    assert!(ok, "a constructed match is valid");
                    s.matches[i].clone_from(&order);
                    sc.score_row(rows, i)
                }
                None => sc.evaluate(&s.matches[i]),
            };
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
        match self.score_exchange_above(sc, a, a_out, b, b_out, f64::NEG_INFINITY, scratch) {
            Verdict::Scored(s) => Some(s),
            Verdict::Infeasible | Verdict::Below => None,
        }
    }

    /// Score an exchange, or reject it early (`Below`) when it provably changes
    /// neither the overdue nor the match count and its quality delta is below
    /// `min_quality_delta` (fast path: bounds from the replaced rows, before their
    /// split loops run).
    #[allow(clippy::too_many_arguments)]
    pub fn score_exchange_above(
        &self,
        sc: &Scorer,
        a: u32,
        a_out: &[u32],
        b: u32,
        b_out: &[u32],
        min_quality_delta: f64,
        scratch: &mut Scratch,
    ) -> Verdict {
        debug_assert_ne!(a, b);
        scratch.generation += 1;
        let Some(rows) = &self.rows else {
            return self.score_general(sc, a, a_out, b, b_out, scratch);
        };
        by_size!(
            sc.model.team_size,
            self.score_fast(sc, rows, a, a_out, b, b_out, min_quality_delta, scratch)
        )
    }

    /// The fast path of `score_exchange_above`, compiled once per team size so that
    /// the row code inlines into one function (no per-call size dispatch).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn score_fast<
        const TS: usize,
        const NF: usize,
        const P: usize,
        const Q: usize,
        const QS: usize,
    >(
        &self,
        sc: &Scorer,
        rows: &MatchRows,
        a: u32,
        a_out: &[u32],
        b: u32,
        b_out: &[u32],
        min_quality_delta: f64,
        scratch: &mut Scratch,
    ) -> Verdict {
        // both sides' ping lookups start before either side's work
        for (m, inn) in [(a, b_out), (b, a_out)] {
            if m != BENCH
                && let &[u] = inn
                && let &[player] = sc.ix.members_of(u)
            {
                sc.prefetch_sized::<TS, NF, P, Q, QS>(rows, m as usize, player);
            }
        }
        // new rows and their split-independent parts
        let mut bounded = true;
        let mut overdue = 0i64;
        // per side: an upper bound on its quality delta
        let mut ub = [0.0f64; 2];
        // slots whose history is still to be looked up (`Scorer::finish_sized`)
        let mut pending = [0..0, 0..0];
        // solo replacements scored for the bound, their rows not yet written
        let mut probed = [false; 2];
        for (k, (m, out, inn)) in [(a, a_out, b_out), (b, b_out, a_out)]
            .into_iter()
            .enumerate()
        {
            if m == BENCH {
                continue;
            }
            let ix = sc.ix;
            let i = m as usize;
            let current = &self.matches[i];
            scratch.replaced[k] = None;
            // a hostless match that gains a host gains a match: the quality bound
            // alone cannot reject that move
            bounded &= self.evals[i].allowed;
            if out.len() == 1
                && inn.len() == 1
                && ix.unit_size[out[0] as usize] == ix.unit_size[inn[0] as usize]
            {
                let pos = self.loc[out[0] as usize].1 as usize;
                scratch.replaced[k] = Some((pos as u32, inn[0]));
                if let &[player] = ix.members_of(inn[0]) {
                    let probe = &mut scratch.probe[k];
                    sc.probe_sized::<TS, NF, P, Q, QS>(
                        rows,
                        i,
                        sc.slot_of(current, pos),
                        player,
                        probe,
                    );
                    overdue += probe.overdue() as i64 - self.evals[i].overdue as i64;
                    ub[k] =
                        sc.probe_quality_bound(probe, rows.split_best(i)) - self.evals[i].quality;
                    probed[k] = true;
                    continue;
                }
            }
            let (units, row) = if k == 0 {
                (&mut scratch.a, &mut scratch.row_a)
            } else {
                (&mut scratch.b, &mut scratch.row_b)
            };
            let row = row.get_or_insert_with(|| sc.new_rows(1));
            if let Some((pos, inn)) = scratch.replaced[k] {
                pending[k] = sc.replace_in_row_sized::<TS, NF, P, Q, QS>(
                    rows,
                    i,
                    current,
                    pos as usize,
                    inn,
                    row,
                );
            } else {
                replaced(current, out, inn, &mut scratch.list);
                if !sc.build_row(&scratch.list, row, 0, units) {
                    return Verdict::Infeasible;
                }
                bounded = false;
            }
            sc.row_fixed_sized::<TS, NF, P, Q, QS>(row, 0);
            overdue += row.overdue(0) as i64 - self.evals[i].overdue as i64;
            if bounded {
                ub[k] = sc.row_quality_bound(row, 0, rows.split_best(i)) - self.evals[i].quality;
            }
        }
        let bounded = bounded && overdue == 0;
        if bounded && ub[0] + ub[1] < min_quality_delta {
            return Verdict::Below;
        }
        // Score the side with the lower bound first: the second chance below then
        // rejects more often (measured: 45% of moves instead of 40% on 300-player
        // pools; the bound's slack tends to be larger on that side).
        let order = if ub[1] < ub[0] { [1, 0] } else { [0, 1] };
        let mut delta = RoundValue::default();
        let mut new = [MatchEval::INFEASIBLE; 2];
        for (n, k) in order.into_iter().enumerate() {
            let m = if k == 0 { a } else { b };
            if m == BENCH {
                continue;
            }
            // second chance: one side exact, the other still bounded
            if n == 1 && bounded && delta.quality + ub[k] < min_quality_delta {
                return Verdict::Below;
            }
            let row = if k == 0 {
                &mut scratch.row_a
            } else {
                &mut scratch.row_b
            };
            let row = row.get_or_insert_with(|| sc.new_rows(1));
            if probed[k] {
                pending[k] =
                    sc.commit_sized::<TS, NF, P, Q, QS>(rows, m as usize, &scratch.probe[k], row);
            }
            sc.finish_sized::<TS, NF, P, Q, QS>(row, std::mem::take(&mut pending[k]));
            new[k] = sc.evaluate_row_sized::<TS, NF, P, Q, QS>(row, 0);
            delta.add(&new[k], 1.0);
            delta.add(&self.evals[m as usize], -1.0);
        }
        Verdict::Scored(Scored {
            delta,
            new_a: new[0],
            new_b: new[1],
            generation: scratch.generation,
        })
    }

    /// The general scorer's path: re-evaluate the touched matches from their units.
    fn score_general(
        &self,
        sc: &Scorer,
        a: u32,
        a_out: &[u32],
        b: u32,
        b_out: &[u32],
        scratch: &mut Scratch,
    ) -> Verdict {
        let mut delta = RoundValue::default();
        let mut new = [MatchEval::INFEASIBLE; 2];
        for (k, (m, out, inn, units)) in [
            (a, a_out, b_out, &mut scratch.a),
            (b, b_out, a_out, &mut scratch.b),
        ]
        .into_iter()
        .enumerate()
        {
            if m == BENCH {
                continue;
            }
            replaced(&self.matches[m as usize], out, inn, units);
            new[k] = sc.evaluate(units);
            if !new[k].feasible {
                return Verdict::Infeasible;
            }
            delta.add(&new[k], 1.0);
            delta.add(&self.evals[m as usize], -1.0);
        }
        Verdict::Scored(Scored {
            delta,
            new_a: new[0],
            new_b: new[1],
            generation: scratch.generation,
        })
    }

    /// Apply a scored exchange.
    #[allow(clippy::too_many_arguments)]
    pub fn apply_exchange(
        &mut self,
        sc: &Scorer,
        a: u32,
        a_out: &[u32],
        b: u32,
        b_out: &[u32],
        s: &Scored,
        scratch: &mut Scratch,
    ) {
        if self.rows.is_some() {
            if s.generation != scratch.generation {
                // another exchange was scored since: rebuild this one's new rows
                self.score_exchange(sc, a, a_out, b, b_out, scratch)
                    .expect("an exchange that scored before still scores");
            }
            self.apply_rows(a, a_out, b, b_out, scratch);
        } else {
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

    /// Fast path: the touched matches take the scratch's unit lists and rows.
    fn apply_rows(&mut self, a: u32, a_out: &[u32], b: u32, b_out: &[u32], scratch: &Scratch) {
        // the bench first: its removals read the bench positions in `loc`
        if b == BENCH {
            self.bench_exchange(b_out, a_out);
        }
        if a == BENCH {
            self.bench_exchange(a_out, b_out);
        }
        for (m, units, row, replaced) in [
            (a, &scratch.a, &scratch.row_a, scratch.replaced[0]),
            (b, &scratch.b, &scratch.row_b, scratch.replaced[1]),
        ] {
            if m == BENCH {
                continue;
            }
            let list = &mut self.matches[m as usize];
            if let Some((pos, inn)) = replaced {
                list[pos as usize] = inn;
                self.loc[inn as usize] = (m, pos);
            } else {
                list.clone_from(units);
                for (k, &u) in list.iter().enumerate() {
                    self.loc[u as usize] = (m, k as u32);
                }
            }
            let rows = self.rows.as_mut().expect("fast path");
            rows.copy_row(m as usize, row.as_ref().expect("scored row"), 0);
        }
    }

    /// Take `out` off the bench and put `inn` on it.
    fn bench_exchange(&mut self, out: &[u32], inn: &[u32]) {
        for &x in out {
            let (_, p) = self.loc[x as usize];
            self.bench.swap_remove(p as usize);
            if let Some(&moved) = self.bench.get(p as usize) {
                self.loc[moved as usize] = (BENCH, p);
            }
        }
        for &y in inn {
            self.loc[y as usize] = (BENCH, self.bench.len() as u32);
            self.bench.push(y);
        }
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

    /// Put the units of every hostless match (`MatchEval::hosted`) on the bench. The
    /// value does not change: a hostless match counts for nothing.
    pub fn drop_hostless(&mut self, sc: &Scorer) {
        if self.evals.iter().all(|e| e.allowed) {
            return;
        }
        let keep: Vec<usize> = (0..self.matches.len())
            .filter(|&i| self.evals[i].allowed)
            .collect();
        for (i, m) in self.matches.iter().enumerate() {
            if !self.evals[i].allowed {
                self.bench.extend_from_slice(m);
            }
        }
        if let Some(rows) = &self.rows {
            let mut kept = sc.new_rows(keep.len());
            for (to, &from) in keep.iter().enumerate() {
                kept.copy_row(to, rows, from);
            }
            self.rows = Some(kept);
        }
        self.matches = keep
            .iter()
            .map(|&i| std::mem::take(&mut self.matches[i]))
            .collect();
        self.evals = keep.iter().map(|&i| self.evals[i]).collect();
        self.reindex();
    }

    /// Add a new match formed from bench units (must be feasible).
    pub fn add_match(&mut self, sc: &Scorer, mut units: Vec<u32>, mut eval: MatchEval) {
        if let Some(rows) = &mut self.rows {
            let r = rows.len();
            rows.push_row();
            let mut order = Vec::new();
            let ok = sc.build_row(&units, rows, r, &mut order);
            assert!(ok, "an added match is valid");
            units = order;
            eval = sc.score_row(rows, r);
        }
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
