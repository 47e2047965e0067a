//! Scoring one match: every factor for every split of its shape, keeping the best split
//! (the Awesomenauts matchmaker post: "we simply try every possible combination and select the best one").
//!
//! Match score = sum of weight x factor / sum of weights over the enabled factors that
//! apply to the queue (see `factors`). Ties between splits keep the first split of the
//! table, and units are put in a canonical order (largest first, then by index), so a
//! match's evaluation depends only on its set of units.
//!
//! The search objective of a round, compared lexicographically (`RoundValue`):
//! 1. the number of overdue players placed (past `max_wait`: they must be placed whenever
//!    any valid match can include them),
//! 2. the number of matches (a round places as many players as possible),
//! 3. quality = sum over matches of score^`round_score_power` plus
//!    `wait_priority_per_minute` x minutes waited (capped at `max_wait`) for every placed
//!    player (Alman and McKay's g = f + beta * wait, summed over the players: the choice in a
//!    round is who is left over).
//!
//! The reported round score is the power mean (mean of score^p)^(1/p) of the match scores.
//!
//! Hosts are a hard rule in peer-to-peer queues (the Awesomenauts matchmaker post, "each match should have a
//! player who can connect with everyone in the match"): a match nobody in it can host is
//! *hostless* and worth nothing to the objective (no match, no overdue player placed, no
//! quality; `MatchEval::hosted`), exactly as if its players were on the bench. The search
//! may pass through hostless matches (a walk needs the room) but never gains by keeping
//! one, and the solver dissolves any that are left before it returns
//! (`solver::search`), so no hostless match leaves the core.

// Slot-indexed arrays are the point of this hot loop.
#![allow(clippy::needless_range_loop)]

use std::cmp::Ordering;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering as AtomicOrdering};

use skillratings::weng_lin::WengLinRating;

use super::factors::{self, *};
use super::index::IndexedPool;
use super::model::{Network, QueueModel, RoleMode};
use super::split::{SplitTable, SplitTables, pair_index};

pub mod incremental;
pub mod rules;

pub use rules::Broken;

pub const MAXP: usize = super::model::MAX_PLAYERS_PER_MATCH;

/// Perceived ping scores are fixed-point integers in units of 1 / `PING_UNIT`: sums
/// over a match's pairs are then exact in any order (the incremental and the
/// from-scratch scoring agree to the bit) and integer adds are cheap. The rounding,
/// below 1e-6, is far under any difference a player could notice.
pub const PING_UNIT: f64 = (1u32 << 20) as f64;

/// Flag bit of a packed pair ping: the ping is above `hosts.max_ping_ms`.
const PING_OVER: u32 = 1 << 31;

#[inline]
fn quantize_ping(score: f64) -> u32 {
    (score.clamp(0.0, 1.0) * PING_UNIT).round() as u32
}

/// The scoring of one queue over one pool.
pub struct Scorer<'a> {
    pub ix: &'a IndexedPool,
    pub model: &'a QueueModel,
    pub tables: SplitTables,
    /// Players per match of the format.
    ppm: usize,
    /// The format's member-count difference factor.
    member_count_score: f64,
    /// Effective weights: 0 for disabled or inapplicable factors.
    pub weights: [f64; factors::COUNT],
    wsum: f64,
    /// Reciprocals the hot loops multiply by instead of dividing (a division is a
    /// long-latency instruction on the path of every move): 1 / wsum, the equal-teams
    /// inverse scale, the enemy-ping weight per quantized cross-pair unit, and 1 /
    /// (pairs x scale) of the pairwise equal-players spread.
    inv_wsum: f64,
    et_inv: f64,
    ping_unit_weight: f64,
    ep_pairwise_inv: f64,
    p2p: bool,
    nroles: usize,
    strict_roles: bool,
    wait_cap: f64,
    beta: f64,
    power: f64,
    /// Premade factor by the split's party spread (0..=team_size).
    premade_by_spread: Vec<f64>,
    /// The same times the premade weight, padded for the rows' split loop (masked
    /// indexing).
    premade_weighted: [f64; incremental::PREMADE_SLOTS],
    /// Two teams, p = 1, no roles and only the common factors weighted: `evaluate`
    /// takes the specialised split loop (`split_value_fast`).
    fast: bool,
    /// Lazily filled pair ping cache, 4 bytes a pair so that it stays in cache: the
    /// quantized perceived score with the top bit set when the ping is above
    /// `hosts.max_ping_ms` (the only use of the raw ms outside the report);
    /// u32::MAX = unknown. Shared by the reweighted copies of a scorer (the pings do not
    /// depend on the weights).
    ping_cache: Option<Arc<[AtomicU32]>>,
    /// Per player: bit (other player % 64) set for every player in their history list
    /// (a cheap filter before searching the list).
    hist_mask: Vec<u64>,
    /// The pool's meeting rules and the queue's floors (`rules`).
    rules: rules::Rules,
}

/// The cached result of scoring one match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatchEval {
    /// Some split is valid (team sizes, parties, strict roles).
    pub feasible: bool,
    /// The match may form: someone in it can host (always on dedicated servers; or a
    /// relay step is in force) and it breaks no hard rule (filters, avoids, the floor
    /// in force; `rules`). A match that may not form counts for nothing: `quality`
    /// and `overdue` are 0 and `RoundValue` does not count it as a match; `score`
    /// stays the factors' score (for reports), `broken` says which rule it broke.
    pub allowed: bool,
    /// The first hard rule the match breaks (`Broken::None` when allowed).
    pub broken: Broken,
    /// Peer-to-peer, nobody can host, and a relay step is in force: the match forms
    /// through the game's relay (its quality is lowered by `rules::RELAY_PENALTY`, so
    /// a hosted match of the same players is always preferred).
    pub relay: bool,
    pub score: f64,
    /// Index of the best split in the shape's table.
    pub split: u32,
    /// Contribution to the objective's quality term.
    pub quality: f64,
    pub overdue: u32,
}

