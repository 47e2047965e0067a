//! Flexible formats (the AccelByte guide's alliance ranges): smaller matches from the players the
//! full matches left out.
//!
//! The search forms full-format matches exactly as for a fixed queue (same scorer,
//! same speed). This pass then looks at the bench only: every group of bench units
//! that fills a smaller format (e.g. 5v4, 4v4 in a 5v5 queue) is scored with that
//! format's scorer (the member-count difference in the average, `factors`), and a
//! group is a candidate only when its score reaches `alliance.short_match_min_score`,
//! the value of leaving its players for the next round. From the candidates the pass
//! keeps the set of disjoint matches with the most overdue players, then the most
//! players, then the highest quality: exactly (a dynamic program over subsets of the
//! bench) when the bench has at most `EXACT_UNITS` units and the candidates are
//! few, best candidate first otherwise.

use std::collections::HashMap;

use crate::score::{MatchEval, Scorer};

/// Benches of at most this many units get the exact selection.
pub const EXACT_UNITS: usize = 20;
/// Candidate groups scored per format at most (bounded work after the search): past
/// this the pass tries windows of the bench in skill order instead of every group.
pub const MAX_GROUPS: usize = 20_000;

/// A smaller match: its units, the index of its scorer in the `scorers` given, its
/// evaluation by that scorer.
#[derive(Debug, Clone)]
pub struct ShortMatch {
    pub units: Vec<u32>,
    pub format: usize,
    pub eval: MatchEval,
}

/// Form smaller matches from `bench` with `scorers` (one per smaller format). Returns
/// the matches and the units still on the bench.
pub fn form_short_matches(
    scorers: &[Scorer],
    min_score: f64,
    bench: &[u32],
) -> (Vec<ShortMatch>, Vec<u32>) {
    let Some(first) = scorers.first() else {
        return (Vec::new(), bench.to_vec());
    };
    let ix = first.ix;
    let size = |u: u32| ix.units[u as usize].size();
    let mut candidates: Vec<ShortMatch> = Vec::new();
    for (f, sc) in scorers.iter().enumerate() {
        let need = sc.players_per_match();
        for units in groups(bench, need, &size, |u| ix.units[u as usize].skill) {
            let eval = sc.evaluate(&units);
            if eval.valid() && eval.score >= min_score {
                candidates.push(ShortMatch {
                    units,
                    format: f,
                    eval,
                });
            }
        }
    }
    let chosen = if bench.len() <= EXACT_UNITS && candidates.len() <= MAX_GROUPS {
        select_exact(bench, &candidates, &size)
    } else {
        select_greedy(&candidates, &size)
    };
    let mut used = vec![false; ix.units.len()];
    let matches: Vec<ShortMatch> = chosen
        .into_iter()
        .map(|k| {
            for &u in &candidates[k].units {
                used[u as usize] = true;
            }
            candidates[k].clone()
        })
        .collect();
    let rest = bench
        .iter()
        .copied()
        .filter(|&u| !used[u as usize])
        .collect();
    (matches, rest)
}

/// (overdue players, players, quality) of a set of matches, compared in that order.
type Value = (i64, i64, f64);

fn value_of(m: &ShortMatch, size: &impl Fn(u32) -> usize) -> Value {
    let players: usize = m.units.iter().map(|&u| size(u)).sum();
    (m.eval.overdue as i64, players as i64, m.eval.quality)
}

fn better(a: Value, b: Value) -> bool {
    a.0 > b.0 || (a.0 == b.0 && (a.1 > b.1 || (a.1 == b.1 && a.2 > b.2)))
}

/// Groups of bench units with exactly `need` players: every group when there are at
/// most `MAX_GROUPS`, else windows of consecutive units in skill order.
fn groups(
    bench: &[u32],
    need: usize,
    size: &impl Fn(u32) -> usize,
    skill: impl Fn(u32) -> f64,
) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    if every_group(bench, 0, need, size, &mut cur, &mut out) {
        return out;
    }
    let mut sorted = bench.to_vec();
    sorted.sort_by(|&a, &b| skill(a).total_cmp(&skill(b)).then(a.cmp(&b)));
    let mut out = Vec::new();
    for start in 0..sorted.len() {
        let mut group = Vec::new();
        let mut left = need;
        for &u in &sorted[start..] {
            if size(u) <= left {
                group.push(u);
                left -= size(u);
                if left == 0 {
                    break;
                }
            }
        }
        if left == 0 {
            out.push(group);
        }
    }
    out
}

