//! Each player's map choices, indexed for the round: the maps they veto and prefer
//! (their `veto` and `maps` attributes) and the maps of their last matches
//! (`[queues.NAME.maps] repeat_depth`), as bit masks over the queue's pool; and the
//! choice of a match's map from them (`factors::maps` scores it).
//!
//! Names outside the pool are left out rather than refused: the front door refuses
//! them at enqueue, so one here names a map a config reload retired, and a veto of a
//! map nobody can be given is already honoured. Vetoes beyond `maps.vetoes` (a reload
//! that lowered it) keep the first ones.

use std::collections::HashMap;

use crate::factors::maps as factor;
use crate::model::MapParams;
use crate::pool::Pool;

/// The attribute naming the maps a player vetoes.
pub const VETO_ATTRIBUTE: &str = "veto";
/// The attribute naming the maps a player prefers.
pub const PREFER_ATTRIBUTE: &str = "maps";

/// The pool's map choices, per indexed player. Empty when the queue has no maps.
#[derive(Debug, Clone, Default)]
pub struct MapChoices {
    /// The queue's maps, in pool order (bit m is `names[m]`).
    pub names: Vec<String>,
    /// Every map of the pool.
    pub all: u64,
    /// Per player: the maps they veto.
    pub veto: Vec<u64>,
    /// Per player: the maps they prefer; 0 when they named none (every map is as good).
    pub prefer: Vec<u64>,
    /// Per player: (map, staleness in (0, 1]) for each map of their last
    /// `repeat_depth` matches (`factors::maps::staleness`).
    pub recent: Vec<Vec<(u8, f32)>>,
    /// Some player of the pool vetoes a map.
    pub any_veto: bool,
}

/// A match's map.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MapPick {
    /// Index in the pool.
    pub map: u8,
    /// The maps factor of the match on this map.
    pub score: f64,
    /// Players of the match who vetoed it (0 unless vetoes were relaxed).
    pub vetoed_by: u32,
}

impl MapChoices {
    /// The choices of the players `source` names (indexed player -> pool position).
    pub fn build(pool: &Pool, params: &MapParams, source: &[usize]) -> MapChoices {
        if params.is_absent() {
            return MapChoices::default();
        }
        let bit: HashMap<&str, u64> = params
            .pool
            .iter()
            .enumerate()
            .map(|(i, m)| (m.as_str(), 1u64 << i))
            .collect();
        let mask = |names: &[String], most: usize| {
            names
                .iter()
                .filter_map(|n| bit.get(n.as_str()))
                .take(most)
                .fold(0u64, |m, b| m | b)
        };
        let attr = |p: usize, name: &str| {
            pool.players[p]
                .attributes
                .get(name)
                .map_or(&[][..], |a| a.values())
        };
        let veto: Vec<u64> = source
            .iter()
            .map(|&p| mask(attr(p, VETO_ATTRIBUTE), params.vetoes))
            .collect();
        let prefer = source
            .iter()
            .map(|&p| mask(attr(p, PREFER_ATTRIBUTE), usize::MAX))
            .collect();
        MapChoices {
            names: params.pool.clone(),
            all: if params.pool.len() == 64 {
                u64::MAX
            } else {
                (1u64 << params.pool.len()) - 1
            },
            any_veto: veto.iter().any(|&v| v != 0),
            veto,
            prefer,
            recent: recent_maps(pool, params, source),
        }
    }

    /// The queue has maps.
    pub fn active(&self) -> bool {
        !self.names.is_empty()
    }

    /// The maps none of these players vetoed.
    #[inline]
    pub fn open(&self, players: &[u32]) -> u64 {
        players
            .iter()
            .fold(self.all, |m, &p| m & !self.veto[p as usize])
    }