impl MatchEval {
    /// A match the round may keep: a valid split and no hard rule broken.
    #[inline]
    pub fn valid(&self) -> bool {
        self.feasible && self.allowed
    }

    /// The evaluation of a feasible match judged by `Scorer::judge`: a match that
    /// breaks a hard rule is worth nothing (see the module docs).
    #[inline(always)]
    pub(crate) fn scored(
        (broken, relay): (Broken, bool),
        score: f64,
        split: u32,
        quality: f64,
        overdue: u32,
    ) -> MatchEval {
        let allowed = broken == Broken::None;
        let penalty = if relay { rules::RELAY_PENALTY } else { 0.0 };
        MatchEval {
            feasible: true,
            allowed,
            broken,
            relay,
            score,
            split,
            quality: if allowed { quality - penalty } else { 0.0 },
            overdue: if allowed { overdue } else { 0 },
        }
    }

    pub const INFEASIBLE: MatchEval = MatchEval {
        feasible: false,
        allowed: false,
        broken: Broken::None,
        relay: false,
        score: 0.0,
        split: 0,
        quality: 0.0,
        overdue: 0,
    };
}

/// The lexicographic objective of a round (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RoundValue {
    pub overdue: i64,
    pub matches: i64,
    pub quality: f64,
}

impl RoundValue {
    pub fn add(&mut self, e: &MatchEval, sign: f64) {
        let s = sign as i64;
        self.overdue += s * e.overdue as i64;
        self.matches += s * e.allowed as i64;
        self.quality += sign * e.quality;
    }

    pub fn compare(&self, other: &RoundValue) -> Ordering {
        self.overdue
            .cmp(&other.overdue)
            .then(self.matches.cmp(&other.matches))
            .then(self.quality.total_cmp(&other.quality))
    }

    pub fn better_than(&self, other: &RoundValue) -> bool {
        self.compare(other) == Ordering::Greater
    }

    /// Difference self - before.
    pub fn delta(&self, before: &RoundValue) -> RoundValue {
        RoundValue {
            overdue: self.overdue - before.overdue,
            matches: self.matches - before.matches,
            quality: self.quality - before.quality,
        }
    }
}

/// A match in full, for the output.
#[derive(Debug, Clone)]
pub struct MatchDetail {
    /// Player indices per team, teams in side order.
    pub teams: Vec<Vec<u32>>,
    pub score: f64,
    pub factors: [f64; factors::COUNT],
    /// (player, role index) for every role filled.
    pub roles: Vec<(u32, usize)>,
    pub region: Option<usize>,
    /// Possible hosts, best first (peer-to-peer): lowest worst ping to the others, ties
    /// by player id. The first is the match's host, the second its backup host.
    pub hosts: Vec<u32>,
    /// Its map (queues with maps).
    pub map: Option<crate::maps::MapPick>,
}

/// Per-match data shared by all splits.
struct Ctx {
    n: usize,
    slots: [u32; MAXP],
    skill: [f64; MAXP],
    total_skill: f64,
    /// skill^p per slot (equal teams), or the skill itself for p = 1 or infinite.
    skill_pow: [f64; MAXP],
    /// Perceived ping score of each slot pair (`pair_index`), peer-to-peer.
    ps: [u32; MAXPAIRS],
    /// Worst ping of each slot to the others (hosts).
    worst_ms: [f32; MAXP],
    /// (slot i, slot j, cost if teammates, cost if opponents)
    hist: Vec<(u8, u8, f32, f32)>,
    /// Split-independent factor values.
    fixed: [f64; factors::COUNT],
    fixed_weighted: f64,
    region: Option<usize>,
    hosts: Vec<u32>,
    map: Option<crate::maps::MapPick>,
    /// Number of players who can host (peer-to-peer).
    capable: u32,
    quality_wait: f64,
    overdue: u32,
}

/// The divisor of a match score: the sum of the effective weights, or 1 when only
/// inapplicable factors are weighted (every match is then equally good, score 0).
fn weight_sum(weights: &[f64; factors::COUNT]) -> f64 {
    let sum: f64 = weights.iter().sum();
    if sum == 0.0 { 1.0 } else { sum }
}

const MAXPAIRS: usize = MAXP * (MAXP - 1) / 2;

/// Pools up to this size cache every pair's ping (4 bytes an ordered pair, filled
/// lazily: 16 MB at most); larger pools compute pings on demand (no n x n memory).
pub const PING_CACHE_MAX_PLAYERS: usize = 2048;

impl<'a> Scorer<'a> {
    /// The scorer of the queue's full format, as the search uses it: the
    /// member-count difference (1 for every full match) is left out of the average.
    pub fn new(ix: &'a IndexedPool, model: &'a QueueModel) -> Self {
        Self::build(ix, model, &model.full_format(), false)
    }

    /// The scorer of one format of a flexible queue (`QueueModel::formats`), with the
    /// member-count difference in the average (when the queue is flexible), so that the
    /// scores of its formats compare. Its tables may have teams of unequal size: use it
    /// with `evaluate`, `describe` and `evaluate_fixed`, not with the incremental rows.
    pub fn for_format(ix: &'a IndexedPool, model: &'a QueueModel, format: &[usize]) -> Self {
        Self::build(ix, model, format, model.is_flexible())
    }

