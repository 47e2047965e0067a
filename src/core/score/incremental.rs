//! Incremental match scoring for the search, on the fast path (two teams, p = 1, no
//! roles, only the common factors: `Scorer::is_fast`).
//!
//! The search state keeps one row per match with everything the split loop reads: the
//! players in the split table's slot order with their skills and waits, and per slot
//! pair the perceived ping, whether it is above the host limit, and the history costs.
//! A move that exchanges a unit for one of the same size (solo for solo, party for
//! equal party: most moves) copies the row and recomputes only the pairs of the
//! incoming players (5 of 15 pairs in 3v3, 9 of 45 in 5v5); other moves rebuild the
//! row. The values are those of `Scorer::evaluate` (the from-scratch oracle the state
//! is checked against), up to rounding: sums run over the same terms in another order.
//!
//! A replaced row also carries an upper bound on how much its best split can have
//! gained over the old row's (each factor's change is bounded by what the move
//! touched), so that the annealing can reject a clearly worse move before running the
//! split loops (`State::score_exchange_above`).

// Slot-indexed arrays are the point of this hot loop.
#![allow(clippy::needless_range_loop)]

use std::ops::Range;

use super::super::model::{CurveKind, SpreadMeasure};
use super::*;

/// One player slot of a row.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    player: u32,
    /// Bit j set when the ping to slot j is above `hosts.max_ping_ms`.
    over: u32,
    /// Sum of the slot's pairs' quantized pings.
    rsum: u32,
    /// Sum of the slot's pairs' history cost "if opponents" minus "if teammates".
    hsum: f64,
    skill: f64,
    wait: f64,
}

/// Per-match scalars of a row.
#[derive(Debug, Clone, Copy, Default)]
struct RowInfo {
    /// Index of the shape's split table.
    table: u32,
    /// Number of slot pairs with history, and the sum over all pairs of the cost if
    /// teammates (the split loop adds the cross pairs' opponents-minus-teammates cost).
    hist_pairs: u32,
    tm_total: f64,
    overdue: u32,
    /// Weighted split-independent factors and summed wait (`row_fixed`).
    fixed: f64,
    wait: f64,
    /// Weighted split-dependent factors of the best split (`evaluate_row`).
    split_best: f64,
    /// After a replacement: an upper bound on split_best(new) - split_best(old);
    /// infinite for a row built from scratch.
    gain_bound: f64,
}

/// Rows of match data, flat (stride: players per match, or pairs per match).
#[derive(Debug, Clone, Default)]
pub struct MatchRows {
    ppm: usize,
    npairs: usize,
    slots: Vec<Slot>,
    /// Quantized perceived ping score per slot pair (`pair_index` order).
    ps: Vec<u32>,
    /// History cost per slot pair: (if teammates, if opponents).
    hist: Vec<(f32, f32)>,
    info: Vec<RowInfo>,
}

impl MatchRows {
    /// The stored best split value of row r (for `Scorer::row_quality_bound`).
    #[inline]
    pub fn split_best(&self, r: usize) -> f64 {
        self.info[r].split_best
    }

    /// Overdue players in row r.
    #[inline]
    pub fn overdue(&self, r: usize) -> u32 {
        self.info[r].overdue
    }

    /// `rows` empty rows for matches of `ppm` players.
    pub fn new(ppm: usize, rows: usize) -> MatchRows {
        let npairs = ppm * ppm.saturating_sub(1) / 2;
        MatchRows {
            ppm,
            npairs,
            slots: vec![Slot::default(); ppm * rows],
            ps: vec![0; npairs * rows],
            hist: vec![(0.0, 0.0); npairs * rows],
            info: vec![RowInfo::default(); rows],
        }
    }

    pub fn len(&self) -> usize {
        self.info.len()
    }

    pub fn is_empty(&self) -> bool {
        self.info.is_empty()
    }

    /// Append an empty row.
    pub fn push_row(&mut self) {
        let (p, q) = (self.ppm, self.npairs);
        self.slots.extend(std::iter::repeat_n(Slot::default(), p));
        self.ps.extend(std::iter::repeat_n(0, q));
        self.hist.extend(std::iter::repeat_n((0.0, 0.0), q));
        self.info.push(RowInfo::default());
    }

