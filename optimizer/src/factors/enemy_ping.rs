//! Factor 5, ping with enemies (the Awesomenauts matchmaker post).
//!
//! Peer-to-peer: the mean over all pairs of opponents (9 pairs in 3v3) of the perceived
//! ping score `ping.score(ms)`: 1 up to `ping.good_ms` (30), 0 from `ping.bad_ms` (300),
//! and 1 - ln(ms / good) / ln(bad / good) between, so 110 -> 100 ms gains about twice as
//! much as 210 -> 200 ms. The ping of a pair is the explicit `peer_pings` value (mean of
//! both directions when both are given), otherwise the relay estimate
//! min over shared regions r of latency(a, r) + latency(b, r) + `ping.relay_overhead_ms`,
//! otherwise `ping.unknown_ms` (150).
//!
//! Dedicated servers: the match is placed in the region minimising the worst player's
//! latency (ties: lower mean, then name), a missing latency counting as
//! `ping.unknown_ms`; the factor is the mean over players of `ping.score(latency)`.

use crate::index::IndexedPool;
use crate::model::PingParams;

/// Region choice for a dedicated-server match: (region index, factor score).
pub fn choose_region(ix: &IndexedPool, players: &[u32], ping: &PingParams) -> (Option<usize>, f64) {
    let nreg = ix.regions.len();
    if nreg == 0 {
        return (None, ping.score(ping.unknown_ms));
    }
    let mut best: Option<(f64, f64, usize)> = None;
    for r in 0..nreg {
        let mut worst = 0.0f64;
        let mut sum = 0.0;
        for &p in players {
            let l = ix.latency(p, r).map_or(ping.unknown_ms, |v| v as f64);
            worst = worst.max(l);
            sum += l;
        }
        if best.is_none_or(|(w, s, _)| worst < w || (worst == w && sum < s)) {
            best = Some((worst, sum, r));
        }
    }
    let r = best.map(|b| b.2).unwrap_or(0);
    let score = players
        .iter()
        .map(|&p| ping.score(ix.latency(p, r).map_or(ping.unknown_ms, |v| v as f64)))
        .sum::<f64>()
        / players.len() as f64;
    (Some(r), score)
}