    fn build(
        ix: &'a IndexedPool,
        model: &'a QueueModel,
        format: &[usize],
        member_count: bool,
    ) -> Self {
        let p2p = model.network == Network::PeerToPeer;
        let nroles = model.roles.len();
        let mut weights = [0.0; factors::COUNT];
        for (i, (_, w)) in model.weights.named().iter().enumerate() {
            weights[i] = *w;
        }
        if !member_count {
            weights[MEMBER_COUNT_DIFFERENCE] = 0.0;
        }
        let tables = SplitTables::for_format(format);
        let equal = tables.caps.iter().all(|&c| c == tables.team_size);
        let team_size = tables.team_size;
        if !p2p {
            weights[TWO_HOSTS] = 0.0;
        }
        if nroles == 0 {
            weights[ROLES] = 0.0;
        }
        if model.filters.language.is_none() {
            weights[LANGUAGE] = 0.0;
        }
        if !ix.maps.active() {
            weights[MAPS] = 0.0;
        }
        let wsum = weight_sum(&weights);
        let fast = tables.teams == 2
            && equal
            && nroles == 0
            && model.equal_teams.p.0 == 1.0
            && weights[INDISTINGUISHABLE] == 0.0
            && weights[SIDE_PREFERENCE] == 0.0
            && weights[PREDICTED_FAIRNESS] == 0.0
            && weights[LANGUAGE] == 0.0;
        let premade_by_spread: Vec<f64> = (0..=team_size)
            .map(|d| {
                let mut parties = [1usize, 1 + d];
                parties.sort();
                premades::score(&parties, team_size, &model.premades.table)
            })
            .collect();
        let mut premade_weighted = [0.0; incremental::PREMADE_SLOTS];
        for (d, v) in premade_by_spread.iter().enumerate() {
            premade_weighted[d % incremental::PREMADE_SLOTS] = weights[PREMADES] * v;
        }
        let ts = team_size as f64;
        let et = &model.equal_teams;
        let et_inv = match et.team_skill {
            super::model::TeamSkill::Mean => 1.0 / (et.curve.scale * ts),
            super::model::TeamSkill::Norm => 1.0 / et.curve.scale,
        };
        let ppm: usize = tables.caps.iter().sum();
        let pairs = (ppm * ppm.saturating_sub(1) / 2).max(1) as f64;
        Scorer {
            fast,
            ix,
            model,
            ppm,
            member_count_score: member_count_difference::score(&tables.caps),
            tables,
            weights,
            wsum,
            inv_wsum: 1.0 / wsum,
            et_inv,
            ping_unit_weight: weights[ENEMY_PING] / (ts * ts * PING_UNIT),
            ep_pairwise_inv: 1.0 / (pairs * model.equal_players.curve.scale),
            p2p,
            nroles,
            strict_roles: nroles > 0 && model.role_mode == RoleMode::Strict,
            wait_cap: model.max_wait.as_secs_f64() / 60.0,
            beta: model.wait_priority_per_minute,
            power: model.round_score_power,
            premade_by_spread,
            premade_weighted,
            ping_cache: (p2p && ix.len() <= PING_CACHE_MAX_PLAYERS).then(|| {
                let n = ix.len();
                // a player's "ping to itself" is a known 0 (the incremental rows
                // loop over all slots, their own included)
                (0..n * n)
                    .map(|k| AtomicU32::new(if k % (n + 1) == 0 { 0 } else { u32::MAX }))
                    .collect()
            }),
            hist_mask: ix
                .history
                .iter()
                .map(|list| list.iter().fold(0u64, |m, e| m | 1 << (e.0 % 64)))
                .collect(),
            rules: rules::Rules::new(ix, model),
        }
    }

    pub fn players_per_match(&self) -> usize {
        self.ppm
    }

    /// Players per team of this scorer's format, largest first.
    pub fn format(&self) -> &[usize] {
        &self.tables.caps
    }

