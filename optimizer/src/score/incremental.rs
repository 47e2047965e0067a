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
//! Rows have a fixed size per queue, so every loop here is compiled once per team size
//! (`by_size!`): fixed trip counts, inline copies, and pair arrays padded to a power of
//! two so that indices are masked instead of bounds-checked. The search dispatches on
//! the size once per move (`State::score_exchange_above`) and calls the `*_sized`
//! functions, which then inline into one function.
//!
//! A replaced row also carries an upper bound on how much its best split can have
//! gained over the old row's (each factor's change is bounded by what the move
//! touched), so that the annealing can reject a clearly worse move before running the
//! split loops. A solo replacement (most moves) is first only probed (`probe_sized`:
//! its new pings, split-independent part and bound, without writing a row), and its
//! row is written (`commit_sized`) only when the move passes the bound: most moves
//! end there.

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
    /// Players who can host (`row_fixed`; peer-to-peer, else every player): a row
    /// without any is a hostless match, worth nothing (`MatchEval::scored`).
    hosts: u32,
    /// Weighted split-independent factors and summed wait (`row_fixed`).
    fixed: f64,
    wait: f64,
    /// Weighted split-dependent factors of the best split (`evaluate_row`).
    split_best: f64,
    /// After a replacement: an upper bound on split_best(new) - split_best(old);
    /// infinite for a row built from scratch.
    gain_bound: f64,
}

/// A solo replacement scored for its bound but not yet written (`Scorer::probe_sized`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SoloProbe {
    slot: u32,
    player: u32,
    /// Packed ping (`pair_ping_bits`) from the incoming player to each slot.
    bits: [u32; MAXP],
    /// The new row's info, its history totals still those of the source row.
    info: RowInfo,
}

impl SoloProbe {
    #[inline]
    pub fn overdue(&self) -> u32 {
        self.info.overdue
    }
}

/// Rows of match data, flat (stride: players per match, or the padded pair count).
#[derive(Debug, Clone, Default)]
pub struct MatchRows {
    ppm: usize,
    /// Pairs per row plus one, padded to a power of two (`pair_index` order; the
    /// padding stays 0).
    stride: usize,
    slots: Vec<Slot>,
    /// Quantized perceived ping score per slot pair.
    ps: Vec<u32>,
    /// History cost per slot pair: (if teammates, if opponents).
    hist: Vec<(f32, f32)>,
    info: Vec<RowInfo>,
}

/// Call `$obj.$method::<TS, NF, P, Q, QS>(args)` for the queue's team size: TS players
/// a team, NF = TS (TS - 1) / 2 pairs inside a team, P = 2 TS players a match,
/// Q = P (P - 1) / 2 slot pairs, QS = Q + 1 (a spare pair that stays 0, see `Pairs`)
/// padded to a power of two.
macro_rules! by_size {
    ($ts:expr, $obj:ident . $method:ident ( $($arg:expr),* )) => {
        match $ts {
            1 => $obj.$method::<1, 0, 2, 1, 2>($($arg),*),
            2 => $obj.$method::<2, 1, 4, 6, 8>($($arg),*),
            3 => $obj.$method::<3, 3, 6, 15, 16>($($arg),*),
            4 => $obj.$method::<4, 6, 8, 28, 32>($($arg),*),
            5 => $obj.$method::<5, 10, 10, 45, 64>($($arg),*),
            6 => $obj.$method::<6, 15, 12, 66, 128>($($arg),*),
            7 => $obj.$method::<7, 21, 14, 91, 128>($($arg),*),
            _ => $obj.$method::<8, 28, 16, 120, 128>($($arg),*),
        }
    };
}