    /// Copy row `from` of `src` into row `to` of self.
    #[inline]
    pub fn copy_row(&mut self, to: usize, src: &MatchRows, from: usize) {
        let (p, q) = (self.ppm, self.npairs);
        self.slots[to * p..(to + 1) * p].copy_from_slice(&src.slots[from * p..(from + 1) * p]);
        self.ps[to * q..(to + 1) * q].copy_from_slice(&src.ps[from * q..(from + 1) * q]);
        // a row without history pairs has all-zero costs
        if src.info[from].hist_pairs > 0 || self.info[to].hist_pairs > 0 {
            self.hist[to * q..(to + 1) * q].copy_from_slice(&src.hist[from * q..(from + 1) * q]);
        }
        self.info[to] = src.info[from];
    }
}

impl Scorer<'_> {
    /// New empty rows sized for this queue.
    pub fn new_rows(&self, rows: usize) -> MatchRows {
        MatchRows::new(self.players_per_match(), rows)
    }

    /// Fill row `r` from scratch for the match `units`; `order` receives the units in
    /// slot order. False (row untouched) if the units do not make a valid match.
    pub fn build_row(
        &self,
        units: &[u32],
        rows: &mut MatchRows,
        r: usize,
        order: &mut Vec<u32>,
    ) -> bool {
        let Some((table, sorted, k)) = self.shape_index(units) else {
            return false;
        };
        if self.tables.get(table).splits == 0 {
            return false;
        }
        order.clear();
        order.extend_from_slice(&sorted[..k]);
        let (p, q) = (rows.ppm, rows.npairs);
        let mut n = 0;
        let mut overdue = 0;
        for &u in &sorted[..k] {
            for &pl in self.ix.members_of(u) {
                let hot = self.ix.hot[pl as usize];
                rows.slots[r * p + n] = Slot {
                    player: pl,
                    skill: hot.skill,
                    wait: hot.wait_capped,
                    ..Slot::default()
                };
                overdue += hot.overdue;
                n += 1;
            }
        }
        debug_assert_eq!(n, p);
        rows.ps[r * q..(r + 1) * q].fill(0);
        rows.hist[r * q..(r + 1) * q].fill((0.0, 0.0));
        rows.info[r] = RowInfo {
            table,
            overdue,
            gain_bound: f64::INFINITY,
            ..RowInfo::default()
        };
        if self.ping_pairs() {
            for i in 0..p {
                for j in i + 1..p {
                    self.set_ping(rows, r, i, j);
                }
            }
        }
        if self.weights[OPPONENT_VARIATION] > 0.0 {
            for i in 0..p {
                self.scan_history(rows, r, i);
            }
        }
        true
    }

    /// Copy row `r` of `src` into row 0 of `dst`, with the unit at position `pos` of
    /// `units` (the row's slot order) replaced by `inn`, a unit of the same size.
    /// `order` receives the new slot order of units.
    ///
    /// The incoming players' history is not looked up yet (it can only lower the
    /// score, so the gain bound does not need it): call `finish_replace` with the
    /// returned slot range before `evaluate_row`.
    #[allow(clippy::too_many_arguments)]
    pub fn replace_in_row(
        &self,
        src: &MatchRows,
        r: usize,
        units: &[u32],
        pos: usize,
        inn: u32,
        dst: &mut MatchRows,
        order: &mut Vec<u32>,
    ) -> Range<usize> {
        order.clear();
        order.extend_from_slice(units);
        order[pos] = inn;
        let offset: usize = units[..pos]
            .iter()
            .map(|&u| self.ix.unit_size[u as usize] as usize)
            .sum();
        let changed = offset..offset + self.ix.unit_size[inn as usize] as usize;
        // fixed-size rows: unrolled loops and inline copies
        match self.model.team_size {
            1 => self.replace_sized::<2, 1>(src, r, changed.clone(), inn, dst),
            2 => self.replace_sized::<4, 6>(src, r, changed.clone(), inn, dst),
            3 => self.replace_sized::<6, 15>(src, r, changed.clone(), inn, dst),
            4 => self.replace_sized::<8, 28>(src, r, changed.clone(), inn, dst),
            5 => self.replace_sized::<10, 45>(src, r, changed.clone(), inn, dst),
            6 => self.replace_sized::<12, 66>(src, r, changed.clone(), inn, dst),
            7 => self.replace_sized::<14, 91>(src, r, changed.clone(), inn, dst),
            _ => self.replace_sized::<16, 120>(src, r, changed.clone(), inn, dst),
        }
        changed
    }

    /// Look up the history of the incoming slots of a replaced row (see
    /// `replace_in_row`).
    #[inline]
    pub fn finish_replace(&self, rows: &mut MatchRows, changed: Range<usize>) {
        if self.weights[OPPONENT_VARIATION] > 0.0 {
            for i in changed {
                self.scan_history(rows, 0, i);
            }
        }
    }

    /// `replace_in_row` for rows of P players (Q = P (P - 1) / 2 pairs).
    #[inline(always)]
    fn replace_sized<const P: usize, const Q: usize>(
        &self,
        src: &MatchRows,
        r: usize,
        changed: Range<usize>,
        inn: u32,
        dst: &mut MatchRows,
    ) {
        debug_assert!(src.ppm == P && src.npairs == Q);
        assert!(changed.end <= P);
        match self.ix.members_of(inn) {
            &[player] => self.replace_solo::<P, Q>(src, r, changed.start, player, dst),
            _ => self.replace_party::<P, Q>(src, r, changed, inn, dst),
        }
    }

    #[inline(always)]
    fn replace_party<const P: usize, const Q: usize>(
        &self,
        src: &MatchRows,
        r: usize,
        changed: Range<usize>,
        inn: u32,
        dst: &mut MatchRows,
    ) {
        let pair = &Pairs::<P>::INDEX;
        let slots: &mut [Slot; P] = (&mut dst.slots[..P]).try_into().expect("P slots");
        slots.copy_from_slice(&src.slots[r * P..(r + 1) * P]);
        let ps: &mut [u32; Q] = (&mut dst.ps[..Q]).try_into().expect("Q pairs");
        ps.copy_from_slice(&src.ps[r * Q..(r + 1) * Q]);
        let mut info = src.info[r];
        // a row without history pairs has all-zero costs
        if info.hist_pairs > 0 || dst.info[0].hist_pairs > 0 {
            dst.hist[..Q].copy_from_slice(&src.hist[r * Q..(r + 1) * Q]);
        }
        let members = self.ix.members_of(inn);
        let w = &self.weights;
        let mut skill_moved = 0.0;
        for (k, &pl) in members.iter().enumerate() {
            let slot = &mut slots[changed.start + k];
            info.overdue -= self.ix.hot[slot.player as usize].overdue;
            let hot = self.ix.hot[pl as usize];
            skill_moved += (hot.skill - slot.skill).abs();
            slot.player = pl;
            slot.skill = hot.skill;
            slot.wait = hot.wait_capped;
            info.overdue += hot.overdue;
        }
        // The equal-teams curve is 1-Lipschitz in x (all four kinds), and moving a
        // slot's skill by delta moves every split's |team 0 - team 1| by at most delta.
        let mut gain = w[EQUAL_TEAMS] * skill_moved * self.equal_teams_inverse();
        if self.ping_pairs() {
            // A changed slot faces exactly team_size opponents among the slots outside
            // its unit, so its cross pings gain at most its team_size largest rises.
            let ts = P / 2;
            let mut ping_up = 0u32;
            for i in changed.clone() {
                let v = slots[i].player;
                let mut rises = [0u32; P];
                let mut n = 0;
                for j in 0..P {
                    let inside = changed.contains(&j);
                    // pairs inside the incoming unit once, from its lower slot
                    if j == i || (inside && j < i) {
                        continue;
                    }
                    let bits = self.pair_ping_bits(v, slots[j].player);
                    let (score, o) = (bits & !PING_OVER, bits >> 31);
                    let k = pair[i][j] as usize;
                    let old = std::mem::replace(&mut ps[k], score);
                    slots[i].rsum = slots[i].rsum.wrapping_sub(old).wrapping_add(score);
                    slots[j].rsum = slots[j].rsum.wrapping_sub(old).wrapping_add(score);
                    slots[i].over = (slots[i].over & !(1 << j)) | (o << j);
                    slots[j].over = (slots[j].over & !(1 << i)) | (o << i);
                    if !inside && score > old {
                        // insertion into the descending list of rises
                        let rise = score - old;
                        let mut at = n;
                        while at > 0 && rises[at - 1] < rise {
                            rises[at] = rises[at - 1];
                            at -= 1;
                        }
                        rises[at] = rise;
                        n += 1;
                    }
                }
                ping_up += rises[..n.min(ts)].iter().sum::<u32>();
            }
            if w[ENEMY_PING] > 0.0 {
                gain += w[ENEMY_PING] * ping_up as f64 / ((ts * ts) as f64 * PING_UNIT);
            }
        }
        if w[OPPONENT_VARIATION] > 0.0 && info.hist_pairs > 0 {
            // clear the outgoing players' pairs (`finish_replace` sets the incoming
            // ones'): removed costs are the most the history term can gain
            let mut cleared = 0.0f64;
            for i in changed.clone() {
                for j in 0..P {
                    if j != i && !(changed.contains(&j) && j < i) {
                        let k = pair[i][j] as usize;
                        let (tm, op) = dst.hist[k];
                        if tm != 0.0 || op != 0.0 {
                            cleared += tm.max(op) as f64;
                            clear_history(dst, &mut info, k, i, j);
                        }
                    }
                }
            }
            gain += w[OPPONENT_VARIATION] * cleared / Q as f64;
        }
        info.gain_bound = gain;
        dst.info[0] = info;
    }

    /// `replace_sized` for a solo at slot i (most moves): `player` replaces it.
    #[inline(always)]
    fn replace_solo<const P: usize, const Q: usize>(
        &self,
        src: &MatchRows,
        r: usize,
        i: usize,
        inn: u32,
        dst: &mut MatchRows,
    ) {
        // (`inn` is the incoming player here, not its unit)
        let i = i.min(P - 1);
        let pair = &Pairs::<P>::INDEX[i];
        let mut info = src.info[r];
        // a row without history pairs has all-zero costs
        if info.hist_pairs > 0 || dst.info[0].hist_pairs > 0 {
            dst.hist[..Q].copy_from_slice(&src.hist[r * Q..(r + 1) * Q]);
        }
        let slots: &mut [Slot; P] = (&mut dst.slots[..P]).try_into().expect("P slots");
        slots.copy_from_slice(&src.slots[r * P..(r + 1) * P]);
        let ps: &mut [u32; Q] = (&mut dst.ps[..Q]).try_into().expect("Q pairs");
        ps.copy_from_slice(&src.ps[r * Q..(r + 1) * Q]);
        let w = &self.weights;
        let (out, hot) = (
            self.ix.hot[slots[i].player as usize],
            self.ix.hot[inn as usize],
        );
        info.overdue = info.overdue - out.overdue + hot.overdue;
        // see `replace_sized` for the bound's terms
        let mut gain = w[EQUAL_TEAMS] * (hot.skill - out.skill).abs() * self.equal_teams_inverse();
        slots[i].player = inn;
        slots[i].skill = hot.skill;
        slots[i].wait = hot.wait_capped;
        if self.ping_pairs() {
            let mut rises = [0u32; P];
            let (mut rsum, mut over) = (0u32, 0u32);
            for j in 0..P {
                if j == i {
                    continue;
                }
                let bits = self.pair_ping_bits(inn, slots[j].player);
                let (score, o) = (bits & !PING_OVER, bits >> 31);
                let old = std::mem::replace(&mut ps[pair[j] as usize], score);
                slots[j].rsum = slots[j].rsum - old + score;
                slots[j].over = (slots[j].over & !(1 << i)) | (o << i);
                rsum += score;
                over |= o << j;
                rises[j] = score.saturating_sub(old);
            }
            slots[i].rsum = rsum;
            slots[i].over = over;
            if w[ENEMY_PING] > 0.0 {
                // the team_size largest rises, by partial insertion sort
                let ts = P / 2;
                let mut top = [0u32; P];
                for &x in &rises {
                    let mut at = ts;
                    while at > 0 && top[at - 1] < x {
                        top[at] = top[at - 1];
                        at -= 1;
                    }
                    top[at] = x;
                }
                let ping_up: u32 = top[..ts].iter().sum();
                gain += w[ENEMY_PING] * ping_up as f64 / ((ts * ts) as f64 * PING_UNIT);
            }
        }
        if w[OPPONENT_VARIATION] > 0.0 && info.hist_pairs > 0 {
            let mut cleared = 0.0f64;
            for j in 0..P {
                if j != i {
                    let k = pair[j] as usize;
                    let (tm, op) = dst.hist[k];
                    if tm != 0.0 || op != 0.0 {
                        cleared += tm.max(op) as f64;
                        clear_history(dst, &mut info, k, i, j);
                    }
                }
            }
            gain += w[OPPONENT_VARIATION] * cleared / Q as f64;
        }
        info.gain_bound = gain;
        dst.info[0] = info;
    }

    /// Whether rows keep pair pings (peer-to-peer with ping or hosts weighted).
    #[inline]
    fn ping_pairs(&self) -> bool {
        self.p2p && (self.weights[ENEMY_PING] > 0.0 || self.weights[TWO_HOSTS] > 0.0)
    }

    /// Recompute the ping of slot pair (i, j), i < j, of row r; (old, new) score.
    #[inline]
    fn set_ping(&self, rows: &mut MatchRows, r: usize, i: usize, j: usize) -> (u32, u32) {
        let (p, q) = (rows.ppm, rows.npairs);
        let slots = &mut rows.slots[r * p..(r + 1) * p];
        let (a, b) = (slots[i].player, slots[j].player);
        let (score, over) = self.pair_ping_packed(a, b);
        let old = std::mem::replace(&mut rows.ps[r * q + pair_index(i, j, p)], score);
        slots[i].rsum = slots[i].rsum - old + score;
        slots[j].rsum = slots[j].rsum - old + score;
        let o = over as u32;
        slots[i].over = (slots[i].over & !(1 << j)) | (o << j);
        slots[j].over = (slots[j].over & !(1 << i)) | (o << i);
        (old, score)
    }

    /// Set the history costs of slot i's pairs from its player's history list.
    #[inline]
    fn scan_history(&self, rows: &mut MatchRows, r: usize, i: usize) {
        let p = rows.ppm;
        let player = rows.slots[r * p + i].player;
        let mask = self.hist_mask[player as usize];
        if mask == 0 {
            return;
        }
        let list = &self.ix.history[player as usize];
        for j in 0..p {
            let other = rows.slots[r * p + j].player;
            if j == i || mask & (1 << (other % 64)) == 0 {
                continue;
            }
            if let Ok(x) = list.binary_search_by_key(&other, |e| e.0) {
                let (_, tm, op) = list[x];
                set_history(rows, r, i.min(j), i.max(j), tm, op);
            }
        }
    }

    /// Compute and store row r's split-independent part (equal players, hosts or the
    /// dedicated region's ping, waits).
    pub fn row_fixed(&self, rows: &mut MatchRows, r: usize) {
        let p = rows.ppm;
        let slots = &rows.slots[r * p..(r + 1) * p];
        let w = &self.weights;
        let model = self.model;
        let mut skill = [0.0f64; MAXP];
        let mut wait = 0.0;
        for (k, s) in slots.iter().enumerate() {
            skill[k] = s.skill;
            wait += s.wait;
        }
        let skill = &skill[..p];
        let mut fixed = 0.0;
        if w[EQUAL_PLAYERS] > 0.0 {
            let spread = match model.equal_players.measure {
                SpreadMeasure::Pairwise => {
                    let mut sum = 0.0;
                    for i in 0..p {
                        let si = skill[i];
                        for &sj in &skill[i + 1..] {
                            sum += (si - sj).abs();
                        }
                    }
                    if p < 2 {
                        0.0
                    } else {
                        sum / (p * (p - 1) / 2) as f64
                    }
                }
                SpreadMeasure::Uniformity => equal_players::spread(skill, &model.equal_players),
            };
            fixed += w[EQUAL_PLAYERS] * model.equal_players.curve.score(spread);
        }
        if self.p2p {
            if w[TWO_HOSTS] > 0.0 {
                let capable = slots.iter().filter(|s| s.over == 0).count();
                fixed += w[TWO_HOSTS] * hosts::score(capable, &model.hosts);
            }
        } else if w[ENEMY_PING] > 0.0 {
            let mut players = [0u32; MAXP];
            for (k, s) in slots.iter().enumerate() {
                players[k] = s.player;
            }
            let (_, score) = enemy_ping::choose_region(self.ix, &players[..p], &model.ping);
            fixed += w[ENEMY_PING] * score;
        }
        let info = &mut rows.info[r];
        info.fixed = fixed;
        info.wait = wait;
    }

    /// An upper bound on the quality of row r (a replaced row whose `row_fixed` is
    /// computed), from the old row's best split and the replacement's gain bound.
    #[inline]
    pub fn row_quality_bound(&self, rows: &MatchRows, r: usize, old_split_best: f64) -> f64 {
        let info = &rows.info[r];
        let score = ((old_split_best + info.gain_bound + info.fixed) / self.wsum).min(1.0);
        // a margin far above rounding: a move is never rejected by a bound that rounding
        // put a few ulps below its exact score
        self.shaped(score.max(0.0)) + info.wait * self.beta + 1e-12
    }

    /// Score row r from scratch: `row_fixed`, then `evaluate_row`.
    pub fn score_row(&self, rows: &mut MatchRows, r: usize) -> MatchEval {
        self.row_fixed(rows, r);
        self.evaluate_row(rows, r)
    }

    /// Score row r (its `row_fixed` computed): the best split over all factors, the same
    /// values as `evaluate`. Stores the best split's value in the row.
    pub fn evaluate_row(&self, rows: &mut MatchRows, r: usize) -> MatchEval {
        let (best, split) = match self.model.team_size {
            1 => self.best_split::<1, 0>(rows, r),
            2 => self.best_split::<2, 1>(rows, r),
            3 => self.best_split::<3, 3>(rows, r),
            4 => self.best_split::<4, 6>(rows, r),
            5 => self.best_split::<5, 10>(rows, r),
            6 => self.best_split::<6, 15>(rows, r),
            7 => self.best_split::<7, 21>(rows, r),
            _ => self.best_split::<8, 28>(rows, r),
        };
        let info = &mut rows.info[r];
        info.split_best = best;
        let score = ((best + info.fixed) / self.wsum).clamp(0.0, 1.0);
        MatchEval {
            feasible: true,
            score,
            split,
            quality: self.shaped(score) + info.wait * self.beta,
            overdue: info.overdue,
        }
    }

    /// The split loop for team size TS (NF = TS (TS - 1) / 2 pairs inside a team):
    /// (best weighted split-dependent value, its split).
    #[inline(always)]
    fn best_split<const TS: usize, const NF: usize>(
        &self,
        rows: &MatchRows,
        r: usize,
    ) -> (f64, u32) {
        let (p, q) = (rows.ppm, rows.npairs);
        debug_assert_eq!(p, 2 * TS);
        let info = rows.info[r];
        let table = self.tables.get(info.table);
        let w = &self.weights;
        let model = self.model;
        // local copies indexed with masks: no bounds checks in the loops
        let mut skill = [0.0f64; MAXP];
        let mut rsum = [0u32; MAXP];
        let mut hsum = [0.0f64; MAXP];
        for (k, s) in rows.slots[r * p..(r + 1) * p].iter().enumerate() {
            skill[k] = s.skill;
            rsum[k] = s.rsum;
            hsum[k] = s.hsum;
        }
        let ps = &rows.ps[r * q..(r + 1) * q];
        let h = &rows.hist[r * q..(r + 1) * q];
        let total_skill: f64 = skill.iter().sum();
        let (w_et, w_pm, w_ov) = (w[EQUAL_TEAMS], w[PREMADES], w[OPPONENT_VARIATION]);
        let et_inv = self.equal_teams_inverse();
        let w_ping = if self.p2p && w[ENEMY_PING] > 0.0 {
            w[ENEMY_PING] / (table.ncross as f64 * PING_UNIT)
        } else {
            0.0
        };
        let hist = w_ov > 0.0 && info.hist_pairs > 0;
        let mut base = if w_ov > 0.0 && !hist {
            w_ov * opponent_variation::score(0.0, p)
        } else {
            0.0
        };
        let mut premade = [0.0f64; MAXP + 1];
        if w_pm > 0.0 {
            for (d, v) in self.premade_by_spread.iter().enumerate() {
                premade[d] = w_pm * v;
            }
        }
        let spread_varies = !table.spread_constant;
        if !spread_varies && table.splits > 0 {
            base += premade[table.party_spread[0] as usize % (MAXP + 1)];
        }
        let (first, _) = table.first_team.as_chunks::<TS>();
        // (as_chunks of size 0 panics: 1v1 has no pairs inside a team)
        let pairs: &[[u8; NF]] = if NF == 0 {
            &[]
        } else {
            table.first_pairs.as_chunks::<NF>().0
        };
        let curve = &model.equal_teams.curve;
        let linear = curve.kind == CurveKind::Linear;
        let mut best = f64::NEG_INFINITY;
        let mut best_split = 0u32;
        for s in 0..table.splits {
            let team = &first[s];
            let mut v = base;
            if spread_varies {
                v += premade[table.party_spread[s] as usize % (MAXP + 1)];
            }
            // team 0's skill, ping row sums and history row sums in one pass
            let (mut sum0, mut rs, mut hs) = (0.0, 0u32, 0.0);
            for &i in team {
                let i = i as usize % MAXP;
                sum0 += skill[i];
                rs += rsum[i];
                hs += hsum[i];
            }
            if w_et > 0.0 {
                let x = (2.0 * sum0 - total_skill).abs() * et_inv;
                v += w_et
                    * if linear {
                        (1.0 - x).max(0.0)
                    } else {
                        curve.score_scaled(x)
                    };
            }
            if w_ping > 0.0 {
                let mut within = 0u32;
                if NF > 0 {
                    for &k in &pairs[s] {
                        within += ps[k as usize];
                    }
                }
                v += w_ping * (rs - 2 * within) as f64;
            }
            if hist {
                let mut within = 0.0;
                if NF > 0 {
                    for &k in &pairs[s] {
                        let (tm, op) = h[k as usize];
                        within += op as f64 - tm as f64;
                    }
                }
                let cost = info.tm_total + (hs - 2.0 * within);
                v += w_ov * opponent_variation::score(cost, p);
            }
            if v > best {
                best = v;
                best_split = s as u32;
            }
        }
        (best, best_split)
    }
}

