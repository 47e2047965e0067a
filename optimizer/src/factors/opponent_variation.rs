//! Factor 6, opponent variation (the Awesomenauts matchmaker post).
//!
//! History is the list of past matches in the pool input. For each player, only their
//! `opponent_variation.depth` most recent past matches count (default 1: "the previous
//! match"), the k-th most recent with weight `decay`^k. A pair that met as teammates
//! costs, if teammates again, `same_relation_cost` (1.0) x weight, and if opponents now
//! `swapped_relation_cost` (0.7) x weight (the Awesomenauts matchmaker post: meeting in the swapped relation is
//! "slightly better"); symmetrically for past opponents. A pair keeps the larger cost of
//! both players' views.
//!
//! Factor = 1 - (sum of pair costs) / (number of pairs in the match), so replaying the
//! same match with the same teams scores 0.

/// Factor from the summed pair cost.
#[inline]
pub fn score(cost_sum: f64, players: usize) -> f64 {
    // a multiplication by 1 / pairs: with `players` a constant (the rows' split loop)
    // the reciprocal folds away, where a division would stay on every split
    let per_pair = 1.0 / (players * (players - 1) / 2) as f64;
    (1.0 - cost_sum * per_pair).clamp(0.0, 1.0)
}