/// Depth-first over unit subsets; false when more than `MAX_GROUPS` exist.
fn every_group(
    bench: &[u32],
    from: usize,
    left: usize,
    size: &impl Fn(u32) -> usize,
    cur: &mut Vec<u32>,
    out: &mut Vec<Vec<u32>>,
) -> bool {
    if left == 0 {
        out.push(cur.clone());
        return out.len() <= MAX_GROUPS;
    }
    for k in from..bench.len() {
        let u = bench[k];
        if size(u) <= left {
            cur.push(u);
            let ok = every_group(bench, k + 1, left - size(u), size, cur, out);
            cur.pop();
            if !ok {
                return false;
            }
        }
    }
    true
}

/// The best set of disjoint candidates: over subsets of the bench, the lowest unit is
/// either left out or in one of the candidates that contain it.
fn select_exact(
    bench: &[u32],
    candidates: &[ShortMatch],
    size: &impl Fn(u32) -> usize,
) -> Vec<usize> {
    let pos: HashMap<u32, usize> = bench.iter().enumerate().map(|(i, &u)| (u, i)).collect();
    let mut by_low: Vec<Vec<(u32, usize)>> = vec![Vec::new(); bench.len()];
    for (k, c) in candidates.iter().enumerate() {
        let mask = c.units.iter().fold(0u32, |m, u| m | 1 << pos[u]);
        by_low[mask.trailing_zeros() as usize].push((mask, k));
    }
    type Memo = HashMap<u32, (Value, Option<(usize, u32)>)>;
    fn best(
        s: u32,
        by_low: &[Vec<(u32, usize)>],
        candidates: &[ShortMatch],
        size: &dyn Fn(u32) -> usize,
        memo: &mut Memo,
    ) -> Value {
        if s == 0 {
            return (0, 0, 0.0);
        }
        if let Some(v) = memo.get(&s) {
            return v.0;
        }
        let low = s.trailing_zeros() as usize;
        let rest = s & !(1 << low);
        let mut b = (best(rest, by_low, candidates, size, memo), None);
        for &(m, k) in &by_low[low] {
            if m & s == m {
                let r = best(s & !m, by_low, candidates, size, memo);
                let v = value_of(&candidates[k], &size);
                let cand = (r.0 + v.0, r.1 + v.1, r.2 + v.2);
                if better(cand, b.0) {
                    b = (cand, Some((k, s & !m)));
                }
            }
        }
        memo.insert(s, b);
        b.0
    }
    let full = if bench.len() == 32 {
        u32::MAX
    } else {
        (1u32 << bench.len()) - 1
    };
    let mut memo = Memo::new();
    best(full, &by_low, candidates, size, &mut memo);
    // walk the memo's choices
    let mut chosen = Vec::new();
    let mut s = full;
    while s != 0 {
        match memo.get(&s).and_then(|e| e.1) {
            Some((k, next)) => {
                chosen.push(k);
                s = next;
            }
            None => s &= s - 1,
        }
    }
    chosen
}

/// Best candidate first, skipping those that overlap a chosen one.
fn select_greedy(candidates: &[ShortMatch], size: &impl Fn(u32) -> usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| {
        let (va, vb) = (
            value_of(&candidates[a], size),
            value_of(&candidates[b], size),
        );
        vb.0.cmp(&va.0)
            .then(vb.1.cmp(&va.1))
            .then(vb.2.total_cmp(&va.2))
            .then(a.cmp(&b))
    });
    let mut taken = std::collections::HashSet::new();
    let mut chosen = Vec::new();
    for k in order {
        if candidates[k].units.iter().all(|u| !taken.contains(u)) {
            taken.extend(candidates[k].units.iter().copied());
            chosen.push(k);
        }
    }
    chosen
}