pub(crate) use by_size;

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
        let stride = (ppm * ppm.saturating_sub(1) / 2 + 1).next_power_of_two();
        MatchRows {
            ppm,
            stride,
            slots: vec![Slot::default(); ppm * rows],
            ps: vec![0; stride * rows],
            hist: vec![(0.0, 0.0); stride * rows],
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
        let (p, q) = (self.ppm, self.stride);
        self.slots.extend(std::iter::repeat_n(Slot::default(), p));
        self.ps.extend(std::iter::repeat_n(0, q));
        self.hist.extend(std::iter::repeat_n((0.0, 0.0), q));
        self.info.push(RowInfo::default());
    }

    /// Copy row `from` of `src` into row `to` of self.
    #[inline]
    pub fn copy_row(&mut self, to: usize, src: &MatchRows, from: usize) {
        let (p, q) = (self.ppm, self.stride);
        self.slots[to * p..(to + 1) * p].copy_from_slice(&src.slots[from * p..(from + 1) * p]);
        self.ps[to * q..(to + 1) * q].copy_from_slice(&src.ps[from * q..(from + 1) * q]);
        // a row without history pairs has all-zero costs
        if src.info[from].hist_pairs > 0 || self.info[to].hist_pairs > 0 {
            self.hist[to * q..(to + 1) * q].copy_from_slice(&src.hist[from * q..(from + 1) * q]);
        }
        self.info[to] = src.info[from];
    }

    /// Row r's slots, pings and history costs as fixed-size arrays.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn row_mut<const P: usize, const QS: usize>(
        &mut self,
        r: usize,
    ) -> (&mut [Slot; P], &mut [u32; QS], &mut [(f32, f32); QS]) {
        debug_assert!(self.ppm == P && self.stride == QS);
        (
            (&mut self.slots[r * P..(r + 1) * P])
                .try_into()
                .expect("P slots"),
            (&mut self.ps[r * QS..(r + 1) * QS])
                .try_into()
                .expect("QS pairs"),
            (&mut self.hist[r * QS..(r + 1) * QS])
                .try_into()
                .expect("QS pairs"),
        )
    }

    /// Row r, read-only (see `row_mut`).
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn row<const P: usize, const QS: usize>(
        &self,
        r: usize,
    ) -> (&[Slot; P], &[u32; QS], &[(f32, f32); QS]) {
        debug_assert!(self.ppm == P && self.stride == QS);
        (
            self.slots[r * P..(r + 1) * P].try_into().expect("P slots"),
            self.ps[r * QS..(r + 1) * QS].try_into().expect("QS pairs"),
            self.hist[r * QS..(r + 1) * QS]
                .try_into()
                .expect("QS pairs"),
        )
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
        by_size!(
            self.model.team_size,
            self.build_sized(&sorted[..k], table, rows, r)
        );
        true
    }

    /// `build_row` for a valid match in slot order.
    #[inline(always)]
    fn build_sized<
        const TS: usize,
        const NF: usize,
        const P: usize,
        const Q: usize,
        const QS: usize,
    >(
        &self,
        units: &[u32],
        table: u32,
        rows: &mut MatchRows,
        r: usize,
    ) {
        let (slots, ps, hist) = rows.row_mut::<P, QS>(r);
        let mut n = 0;
        let mut overdue = 0;
        let mut wait = 0.0;
        for &u in units {
            for &pl in self.ix.members_of(u) {
                let hot = self.ix.hot[pl as usize];
                slots[n % P] = Slot {
                    player: pl,
                    skill: hot.skill,
                    ..Slot::default()
                };
                overdue += hot.overdue;
                wait += hot.wait_capped;
                n += 1;
            }
        }
        debug_assert_eq!(n, P);
        ps.fill(0);
        hist.fill((0.0, 0.0));
        if self.ping_pairs() {
            let pair = &Pairs::<P, QS>::INDEX;
            for i in 0..P {
                for j in i + 1..P {
                    let bits = self.pair_ping_bits(slots[i].player, slots[j].player);
                    let (score, o) = (bits & !PING_OVER, bits >> 31);
                    ps[pair[i][j] as usize % QS] = score;
                    slots[i].rsum += score;
                    slots[j].rsum += score;
                    slots[i].over |= o << j;
                    slots[j].over |= o << i;
                }
            }
        }
        let mut info = RowInfo {
            table,
            overdue,
            wait,
            gain_bound: f64::INFINITY,
            ..RowInfo::default()
        };
        if self.weights[OPPONENT_VARIATION] > 0.0 {
            for i in 0..P {
                self.scan_history::<P, QS>(slots, hist, &mut info, i);
            }
        }
        rows.info[r] = info;
    }

    /// Copy row `r` of `src` into row 0 of `dst`, with the unit at position `pos` of
    /// `units` (the row's slot order) replaced by `inn`, a unit of the same size. The
    /// new row's slot order of units is `units` with `inn` at `pos`.
    ///
    /// The incoming players' history is not looked up yet (it can only lower the
    /// score, so the gain bound does not need it): call `finish_sized` with the
    /// returned slot range before `evaluate_row_sized`.
    #[inline(always)]
    pub(crate) fn replace_in_row_sized<
        const TS: usize,
        const NF: usize,
        const P: usize,
        const Q: usize,
        const QS: usize,
    >(
        &self,
        src: &MatchRows,
        r: usize,
        units: &[u32],
        pos: usize,
        inn: u32,
        dst: &mut MatchRows,
    ) -> Range<usize> {
        let offset = self.slot_of(units, pos);
        let changed = offset..offset + self.ix.unit_size[inn as usize] as usize;
        self.replace_sized::<TS, NF, P, Q, QS>(src, r, changed.clone(), inn, dst);
        changed
    }

    /// The first slot of the unit at position `pos` of `units` (a row's slot order).
    #[inline]
    pub fn slot_of(&self, units: &[u32], pos: usize) -> usize {
        units[..pos]
            .iter()
            .map(|&u| self.ix.unit_size[u as usize] as usize)
            .sum()
    }

    /// Prefetch the pings a replacement will read when solo `player` comes into row r.
    #[inline(always)]
    pub(crate) fn prefetch_sized<
        const TS: usize,
        const NF: usize,
        const P: usize,
        const Q: usize,
        const QS: usize,
    >(
        &self,
        rows: &MatchRows,
        r: usize,
        player: u32,
    ) {
        if self.ping_pairs() {
            let (slots, _, _) = rows.row::<P, QS>(r);
            self.prefetch_pings(player, slots.map(|s| s.player));
        }
    }

    /// Look up the history of the incoming slots of a replaced row (see
    /// `replace_in_row_sized`).
    #[inline(always)]
    pub(crate) fn finish_sized<
        const TS: usize,
        const NF: usize,
        const P: usize,
        const Q: usize,
        const QS: usize,
    >(
        &self,
        rows: &mut MatchRows,
        changed: Range<usize>,
    ) {
        if self.weights[OPPONENT_VARIATION] <= 0.0 || changed.is_empty() {
            return;
        }
        let mut info = rows.info[0];
        let (slots, _, hist) = rows.row_mut::<P, QS>(0);
        for i in changed {
            self.scan_history::<P, QS>(slots, hist, &mut info, i);
        }
        rows.info[0] = info;
    }

    /// `replace_in_row_sized` given the replaced slots (`changed`). Any unit size
    /// works; the search sends solos through `probe_sized` + `commit_sized` instead,
    /// which write the same row.
    #[inline(always)]
    fn replace_sized<
        const TS: usize,
        const NF: usize,
        const P: usize,
        const Q: usize,
        const QS: usize,
    >(
        &self,
        src: &MatchRows,
        r: usize,
        changed: Range<usize>,
        inn: u32,
        dst: &mut MatchRows,
    ) {
        assert!(changed.end <= P);
        let mut info = src.info[r];
        let copy_hist = info.hist_pairs > 0 || dst.info[0].hist_pairs > 0;
        let (s_slots, s_ps, s_hist) = src.row::<P, QS>(r);
        let (slots, ps, hist) = dst.row_mut::<P, QS>(0);
        *slots = *s_slots;
        *ps = *s_ps;
        // a row without history pairs has all-zero costs
        if copy_hist {
            *hist = *s_hist;
        }
        let members = self.ix.members_of(inn);
        let w = &self.weights;
        let mut skill_moved = 0.0;
        for (k, &pl) in members.iter().enumerate() {
            let slot = &mut slots[(changed.start + k) % P];
            let (out, hot) = (self.ix.hot[slot.player as usize], self.ix.hot[pl as usize]);
            info.overdue = info.overdue - out.overdue + hot.overdue;
            skill_moved += (hot.skill - slot.skill).abs();
            slot.player = pl;
            info.wait += hot.wait_capped - out.wait_capped;
            slot.skill = hot.skill;
        }
        // The equal-teams curve is 1-Lipschitz in x (all four kinds), and moving a
        // slot's skill by delta moves every split's |team 0 - team 1| by at most delta.
        let mut gain = w[EQUAL_TEAMS] * skill_moved * self.equal_teams_inverse();
        let pair = &Pairs::<P, QS>::INDEX;
        if self.ping_pairs() {
            // A changed slot's cross pings (to TS of the slots outside its unit) gain
            // at most the sum of its rises to all of them. Summing only the TS largest
            // is tighter, but the sorting cost more than the bound saved (measured on
            // solo moves: 10% fewer moves rejected by the bound, 2.8% fewer
            // instructions and 4% more moves a second with the plain sum).
            let mut ping_up = 0u32;
            for i in changed.clone() {
                let i = i % P;
                let v = slots[i].player;
                for j in 0..P {
                    let inside = changed.contains(&j);
                    // pairs inside the incoming unit once, from its lower slot
                    if j == i || (inside && j < i) {
                        continue;
                    }
                    let bits = self.pair_ping_bits(v, slots[j].player);
                    let (score, o) = (bits & !PING_OVER, bits >> 31);
                    let old = std::mem::replace(&mut ps[pair[i][j] as usize % QS], score);
                    slots[i].rsum = slots[i].rsum - old + score;
                    slots[j].rsum = slots[j].rsum - old + score;
                    slots[i].over = (slots[i].over & !(1 << j)) | (o << j);
                    slots[j].over = (slots[j].over & !(1 << i)) | (o << i);
                    if !inside {
                        ping_up += score.saturating_sub(old);
                    }
                }
            }
            gain += self.ping_gain::<TS>(ping_up);
        }
        if w[OPPONENT_VARIATION] > 0.0 && info.hist_pairs > 0 {
            // clear the outgoing players' pairs (`finish_sized` sets the incoming
            // ones'): removed costs are the most the history term can gain
            let mut cleared = 0.0f64;
            for i in changed.clone() {
                let i = i % P;
                for j in 0..P {
                    if j != i && !(changed.contains(&j) && j < i) {
                        let k = pair[i][j] as usize % QS;
                        cleared += clear_pair(slots, hist, &mut info, k, i, j);
                    }
                }
            }
            gain += w[OPPONENT_VARIATION] * cleared * const { 1.0 / Q as f64 };
        }
        info.gain_bound = gain;
        dst.info[0] = info;
    }

    /// Score what `replace_in_row_sized` + `row_fixed` would make of row r with solo `player`
    /// in slot `slot`, without writing a row: the bound needs only the new pings, the
    /// fixed part and the gain bound, and most moves end at the bound (`commit_sized`
    /// writes the row for the ones that go on to the split loop).
    #[inline(always)]
    pub(crate) fn probe_sized<
        const TS: usize,
        const NF: usize,
        const P: usize,
        const Q: usize,
        const QS: usize,
    >(
        &self,
        src: &MatchRows,
        r: usize,
        slot: usize,
        player: u32,
        probe: &mut SoloProbe,
    ) {
        let i = slot % P;
        let w = &self.weights;
        let mut info = src.info[r];
        let (slots, ps, hist) = src.row::<P, QS>(r);
        let pair = &Pairs::<P, QS>::INDEX[i];
        let (out, hot) = (
            self.ix.hot[slots[i].player as usize],
            self.ix.hot[player as usize],
        );
        info.overdue = info.overdue - out.overdue + hot.overdue;
        // the bound's terms as in `replace_sized`, the fixed part as in `row_fixed`
        let mut gain = w[EQUAL_TEAMS] * (hot.skill - out.skill).abs() * self.equal_teams_inverse();
        let bits = &mut probe.bits;
        let mut capable = 0;
        if self.ping_pairs() {
            let mut up = 0u32;
            let mut over = 0u32;
            for j in 0..P {
                // slot i's own pair is the spare one: ping 0 to itself
                let b = if j == i {
                    0
                } else {
                    self.pair_ping_bits(player, slots[j].player)
                };
                bits[j] = b;
                let (score, o) = (b & !PING_OVER, b >> 31);
                let old = ps[pair[j] as usize % QS];
                let over_j = (slots[j].over & !(1 << i)) | (o << i);
                capable += (j != i && over_j == 0) as usize;
                over |= o << j;
                up += score.saturating_sub(old);
            }
            capable += (over == 0) as usize;
            gain += self.ping_gain::<TS>(up);
        } else {
            capable = P;
        }
        if w[OPPONENT_VARIATION] > 0.0 && info.hist_pairs > 0 {
            let mut cleared = 0.0f64;
            for j in 0..P {
                let (tm, op) = hist[pair[j] as usize % QS];
                if tm != 0.0 || op != 0.0 {
                    cleared += tm.max(op) as f64;
                }
            }
            gain += w[OPPONENT_VARIATION] * cleared * const { 1.0 / Q as f64 };
        }
        info.gain_bound = gain;
        let mut skill = [0.0f64; P];
        for k in 0..P {
            skill[k] = if k == i { hot.skill } else { slots[k].skill };
        }
        info.hosts = capable as u32;
        info.fixed = self.fixed_of(&skill, capable, || {
            std::array::from_fn(|k| if k == i { player } else { slots[k].player })
        });
        info.wait += hot.wait_capped - out.wait_capped;
        probe.slot = i as u32;
        probe.player = player;
        probe.info = info;
    }

    /// Write the probed replacement of row r of `src` into row 0 of `dst`: the row
    /// `replace_in_row_sized` + `row_fixed` would have made. Returns the slots whose history
    /// is still to be looked up (`finish_sized`).
    #[inline(always)]
    pub(crate) fn commit_sized<
        const TS: usize,
        const NF: usize,
        const P: usize,
        const Q: usize,
        const QS: usize,
    >(
        &self,
        src: &MatchRows,
        r: usize,
        probe: &SoloProbe,
        dst: &mut MatchRows,
    ) -> Range<usize> {
        let mut info = probe.info;
        let copy_hist = info.hist_pairs > 0 || dst.info[0].hist_pairs > 0;
        let (s_slots, s_ps, s_hist) = src.row::<P, QS>(r);
        let (slots, ps, hist) = dst.row_mut::<P, QS>(0);
        *slots = *s_slots;
        *ps = *s_ps;
        if copy_hist {
            *hist = *s_hist;
        }
        let i = probe.slot as usize % P;
        let pair = &Pairs::<P, QS>::INDEX[i];
        let hot = self.ix.hot[probe.player as usize];
        slots[i].player = probe.player;
        slots[i].skill = hot.skill;
        if self.ping_pairs() {
            let (mut rsum, mut over) = (0u32, 0u32);
            for j in 0..P {
                let b = probe.bits[j % MAXP];
                let (score, o) = (b & !PING_OVER, b >> 31);
                let old = std::mem::replace(&mut ps[pair[j] as usize % QS], score);
                slots[j].rsum = slots[j].rsum - old + score;
                slots[j].over = (slots[j].over & !(1 << i)) | (o << i);
                rsum += score;
                over |= o << j;
            }
            slots[i].rsum = rsum;
            slots[i].over = over;
        }
        if self.weights[OPPONENT_VARIATION] > 0.0 && info.hist_pairs > 0 {
            for j in 0..P {
                clear_pair(slots, hist, &mut info, pair[j] as usize % QS, i, j);
            }
        }
        dst.info[0] = info;
        i..i + 1
    }

    /// The most the weighted enemy-ping term can gain when the cross pairs' quantized
    /// scores rise by `ping_up` in total (two teams: TS x TS cross pairs).
    #[inline(always)]
    fn ping_gain<const TS: usize>(&self, ping_up: u32) -> f64 {
        debug_assert_eq!(TS, self.model.team_size);
        self.ping_unit_weight * ping_up as f64
    }

    /// Whether rows keep pair pings: peer-to-peer, whatever the weights (who can host
    /// is a hard rule, read from the pairs' host-limit bits).
    #[inline]
    fn ping_pairs(&self) -> bool {
        self.p2p
    }

    /// Set the history costs of slot i's pairs from its player's history list, keeping
    /// the row's and the slots' totals (exact: the costs are multiples of 2^-20).
    #[inline(always)]
    fn scan_history<const P: usize, const QS: usize>(
        &self,
        slots: &mut [Slot; P],
        hist: &mut [(f32, f32); QS],
        info: &mut RowInfo,
        i: usize,
    ) {
        let i = i % P;
        let player = slots[i].player;
        let mask = self.hist_mask[player as usize];
        if mask == 0 {
            return;
        }
        let list = &self.ix.history[player as usize];
        for j in 0..P {
            let other = slots[j].player;
            if j == i || mask & (1 << (other % 64)) == 0 {
                continue;
            }
            if let Ok(x) = list.binary_search_by_key(&other, |e| e.0) {
                let (_, tm, op) = list[x];
                let k = Pairs::<P, QS>::INDEX[i][j] as usize % QS;
                let (old_tm, old_op) = std::mem::replace(&mut hist[k], (tm, op));
                let mut d = 0.0;
                if old_tm != 0.0 || old_op != 0.0 {
                    info.hist_pairs -= 1;
                    info.tm_total -= old_tm as f64;
                    d -= old_op as f64 - old_tm as f64;
                }
                if tm != 0.0 || op != 0.0 {
                    info.hist_pairs += 1;
                    info.tm_total += tm as f64;
                    d += op as f64 - tm as f64;
                }
                slots[i].hsum += d;
                slots[j].hsum += d;
            }
        }
    }

    /// Compute and store row r's split-independent part (equal players, hosts or the
    /// dedicated region's ping, waits).
    pub fn row_fixed(&self, rows: &mut MatchRows, r: usize) {
        by_size!(self.model.team_size, self.row_fixed_sized(rows, r));
    }

    #[inline(always)]
    pub(crate) fn row_fixed_sized<
        const TS: usize,
        const NF: usize,
        const P: usize,
        const Q: usize,
        const QS: usize,
    >(
        &self,
        rows: &mut MatchRows,
        r: usize,
    ) {
        let (slots, _, _) = rows.row::<P, QS>(r);
        let mut skill = [0.0f64; P];
        for (k, s) in slots.iter().enumerate() {
            skill[k] = s.skill;
        }
        let capable = slots.iter().filter(|s| s.over == 0).count();
        let fixed = self.fixed_of(&skill, capable, || slots.map(|s| s.player));
        rows.info[r].fixed = fixed;
        rows.info[r].hosts = capable as u32;
    }

    /// The weighted split-independent factors of a match with these skills (slot
    /// order), `capable` possible hosts, and (dedicated servers only) these players.
    #[inline(always)]
    fn fixed_of<const P: usize>(
        &self,
        skill: &[f64; P],
        capable: usize,
        players: impl FnOnce() -> [u32; P],
    ) -> f64 {
        let w = &self.weights;
        let model = self.model;
        let mut fixed = 0.0;
        let dedicated_ping = !self.p2p && w[ENEMY_PING] > 0.0;
        let players = (dedicated_ping || w[MAPS] > 0.0).then(players);
        if w[EQUAL_PLAYERS] > 0.0 {
            let score = match model.equal_players.measure {
                SpreadMeasure::Pairwise => {
                    // one accumulator per slot: independent adds instead of one
                    // chain of 15 (the chain's latency was most of this function)
                    let mut acc = [0.0f64; P];
                    for i in 0..P {
                        for j in i + 1..P {
                            acc[j] += (skill[i] - skill[j]).abs();
                        }
                    }
                    let sum: f64 = acc.iter().sum();
                    // the curve at the mean pairwise difference / scale
                    model
                        .equal_players
                        .curve
                        .score_scaled(sum * self.ep_pairwise_inv)
                }
                SpreadMeasure::Uniformity => model
                    .equal_players
                    .curve
                    .score(equal_players::spread(skill, &model.equal_players)),
            };
            fixed += w[EQUAL_PLAYERS] * score;
        }
        if self.p2p {
            if w[TWO_HOSTS] > 0.0 {
                fixed += w[TWO_HOSTS] * hosts::score(capable, &model.hosts);
            }
        } else if let Some(players) = players.as_ref().filter(|_| dedicated_ping) {
            let (_, score) = enemy_ping::choose_region(self.ix, players, &model.ping);
            fixed += w[ENEMY_PING] * score;
        }
        if let Some(players) = players.as_ref().filter(|_| w[MAPS] > 0.0) {
            fixed += w[MAPS] * self.map_score(players);
        }
        fixed
    }

    /// An upper bound on the quality of row r (a replaced row whose `row_fixed` is
    /// computed), from the old row's best split and the replacement's gain bound.
    #[inline]
    pub fn row_quality_bound(&self, rows: &MatchRows, r: usize, old_split_best: f64) -> f64 {
        self.quality_bound(&rows.info[r], old_split_best)
    }

    /// An upper bound on the quality of a solo replacement (`probe_sized`).
    #[inline]
    pub fn probe_quality_bound(&self, probe: &SoloProbe, old_split_best: f64) -> f64 {
        self.quality_bound(&probe.info, old_split_best)
    }

    #[inline(always)]
    fn quality_bound(&self, info: &RowInfo, old_split_best: f64) -> f64 {
        let score = ((old_split_best + info.gain_bound + info.fixed) * self.inv_wsum).min(1.0);
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
        by_size!(self.model.team_size, self.evaluate_row_sized(rows, r))
    }

    /// `evaluate_row` for rows of a fixed size.
    #[inline(always)]
    pub(crate) fn evaluate_row_sized<
        const TS: usize,
        const NF: usize,
        const P: usize,
        const Q: usize,
        const QS: usize,
    >(
        &self,
        rows: &mut MatchRows,
        r: usize,
    ) -> MatchEval {
        let (best, split) = self.best_split::<TS, NF, P, Q, QS>(rows, r);
        let info = &mut rows.info[r];
        info.split_best = best;
        let info = *info;
        let score = ((best + info.fixed) * self.inv_wsum).clamp(0.0, 1.0);
        let verdict = if self.rules.active() {
            let (slots, _, _) = rows.row::<P, QS>(r);
            let players: [u32; P] = std::array::from_fn(|k| slots[k].player);
            let table = self.tables.get(info.table);
            let st = &table.slot_team[split as usize * P..(split as usize + 1) * P];
            let verdict = self.judge(info.hosts, &players, st, score);
            if self.rules.split_dependent(verdict.0) {
                // rare: the best split breaks a rule another split may keep; the
                // from-scratch evaluation searches the splits that keep it
                return self.evaluate(&self.units_of(&players));
            }
            verdict
        } else {
            self.judge_hosts(info.hosts)
        };
        MatchEval::scored(
            verdict,
            score,
            split,
            self.shaped(score) + info.wait * self.beta,
            info.overdue,
        )
    }

    /// The split loop: (best weighted split-dependent value, its split).
    #[inline(always)]
    fn best_split<
        const TS: usize,
        const NF: usize,
        const P: usize,
        const Q: usize,
        const QS: usize,
    >(
        &self,
        rows: &MatchRows,
        r: usize,
    ) -> (f64, u32) {
        let info = rows.info[r];
        let table = self.tables.get(info.table);
        let w = &self.weights;
        let model = self.model;
        let (slots, ps, h) = rows.row::<P, QS>(r);
        // local copies indexed with masks: no bounds checks in the loop
        let mut skill = [0.0f64; MAXP];
        let mut rsum = [0u32; MAXP];
        let mut hsum = [0.0f64; MAXP];
        for (k, s) in slots.iter().enumerate() {
            skill[k] = s.skill;
            rsum[k] = s.rsum;
            hsum[k] = s.hsum;
        }
        let total_skill: f64 = slots.iter().map(|s| s.skill).sum();
        let (w_et, w_ov) = (w[EQUAL_TEAMS], w[OPPONENT_VARIATION]);
        let et_inv = self.equal_teams_inverse();
        let w_ping = if self.p2p && w[ENEMY_PING] > 0.0 {
            self.ping_unit_weight
        } else {
            0.0
        };
        let hist = w_ov > 0.0 && info.hist_pairs > 0;
        let mut base = if w_ov > 0.0 && !hist {
            w_ov * opponent_variation::score(0.0, P)
        } else {
            0.0
        };
        let premade = &self.premade_weighted;
        let spread_varies = !table.spread_constant;
        if !spread_varies && table.splits > 0 {
            base += premade[table.party_spread[0] as usize % PREMADE_SLOTS];
        }
        let splits = table.splits;
        let (first, _) = table.first_team.as_chunks::<TS>();
        // (as_chunks of size 0 panics: 1v1 has no pairs inside a team)
        let pairs: &[[u8; NF]] = if NF == 0 {
            &[]
        } else {
            &table.first_pairs.as_chunks::<NF>().0[..splits]
        };
        let first = &first[..splits];
        let spreads = &table.party_spread[..splits];
        let curve = &model.equal_teams.curve;
        let linear = curve.kind == CurveKind::Linear;
        let mut best = f64::NEG_INFINITY;
        let mut best_split = 0u32;
        for s in 0..splits {
            let mut v = base;
            if spread_varies {
                v += premade[spreads[s] as usize % PREMADE_SLOTS];
            }
            // team 0's skill, ping row sums and history row sums in one pass
            let (mut sum0, mut rs, mut hs) = (0.0, 0u32, 0.0);
            for &i in &first[s] {
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
                        within += ps[k as usize % QS];
                    }
                }
                v += w_ping * (rs - 2 * within) as f64;
            }
            if hist {
                let mut within = 0.0;
                if NF > 0 {
                    for &k in &pairs[s] {
                        let (tm, op) = h[k as usize % QS];
                        within += op as f64 - tm as f64;
                    }
                }
                let cost = info.tm_total + (hs - 2.0 * within);
                v += w_ov * opponent_variation::score(cost, P);
            }
            // a select, not a branch: which split wins is unpredictable
            let better = v > best;
            best_split = std::hint::select_unpredictable(better, s as u32, best_split);
            best = std::hint::select_unpredictable(better, v, best);
        }
        (best, best_split)
    }
}