/// Set the history costs of slot pair (i, j), i < j, of row r, keeping the row's and
/// the slots' totals (exact: the costs are multiples of 2^-20).
#[inline]
fn set_history(rows: &mut MatchRows, r: usize, i: usize, j: usize, tm: f32, op: f32) {
    let p = rows.ppm;
    let k = r * rows.npairs + pair_index(i, j, p);
    let info = &mut rows.info[r];
    let (old_tm, old_op) = rows.hist[k];
    let mut d = 0.0;
    if old_tm != 0.0 || old_op != 0.0 {
        info.hist_pairs -= 1;
        info.tm_total -= old_tm as f64;
        d -= old_op as f64 - old_tm as f64;
    }
    rows.hist[k] = (tm, op);
    if tm != 0.0 || op != 0.0 {
        info.hist_pairs += 1;
        info.tm_total += tm as f64;
        d += op as f64 - tm as f64;
    }
    rows.slots[r * p + i].hsum += d;
    rows.slots[r * p + j].hsum += d;
}

/// Clear the history costs of slot pair k = (i, j) of row 0, keeping the totals in
/// `info` (the row's info, written back by the caller) and the slots' sums.
#[inline]
fn clear_history(rows: &mut MatchRows, info: &mut RowInfo, k: usize, i: usize, j: usize) {
    let (tm, op) = std::mem::take(&mut rows.hist[k]);
    info.hist_pairs -= 1;
    info.tm_total -= tm as f64;
    let d = op as f64 - tm as f64;
    rows.slots[i].hsum -= d;
    rows.slots[j].hsum -= d;
}

/// Slot pair indices of a row of P players, both orders: `INDEX[i][j] = pair_index`.
struct Pairs<const P: usize>;

impl<const P: usize> Pairs<P> {
    const INDEX: [[u8; P]; P] = {
        let mut t = [[0u8; P]; P];
        let mut i = 0;
        while i < P {
            let mut j = i + 1;
            while j < P {
                t[i][j] = pair_index(i, j, P) as u8;
                t[j][i] = t[i][j];
                j += 1;
            }
            i += 1;
        }
        t
    };
}