    /// Enabled factor names (for the output).
    pub fn enabled(&self) -> impl Iterator<Item = (usize, &'static str)> + '_ {
        factors::NAMES
            .iter()
            .enumerate()
            .filter(|(i, _)| self.weights[*i] > 0.0)
            .map(|(i, n)| (i, *n))
    }

    /// Objective contribution of a match score.
    pub fn shaped(&self, score: f64) -> f64 {
        if self.power == 1.0 {
            score
        } else {
            score.max(0.0).powf(self.power)
        }
    }

    /// Round score (power mean) from the match scores.
    pub fn round_score(&self, scores: impl Iterator<Item = f64>) -> f64 {
        let (mut sum, mut n) = (0.0, 0usize);
        for s in scores {
            sum += self.shaped(s);
            n += 1;
        }
        if n == 0 {
            return 0.0;
        }
        let mean = sum / n as f64;
        if self.power == 1.0 {
            mean
        } else {
            mean.powf(1.0 / self.power)
        }
    }

    /// (ping ms, perceived score) of a pair of players, computed.
    #[inline]
    fn pair_ping(&self, a: u32, b: u32) -> (f32, u32) {
        let p = &self.model.ping;
        let ms = self.ix.ping_ms(a, b, p.relay_overhead_ms, p.unknown_ms);
        (ms as f32, quantize_ping(p.score(ms)))
    }

    /// (perceived score, ping above the host limit) of a pair, cached for small pools.
    #[inline]
    fn pair_ping_packed(&self, a: u32, b: u32) -> (u32, bool) {
        let v = self.pair_ping_bits(a, b);
        (v & !PING_OVER, v & PING_OVER != 0)
    }

    /// The pair's quantized perceived score, with `PING_OVER` set when the ping is
    /// above the host limit.
    #[inline(always)]
    fn pair_ping_bits(&self, a: u32, b: u32) -> u32 {
        if let Some(cache) = &self.ping_cache {
            // a square array: the incoming player's row is one base address
            let v = cache[a as usize * self.ix.len() + b as usize].load(AtomicOrdering::Relaxed);
            if v != u32::MAX {
                return v;
            }
        }
        self.pair_ping_fill(a.min(b), a.max(b))
    }

    /// Ask the CPU to bring the cached pings of `player` with `others` into L1 ahead of
    /// their use (the ping cache of a few hundred players lives in L2; a move reads
    /// up to 2 x (players per match) entries at random places).
    #[inline(always)]
    pub(crate) fn prefetch_pings<const P: usize>(&self, player: u32, others: [u32; P]) {
        #[cfg(target_arch = "x86_64")]
        if let Some(cache) = &self.ping_cache {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            let row = cache.as_ptr().wrapping_add(player as usize * self.ix.len());
            for o in others {
                // SAFETY: a prefetch is only a hint (it never faults, whatever the
                // address), and SSE is part of every x86_64 target.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(o as usize).cast()) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (player, others);
    }

    /// Compute a pair's packed ping (and cache it).
    #[cold]
    #[inline(never)]
    fn pair_ping_fill(&self, lo: u32, hi: u32) -> u32 {
        if lo == hi {
            return 0;
        }
        let (ms, score) = self.pair_ping(lo, hi);
        // same test as `worst_ms <= limit` on the f32 ms (NaN is never over)
        let over = ms as f64 > self.model.hosts.max_ping_ms;
        let v = score | if over { PING_OVER } else { 0 };
        if let Some(cache) = &self.ping_cache {
            let (lo, hi, n) = (lo as usize, hi as usize, self.ix.len());
            cache[lo * n + hi].store(v, AtomicOrdering::Relaxed);
            cache[hi * n + lo].store(v, AtomicOrdering::Relaxed);
        }
        v
    }

    /// Canonical unit order and the shape's table.
    #[inline(always)]
    fn shape(&self, units: &[u32]) -> Option<(&SplitTable, [u32; MAXP], usize)> {
        self.shape_index(units)
            .map(|(t, sorted, k)| (self.tables.get(t), sorted, k))
    }

    /// Canonical unit order (size descending, then index) and the index of the shape's
    /// table.
    #[inline(always)]
    fn shape_index(&self, units: &[u32]) -> Option<(u32, [u32; MAXP], usize)> {
        let mut sorted = [0u32; MAXP];
        let mut sizes = [0u8; MAXP];
        let k = units.len();
        if k > MAXP {
            return None;
        }
        let mut total = 0usize;
        for (i, &u) in units.iter().enumerate() {
            let size = self.ix.unit_size[u as usize];
            total += size as usize;
            // insertion sort: size desc, then index asc
            let mut j = i;
            while j > 0 && {
                let (pu, ps) = (sorted[j - 1], sizes[j - 1]);
                ps < size || (ps == size && pu > u)
            } {
                sorted[j] = sorted[j - 1];
                sizes[j] = sizes[j - 1];
                j -= 1;
            }
            sorted[j] = u;
            sizes[j] = size;
        }
        if total != self.players_per_match() {
            return None;
        }
        self.tables
            .lookup_index(&sizes[..k])
            .map(|t| (t, sorted, k))
    }

    // Inlined: returning the ~1 KB context by value was a measurable copy per match.
    #[inline(always)]
    fn context(&self, sorted: &[u32; MAXP], nunits: usize, detail: bool) -> Ctx {
        let ix = self.ix;
        let model = self.model;
        let mut c = Ctx {
            n: 0,
            slots: [0; MAXP],
            skill: [0.0; MAXP],
            total_skill: 0.0,
            skill_pow: [0.0; MAXP],
            ps: [0; MAXPAIRS],
            worst_ms: [0.0; MAXP],
            hist: Vec::new(),
            fixed: [1.0; factors::COUNT],
            fixed_weighted: 0.0,
            region: None,
            hosts: Vec::new(),
            map: None,
            capable: 0,
            quality_wait: 0.0,
            overdue: 0,
        };
        let p = model.equal_teams.p.0;
        for &u in &sorted[..nunits] {
            for &pl in ix.members_of(u) {
                let hot = ix.hot[pl as usize];
                let s = hot.skill;
                c.slots[c.n] = pl;
                c.skill[c.n] = s;
                c.total_skill += s;
                c.skill_pow[c.n] = if p == 1.0 || p.is_infinite() {
                    s
                } else if p == 2.0 {
                    s * s
                } else {
                    s.powf(p)
                };
                c.quality_wait += hot.wait_capped;
                c.overdue += hot.overdue;
                c.n += 1;
            }
        }
        c.quality_wait *= self.beta;
        let n = c.n;
        let w = &self.weights;
        if w[EQUAL_PLAYERS] > 0.0 || detail {
            let spread = equal_players::spread(&c.skill[..n], &model.equal_players);
            c.fixed[EQUAL_PLAYERS] = model.equal_players.curve.score(spread);
        }
        if self.p2p {
            let limit = model.hosts.max_ping_ms;
            if detail {
                let mut k = 0;
                for i in 0..n {
                    for j in i + 1..n {
                        let (ms, score) = self.pair_ping(c.slots[i], c.slots[j]);
                        c.ps[k] = score;
                        k += 1;
                        if ms > c.worst_ms[i] {
                            c.worst_ms[i] = ms;
                        }
                        if ms > c.worst_ms[j] {
                            c.worst_ms[j] = ms;
                        }
                    }
                }
                let capable = (0..n).filter(|&i| c.worst_ms[i] as f64 <= limit).count();
                c.capable = capable as u32;
                c.fixed[TWO_HOSTS] = hosts::score(capable, &model.hosts);
                // the seed's host rule: best = lowest worst ping to the others; ties by
                // player id, so the named host does not depend on the pool's order
                let mut h: Vec<(f32, u32)> = (0..n)
                    .filter(|&i| c.worst_ms[i] as f64 <= limit)
                    .map(|i| (c.worst_ms[i], c.slots[i]))
                    .collect();
                h.sort_by(|a, b| {
                    a.0.total_cmp(&b.0)
                        .then_with(|| ix.ids[a.1 as usize].cmp(&ix.ids[b.1 as usize]))
                });
                c.hosts = h.into_iter().map(|h| h.1).collect();
            } else {
                // always, whatever the weights: hosts are a hard rule
                // slots with some ping above the host limit, as a bit mask
                let mut over_mask = 0u32;
                let mut k = 0;
                for i in 0..n {
                    for j in i + 1..n {
                        let (score, over) = self.pair_ping_packed(c.slots[i], c.slots[j]);
                        c.ps[k] = score;
                        k += 1;
                        if over {
                            over_mask |= (1 << i) | (1 << j);
                        }
                    }
                }
                let capable = n - over_mask.count_ones() as usize;
                c.capable = capable as u32;
                if w[TWO_HOSTS] > 0.0 {
                    c.fixed[TWO_HOSTS] = hosts::score(capable, &model.hosts);
                }
            }
        } else if w[ENEMY_PING] > 0.0 || detail {
            let (region, score) = enemy_ping::choose_region(ix, &c.slots[..n], &model.ping);
            c.region = region;
            c.fixed[ENEMY_PING] = score;
        }
        if w[OPPONENT_VARIATION] > 0.0 || detail {
            for i in 0..n {
                let list = &ix.history[c.slots[i] as usize];
                if list.is_empty() {
                    continue;
                }
                for j in i + 1..n {
                    if let Ok(k) = list.binary_search_by_key(&c.slots[j], |e| e.0) {
                        let (_, tm, op) = list[k];
                        c.hist.push((i as u8, j as u8, tm, op));
                    }
                }
            }
        }
        c.fixed[MEMBER_COUNT_DIFFERENCE] = self.member_count_score;
        if ix.maps.active() && (w[MAPS] > 0.0 || detail) {
            c.map = self.map_of(&c.slots[..n]);
            c.fixed[MAPS] = c.map.map_or(0.0, |m| m.score);
        }
        for &f in &[EQUAL_PLAYERS, TWO_HOSTS, MEMBER_COUNT_DIFFERENCE, MAPS] {
            if w[f] > 0.0 {
                c.fixed_weighted += w[f] * c.fixed[f];
            }
        }
        if !self.p2p && w[ENEMY_PING] > 0.0 {
            c.fixed_weighted += w[ENEMY_PING] * c.fixed[ENEMY_PING];
        }
        c
    }

    /// Split-dependent factors of split `s` of `table`; None if the split breaks strict
    /// roles. Returns the weighted sum of the split-dependent factors. With `all`, every
    /// factor is computed (for the report), not only the weighted ones.
    fn split_factors(
        &self,
        c: &Ctx,
        table: &SplitTable,
        s: usize,
        f: &mut [f64; factors::COUNT],
        all: bool,
        roles_out: Option<&mut Vec<(u32, usize)>>,
    ) -> Option<f64> {
        let w = &self.weights;
        let n = c.n;
        let slot_team = &table.slot_team[s * n..(s + 1) * n];
        let on = |k: usize| w[k] > 0.0 || all;
        // roles first: strict roles can reject the split
        if self.nroles > 0 && (self.strict_roles || on(ROLES) || roles_out.is_some()) {
            f[ROLES] = self.split_roles(c, slot_team, roles_out)?;
        }
        if on(EQUAL_TEAMS) {
            f[EQUAL_TEAMS] = self.split_equal_teams(c, slot_team);
        }
        if on(INDISTINGUISHABLE) {
            f[INDISTINGUISHABLE] = self.split_indistinguishable(c, slot_team);
        }
        if on(PREMADES) {
            f[PREMADES] = self.premade_by_spread[table.party_spread[s] as usize];
        }
        if self.p2p && on(ENEMY_PING) {
            let cross = &table.cross[s * table.ncross..(s + 1) * table.ncross];
            let sum: u64 = cross.iter().map(|&k| c.ps[k as usize] as u64).sum();
            f[ENEMY_PING] = sum as f64 / (table.ncross as f64 * PING_UNIT);
        }
        if on(OPPONENT_VARIATION) && !c.hist.is_empty() {
            f[OPPONENT_VARIATION] = self.split_opponent_variation(c, slot_team);
        }
        if on(SIDE_PREFERENCE) {
            f[SIDE_PREFERENCE] = self.split_side_preference(c, slot_team);
        }
        if on(PREDICTED_FAIRNESS) {
            f[PREDICTED_FAIRNESS] = self.split_predicted_fairness(c, slot_team);
        }
        if on(LANGUAGE) {
            f[LANGUAGE] = self.split_language(c, slot_team);
        }
        Some(self.weighted_split_sum(f))
    }

    /// The roles factor of one split: the share of roles filled over all teams. None
    /// when strict roles are on and a team cannot fill every role. With `roles_out`, who
    /// takes which role is pushed to it.
    fn split_roles(
        &self,
        c: &Ctx,
        slot_team: &[u8],
        roles_out: Option<&mut Vec<(u32, usize)>>,
    ) -> Option<f64> {
        let teams = self.tables.teams;
        // slots per team in the per-team arrays below: the largest team
        let ts = self.tables.team_size;
        let mut masks = [0u32; MAXP];
        let mut who = [0u32; MAXP];
        let mut k = [0usize; MAXP];
        for i in 0..c.n {
            let t = slot_team[i] as usize;
            masks[t * ts + k[t]] = self.ix.roles[c.slots[i] as usize];
            who[t * ts + k[t]] = c.slots[i];
            k[t] += 1;
        }
        let mut filled = 0;
        let mut out = roles_out;
        for t in 0..teams {
            let (got, owner) = roles::fill(&masks[t * ts..(t + 1) * ts], self.nroles);
            if self.strict_roles && got < self.nroles {
                return None;
            }
            filled += got;
            if let Some(out) = out.as_deref_mut() {
                for (r, &o) in owner.iter().enumerate().take(self.nroles) {
                    if o >= 0 {
                        out.push((who[t * ts + o as usize], r));
                    }
                }
            }
        }
        Some(filled as f64 / (self.nroles * teams) as f64)
    }

    /// The equal-teams factor of one split: each team's skill (the p-norm or p-mean of
    /// its players' skills), then the curve of the difference between teams.
    fn split_equal_teams(&self, c: &Ctx, slot_team: &[u8]) -> f64 {
        let teams = self.tables.teams;
        let caps = &self.tables.caps;
        let et = &self.model.equal_teams;
        let mut acc = [0.0f64; MAXP];
        if et.p.is_infinite() {
            acc[..teams].fill(f64::NEG_INFINITY);
            for i in 0..c.n {
                let t = slot_team[i] as usize;
                acc[t] = acc[t].max(c.skill_pow[i]);
            }
        } else {
            for i in 0..c.n {
                acc[slot_team[i] as usize] += c.skill_pow[i];
            }
            let p = et.p.0;
            for (t, a) in acc[..teams].iter_mut().enumerate() {
                let base = match et.team_skill {
                    super::model::TeamSkill::Mean => *a / caps[t] as f64,
                    super::model::TeamSkill::Norm => *a,
                };
                *a = if p == 1.0 {
                    base
                } else if p == 2.0 {
                    base.sqrt()
                } else {
                    base.powf(1.0 / p)
                };
            }
        }
        let d = equal_teams::difference(&acc[..teams]);
        et.curve.score(d)
    }

    /// The indistinguishable-teams factor of one split: how far each team's skill
    /// moments stand from the whole match's.
    fn split_indistinguishable(&self, c: &Ctx, slot_team: &[u8]) -> f64 {
        let teams = self.tables.teams;
        let ts = self.tables.team_size;
        let mut tsk = [0.0f64; MAXP];
        let mut k = [0usize; MAXP];
        for i in 0..c.n {
            let t = slot_team[i] as usize;
            tsk[t * ts + k[t]] = c.skill[i];
            k[t] += 1;
        }
        let mut m = [(0.0, 0.0); MAXP];
        for t in 0..teams {
            m[t] = indistinguishable::moments(&tsk[t * ts..t * ts + k[t]]);
        }
        let whole = indistinguishable::moments(&c.skill[..c.n]);
        let p = &self.model.indistinguishable_teams;
        let d = indistinguishable::divergence(&m[..teams], whole, p.sigma_prior);
        (-d / p.scale).exp()
    }

    /// The opponent-variation factor of one split: what the pairs who met before cost,
    /// as team-mates or as opponents.
    fn split_opponent_variation(&self, c: &Ctx, slot_team: &[u8]) -> f64 {
        let mut cost = 0.0f64;
        for &(i, j, tm, op) in &c.hist {
            cost += if slot_team[i as usize] == slot_team[j as usize] {
                tm
            } else {
                op
            } as f64;
        }
        opponent_variation::score(cost, c.n)
    }

    /// The side-preference factor of one split: each team's summed side leaning and
    /// how many of its players lean at all.
    fn split_side_preference(&self, c: &Ctx, slot_team: &[u8]) -> f64 {
        let mut t = [(0.0, 0usize); MAXP];
        for i in 0..c.n {
            let s = self.ix.side[c.slots[i] as usize];
            if !s.is_nan() {
                let k = slot_team[i] as usize;
                t[k].0 += s;
                t[k].1 += 1;
            }
        }
        side_preference::score(&t[..self.tables.teams])
    }

    /// The predicted-fairness factor of one split, from each team's ratings and
    /// uncertainties.
    fn split_predicted_fairness(&self, c: &Ctx, slot_team: &[u8]) -> f64 {
        let mut r: Vec<Vec<WengLinRating>> = vec![Vec::new(); self.tables.teams];
        for i in 0..c.n {
            let p = c.slots[i] as usize;
            r[slot_team[i] as usize].push(WengLinRating {
                rating: c.skill[i],
                uncertainty: self.ix.sigma[p],
            });
        }
        let refs: Vec<&[WengLinRating]> = r.iter().map(|v| v.as_slice()).collect();
        predicted_fairness::score(&refs, self.model.predicted_fairness.beta)
    }

    /// The language factor of one split: 1 when the pool declares no languages.
    fn split_language(&self, c: &Ctx, slot_team: &[u8]) -> f64 {
        let langs = &self.ix.meet.languages;
        if langs.is_empty() {
            return 1.0;
        }
        let mut bits = [0u64; MAXP];
        for i in 0..c.n {
            bits[i] = langs[c.slots[i] as usize];
        }
        language::score(&bits[..c.n], slot_team)
    }

    /// The weighted sum of the split-dependent factors in `f`, in a fixed order.
    fn weighted_split_sum(&self, f: &[f64; factors::COUNT]) -> f64 {
        let w = &self.weights;
        let mut sum = 0.0;
        for &k in &[
            LANGUAGE,
            EQUAL_TEAMS,
            INDISTINGUISHABLE,
            PREMADES,
            OPPONENT_VARIATION,
            SIDE_PREFERENCE,
            ROLES,
            PREDICTED_FAIRNESS,
        ] {
            if w[k] > 0.0 {
                sum += w[k] * f[k];
            }
        }
        if self.p2p && w[ENEMY_PING] > 0.0 {
            sum += w[ENEMY_PING] * f[ENEMY_PING];
        }
        sum
    }

    /// The weighted split-dependent factors of split `s` on the fast path (same
    /// formulas as `split_factors`, specialised to two teams and p = 1).
    #[inline]
    fn split_value_fast(&self, c: &Ctx, table: &SplitTable, s: usize) -> f64 {
        let w = &self.weights;
        let model = self.model;
        let ts = self.tables.team_size;
        let mut v = 0.0;
        if w[EQUAL_TEAMS] > 0.0 {
            let sum0: f64 = table.first_team[s * ts..(s + 1) * ts]
                .iter()
                .map(|&i| c.skill[i as usize])
                .sum();
            let x = (2.0 * sum0 - c.total_skill).abs() * self.equal_teams_inverse();
            v += w[EQUAL_TEAMS] * model.equal_teams.curve.score_scaled(x);
        }
        if w[PREMADES] > 0.0 {
            v += w[PREMADES] * self.premade_by_spread[table.party_spread[s] as usize];
        }
        if self.p2p && w[ENEMY_PING] > 0.0 {
            let cross = &table.cross[s * table.ncross..(s + 1) * table.ncross];
            let sum: u64 = cross.iter().map(|&k| c.ps[k as usize] as u64).sum();
            v += w[ENEMY_PING] * (sum as f64 / (table.ncross as f64 * PING_UNIT));
        }
        if w[OPPONENT_VARIATION] > 0.0 {
            let slot_team = &table.slot_team[s * c.n..(s + 1) * c.n];
            let mut cost = 0.0f64;
            for &(i, j, tm, op) in &c.hist {
                cost += if slot_team[i as usize] == slot_team[j as usize] {
                    tm
                } else {
                    op
                } as f64;
            }
            v += w[OPPONENT_VARIATION] * opponent_variation::score(cost, c.n);
        }
        v
    }

    /// The fast path's factor from |team 0 sum - team 1 sum| to the equal-teams curve's
    /// x (1 / scale, and 1 / team size for mean team skill).
    #[inline]
    fn equal_teams_inverse(&self) -> f64 {
        self.et_inv
    }

    /// Score a match given as a set of units: the best split over all factors (the
    /// best that keeps the hard rules, when the best one breaks a rule that depends on
    /// the split: a team-scope avoid, a team gap or enemy ping floor).
    pub fn evaluate(&self, units: &[u32]) -> MatchEval {
        let Some((table, sorted, k)) = self.shape(units) else {
            return MatchEval::INFEASIBLE;
        };
        let c = self.context(&sorted, k, false);
        let mut best = f64::NEG_INFINITY;
        let mut best_split = u32::MAX;
        let mut f = c.fixed;
        let value = |s: usize, f: &mut [f64; factors::COUNT]| {
            if self.fast {
                Some(self.split_value_fast(&c, table, s))
            } else {
                self.split_factors(&c, table, s, f, false, None)
            }
        };
        for s in 0..table.splits {
            if let Some(v) = value(s, &mut f)
                && v > best
            {
                best = v;
                best_split = s as u32;
            }
        }
        if best_split == u32::MAX {
            return MatchEval::INFEASIBLE;
        }
        let n = c.n;
        let score_of = |v: f64| ((v + c.fixed_weighted) * self.inv_wsum).clamp(0.0, 1.0);
        let judge = |s: u32, score: f64| {
            let st = &table.slot_team[s as usize * n..(s as usize + 1) * n];
            self.judge(c.capable, &c.slots[..n], st, score)
        };
        let mut verdict = judge(best_split, score_of(best));
        if self.rules.split_dependent(verdict.0) {
            // the best split that keeps the rules, if any
            let mut alt: Option<(f64, u32, (Broken, bool))> = None;
            for s in 0..table.splits {
                if let Some(v) = value(s, &mut f)
                    && alt.is_none_or(|a| v > a.0)
                {
                    let j = judge(s as u32, score_of(v));
                    if j.0 == Broken::None {
                        alt = Some((v, s as u32, j));
                    }
                }
            }
            if let Some((v, s, j)) = alt {
                (best, best_split, verdict) = (v, s, j);
            }
        }
        let score = score_of(best);
        MatchEval::scored(
            verdict,
            score,
            best_split,
            self.shaped(score) + c.quality_wait,
            c.overdue,
        )
    }

    /// The general path's evaluation (for testing the fast path against it).
    pub fn evaluate_general(&self, units: &[u32]) -> MatchEval {
        let general = Scorer {
            fast: false,
            ..self.shallow()
        };
        general.evaluate(units)
    }

    fn shallow(&self) -> Scorer<'a> {
        Scorer {
            ix: self.ix,
            model: self.model,
            ppm: self.ppm,
            member_count_score: self.member_count_score,
            tables: self.tables.clone(),
            weights: self.weights,
            wsum: self.wsum,
            inv_wsum: self.inv_wsum,
            et_inv: self.et_inv,
            ping_unit_weight: self.ping_unit_weight,
            ep_pairwise_inv: self.ep_pairwise_inv,
            p2p: self.p2p,
            nroles: self.nroles,
            strict_roles: self.strict_roles,
            wait_cap: self.wait_cap,
            beta: self.beta,
            power: self.power,
            premade_by_spread: self.premade_by_spread.clone(),
            premade_weighted: self.premade_weighted,
            fast: self.fast,
            ping_cache: self.ping_cache.clone(),
            hist_mask: self.hist_mask.clone(),
            rules: self.rules.clone(),
        }
    }

    /// The map of a match of these players: vetoes relax when the floor step in force
    /// says so.
    pub fn map_of(&self, players: &[u32]) -> Option<crate::maps::MapPick> {
        let relax = self.floor_in_force(players).is_some_and(|s| s.relax_vetoes);
        self.ix.maps.pick(players, relax)
    }

    /// The maps factor of a match of these players; 0 when every map is vetoed (the
    /// veto rule then keeps the match from forming).
    #[inline]
    pub(crate) fn map_score(&self, players: &[u32]) -> f64 {
        self.map_of(players).map_or(0.0, |m| m.score)
    }

    /// Whether `evaluate` takes the two-team fast path.
    pub fn is_fast(&self) -> bool {
        self.fast
    }

    /// Evaluate a match with a given team assignment (unit -> team) instead of the best
    /// split; used by the greedy strategy. None if the assignment breaks a constraint.
    pub fn evaluate_fixed(&self, units: &[u32], unit_team: &[u8]) -> Option<MatchEval> {
        let (table, sorted, k) = self.shape(units)?;
        // find the split of the table equal to this assignment (up to team relabeling)
        let pos = |u: u32| units.iter().position(|&x| x == u).unwrap();
        let want: Vec<u8> = sorted[..k].iter().map(|&u| unit_team[pos(u)]).collect();
        let s = (0..table.splits).find(|&s| {
            let row = &table.unit_team[s * k..(s + 1) * k];
            same_partition(row, &want)
        })?;
        let c = self.context(&sorted, k, false);
        let mut f = c.fixed;
        let v = self.split_factors(&c, table, s, &mut f, false, None)?;
        let score = ((v + c.fixed_weighted) * self.inv_wsum).clamp(0.0, 1.0);
        let st = &table.slot_team[s * c.n..(s + 1) * c.n];
        Some(MatchEval::scored(
            self.judge(c.capable, &c.slots[..c.n], st, score),
            score,
            s as u32,
            self.shaped(score) + c.quality_wait,
            c.overdue,
        ))
    }

    /// Everything about a match for the output, with the split `eval.split`.
    pub fn describe(&self, units: &[u32], eval: &MatchEval) -> MatchDetail {
        let (table, sorted, k) = self.shape(units).expect("described match is valid");
        let c = self.context(&sorted, k, true);
        let n = c.n;
        let s = eval.split as usize;
        let st = &table.slot_team[s * n..(s + 1) * n];
        let mut f = c.fixed;
        let mut roles = Vec::new();
        let v = self
            .split_factors(&c, table, s, &mut f, true, Some(&mut roles))
            .expect("described split is valid");
        if self.nroles == 0 {
            f[ROLES] = 1.0;
        }
        let score = ((v + c.fixed_weighted) * self.inv_wsum).clamp(0.0, 1.0);
        let mut teams = vec![Vec::new(); self.tables.teams];
        for i in 0..n {
            teams[st[i] as usize].push(c.slots[i]);
        }
        if teams.len() == 2 && self.orientation_swaps(&teams) {
            teams.swap(0, 1);
        }
        roles.sort();
        MatchDetail {
            teams,
            score,
            factors: f,
            roles,
            region: c.region,
            hosts: c.hosts,
            map: c.map,
        }
    }

    /// The mutual-information balancing note: orient the two teams so that most side preferences are met (count of
    /// players with s < 0.5 on side 0 plus s > 0.5 on side 1; ties by the summed
    /// preference; a full tie keeps the order).
    fn orientation_swaps(&self, teams: &[Vec<u32>]) -> bool {
        let side = &self.ix.side;
        let met = |first: &[u32], second: &[u32]| {
            let count = first.iter().filter(|&&p| side[p as usize] < 0.5).count()
                + second.iter().filter(|&&p| side[p as usize] > 0.5).count();
            let soft: f64 = first
                .iter()
                .filter(|&&p| !side[p as usize].is_nan())
                .map(|&p| 1.0 - side[p as usize])
                .sum::<f64>()
                + second
                    .iter()
                    .filter(|&&p| !side[p as usize].is_nan())
                    .map(|&p| side[p as usize])
                    .sum::<f64>();
            (count, soft)
        };
        let keep = met(&teams[0], &teams[1]);
        let swap = met(&teams[1], &teams[0]);
        swap.0 > keep.0 || (swap.0 == keep.0 && swap.1 > keep.1 + 1e-12)
    }
}

/// Two team labelings describe the same partition.
fn same_partition(a: &[u8], b: &[u8]) -> bool {
    let mut map = [u8::MAX; MAXP];
    let mut back = [u8::MAX; MAXP];
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (x as usize, y as usize);
        if map[x] == u8::MAX && back[y] == u8::MAX {
            map[x] = y as u8;
            back[y] = x as u8;
        } else if map[x] as usize != y || back[y] as usize != x {
            return false;
        }
    }
    true
}