/// Clear the history costs of slot pair k = (i, j) of a replaced row, keeping the
/// row's totals in `info` and the slots' sums; the larger of the two costs removed
/// (what the history term can gain back).
#[inline(always)]
fn clear_pair<const P: usize, const QS: usize>(
    slots: &mut [Slot; P],
    hist: &mut [(f32, f32); QS],
    info: &mut RowInfo,
    k: usize,
    i: usize,
    j: usize,
) -> f64 {
    let (tm, op) = std::mem::take(&mut hist[k]);
    if tm == 0.0 && op == 0.0 {
        return 0.0;
    }
    info.hist_pairs -= 1;
    info.tm_total -= tm as f64;
    let d = op as f64 - tm as f64;
    slots[i].hsum -= d;
    slots[j].hsum -= d;
    tm.max(op) as f64
}

/// Premade values by party spread (0..=team_size), padded to a power of two
/// (`Scorer::premade_weighted`).
pub const PREMADE_SLOTS: usize = 16;

/// Slot pair indices of a row of P players, both orders: `INDEX[i][j] = pair_index`.
/// The diagonal points at the last padding pair (QS - 1), which stays 0, so that a
/// loop over all j can treat (i, i) as a pair that scores 0 instead of branching.
struct Pairs<const P: usize, const QS: usize>;

impl<const P: usize, const QS: usize> Pairs<P, QS> {
    const INDEX: [[u8; P]; P] = {
        let mut t = [[(QS - 1) as u8; P]; P];
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