    /// The best map for these players: among the maps none of them vetoed, the one they
    /// like most (`factors::maps`), ties to the first in the pool. With `relax`, when
    /// every map is vetoed by someone, the map the fewest vetoed. None when every map is
    /// vetoed and `relax` is off, or the queue has no maps.
    pub fn pick(&self, players: &[u32], relax: bool) -> Option<MapPick> {
        if !self.active() || players.is_empty() {
            return None;
        }
        let open = self.open(players);
        let (candidates, vetoed) = if open != 0 {
            (open, None)
        } else if relax {
            let mut count = [0u32; 64];
            for &p in players {
                each_bit(self.veto[p as usize], |m| count[m] += 1);
            }
            let count = &count[..self.names.len()];
            let least = *count.iter().min()?;
            let c = count
                .iter()
                .enumerate()
                .filter(|(_, k)| **k == least)
                .fold(0u64, |c, (m, _)| c | 1 << m);
            (c, Some(least))
        } else {
            return None;
        };
        let mut like = [0.0f64; 64];
        for &p in players {
            let p = p as usize;
            let prefer = self.prefer[p];
            // a vetoed map gives its player nothing, even when the rule relaxed
            let liked = if prefer == 0 { self.all } else { prefer } & !self.veto[p];
            each_bit(liked & candidates, |m| like[m] += 1.0);
            let mut fresh = candidates & !self.veto[p];
            for &(m, stale) in &self.recent[p] {
                if fresh & (1 << m) != 0 {
                    like[m as usize] += 1.0 - stale as f64;
                    fresh &= !(1 << m);
                }
            }
            each_bit(fresh, |m| like[m] += 1.0);
        }
        let mut best: Option<(usize, f64)> = None;
        each_bit(candidates, |m| {
            if best.is_none_or(|b| like[m] > b.1) {
                best = Some((m, like[m]));
            }
        });
        let (map, total) = best?;
        Some(MapPick {
            map: map as u8,
            score: factor::score(total, players.len()),
            vetoed_by: vetoed.unwrap_or(0),
        })
    }
}

/// Call `f` with the index of every set bit, lowest first.
#[inline]
fn each_bit(mut bits: u64, mut f: impl FnMut(usize)) {
    while bits != 0 {
        f(bits.trailing_zeros() as usize);
        bits &= bits - 1;
    }
}

/// Per indexed player: the maps of their last `repeat_depth` matches with their
/// staleness (several plays of one map add up, to at most 1).
fn recent_maps(pool: &Pool, params: &MapParams, source: &[usize]) -> Vec<Vec<(u8, f32)>> {
    let n = source.len();
    let mut out: Vec<Vec<(u8, f32)>> = vec![Vec::new(); n];
    if params.repeat_depth == 0 || pool.history.iter().all(|m| m.map.is_none()) {
        return out;
    }
    let slot: HashMap<&str, usize> = source
        .iter()
        .enumerate()
        .map(|(k, &p)| (pool.players[p].id.as_str(), k))
        .collect();
    let map_index: HashMap<&str, u8> = params
        .pool
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i as u8))
        .collect();
    let mut order: Vec<usize> = (0..pool.history.len()).collect();
    order.sort_by(|&a, &b| pool.history[b].at.cmp(&pool.history[a].at).then(a.cmp(&b)));
    let mut taken = vec![0usize; n];
    for h in order {
        let past = &pool.history[h];
        let map = past.map.as_deref().and_then(|m| map_index.get(m).copied());
        for id in past.teams.iter().flatten() {
            let Some(&k) = slot.get(id.as_str()) else {
                continue;
            };
            let rank = taken[k];
            if rank >= params.repeat_depth {
                continue;
            }
            taken[k] += 1;
            if let Some(m) = map {
                let s = factor::staleness(rank, params.repeat_depth);
                match out[k].iter_mut().find(|e| e.0 == m) {
                    Some(e) => e.1 = (e.1 + s).min(1.0),
                    None => out[k].push((m, s)),
                }
            }
        }
    }
    out
}
