//! Neighbour exchanges: late in a run, a share of the draws exchange a unit with the
//! match of one of its neighbours, the units closest to it in skill and ping.
//!
//! A random exchange pairs two random matches, and on a world-wide pool most pairs are
//! far apart in region or skill: the bound rejects them cheaply, but they are never
//! useful once the matches have taken shape. A neighbour exchange takes a random unit
//! of a random match, then a random one of that unit's `NEIGHBOURS` nearest units, and
//! trades with that unit's match: the unit itself when it is the same size and the draw
//! asks for same-size units, otherwise units of that match as a random exchange would
//! pick them. Distance: |skill difference| / (equal-teams curve scale / 3) + ping / 30 ms
//! (100 skill points weigh as 30 ms under the default curve).
//!
//! The larger the pool, the less likely a random partner match is a useful one: the
//! evidence (paired runs at 100 to 10,000 players) is in docs/optimizer.md.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use crate::score::Scorer;

use super::construct;
use super::moves::{Exchange, SAME_SIZE, below, chance, counterpart};
use super::state::{BENCH, State};

/// Neighbours kept per unit (16 measured the same as 32; 64 slightly less).
pub const NEIGHBOURS: usize = 32;

/// Up to this many units every unit is a candidate neighbour of every other (time
/// quadratic in the units: about 40 ms on two threads for 2,400 players); above it the
/// candidates are the `WINDOW` units either side of the unit in the skill order and in
/// its home region's skill order (10,000-player pools would spend seconds on all pairs).
pub const EXACT_UNITS: usize = 2048;

/// Candidates either side of a unit in each order, on pools above `EXACT_UNITS`.
const WINDOW: usize = 256;

/// From this share of the run on, `SHARE` of the draws are neighbour exchanges (from
/// the start: the same gain; three in four: less).
pub const FROM: f64 = 0.3;
pub const SHARE: f64 = 0.5;

/// Ping that weighs as much as a third of the equal-teams curve's scale in skill.
const PING_SCALE_MS: f64 = 30.0;

/// Each unit's nearest units, nearest first.
pub struct Neighbours {
    k: usize,
    list: Vec<u32>,
}

impl Neighbours {
    /// The lists of the scorer's pool; `None` when it has fewer than two units. Built
    /// on the current rayon pool, deterministic.
    pub fn build(sc: &Scorer) -> Option<Neighbours> {
        Self::build_from(sc, sc.ix.units.len() > EXACT_UNITS)
    }

    /// `build`, with candidates from the windows (`windowed`) or from every unit.
    fn build_from(sc: &Scorer, windowed: bool) -> Option<Neighbours> {
        let ix = sc.ix;
        let nu = ix.units.len();
        if nu < 2 {
            return None;
        }
        let k = NEIGHBOURS.min(nu - 1);
        let ping = &sc.model.ping;
        let skill_scale = (sc.model.equal_teams.curve.scale / 3.0).max(f64::MIN_POSITIVE);
        // a party's distances are its first member's pings and its mean skill
        let first: Vec<u32> = (0..nu as u32).map(|u| ix.members_of(u)[0]).collect();
        // large pools: candidates from windows of the skill and the region-skill orders
        let windows = windowed.then(|| {
            let by_region = construct::region_order(sc);
            let mut region_pos = vec![0usize; nu];
            for (pos, &u) in by_region.iter().enumerate() {
                region_pos[u as usize] = pos;
            }
            (by_region, region_pos)
        });
        let candidates = |u: usize| -> Vec<usize> {
            let Some((by_region, region_pos)) = &windows else {
                return (0..nu).filter(|&v| v != u).collect();
            };
            let around = |order: &[u32], pos: usize| {
                let lo = pos.saturating_sub(WINDOW);
                let hi = (pos + WINDOW + 1).min(order.len());
                order[lo..hi]
                    .iter()
                    .map(|&v| v as usize)
                    .collect::<Vec<_>>()
            };
            let mut c = around(&ix.by_skill, ix.skill_rank[u] as usize);
            c.extend(around(by_region, region_pos[u]));
            c.sort_unstable();
            c.dedup();
            c.retain(|&v| v != u);
            c
        };
        let list = (0..nu)
            .into_par_iter()
            .flat_map_iter(|u| {
                let mut d: Vec<(f64, u32)> = candidates(u)
                    .into_iter()
                    .map(|v| {
                        let ms =
                            ix.ping_ms(first[u], first[v], ping.relay_overhead_ms, ping.unknown_ms);
                        let skill = (ix.units[u].skill - ix.units[v].skill).abs();
                        (skill / skill_scale + ms / PING_SCALE_MS, v as u32)
                    })
                    .collect();
                let by = |x: &(f64, u32), y: &(f64, u32)| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1));
                if k < d.len() {
                    d.select_nth_unstable_by(k, by);
                    d.truncate(k);
                }
                d.sort_unstable_by(by);
                debug_assert_eq!(d.len(), k);
                d.into_iter().map(|(_, v)| v)
            })
            .collect();
        Some(Neighbours { k, list })
    }

    /// Unit u's neighbours, nearest first.
    pub fn of(&self, u: u32) -> &[u32] {
        &self.list[u as usize * self.k..(u as usize + 1) * self.k]
    }
}

/// Draw a neighbour exchange into `mv`; false if the draw found nothing to exchange
/// (the neighbour is in the same match or unmatched, or nothing in its match fits).
pub fn neighbour_exchange(
    sc: &Scorer,
    st: &State,
    nb: &Neighbours,
    rng: &mut Xoshiro256PlusPlus,
    mv: &mut Exchange,
) -> bool {
    if st.matches.is_empty() {
        return false;
    }
    mv.a_out.clear();
    mv.b_out.clear();
    let same_size = chance(rng, SAME_SIZE);
    let i = below(rng.next_u64(), st.matches.len()) as u32;
    let r2 = rng.next_u64();
    let src = st.container(i);
    let u = src[below(r2 >> 32, src.len())];
    let near = nb.of(u);
    let v = near[below(r2, near.len())];
    let j = st.loc[v as usize].0;
    if j == i || j == BENCH {
        return false;
    }
    mv.a = i;
    mv.b = j;
    mv.a_out.push(u);
    if same_size && sc.ix.unit_size[v as usize] == sc.ix.unit_size[u as usize] {
        mv.b_out.push(v);
        return true;
    }
    counterpart(sc, st.container(j), u, same_size, rng.next_u64(), mv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexedPool;
    use crate::model::QueueModel;
    use crate::pool::Pool;
    use rand::SeedableRng;

    /// Run `f` on the default queue's scorer of solos with the given skills and home
    /// regions (latency 20 ms to their own region, 150 ms to the other).
    fn with_scorer(players: &[(f64, &str)], f: impl FnOnce(&Scorer)) {
        let players: Vec<_> = players
            .iter()
            .enumerate()
            .map(|(k, &(skill, region))| {
                let other = if region == "eu" { "us" } else { "eu" };
                serde_json::json!({ "id": format!("p{k}"), "skill": skill,
                    "latencies": { region: 20, other: 150 } })
            })
            .collect();
        let pool: Pool = serde_json::from_value(serde_json::json!({ "players": players })).unwrap();
        let model = QueueModel::default();
        let ix = IndexedPool::build(&pool, &model).unwrap();
        f(&Scorer::new(&ix, &model));
    }

    #[test]
    fn neighbours_are_the_nearest_in_skill_and_ping_without_the_unit_itself() {
        // p0's nearest: p1 (same region, 50 points), then p2 (same region, 300 points:
        // 3 units of distance) before p3 (other region, 0 points: ~4.3 units)
        let players = [
            (1500.0, "eu"),
            (1550.0, "eu"),
            (1800.0, "eu"),
            (1500.0, "us"),
        ];
        with_scorer(&players, |sc| {
            let nb = Neighbours::build(sc).unwrap();
            assert_eq!(nb.of(0), &[1, 2, 3]);
            for u in 0..4 {
                assert!(!nb.of(u).contains(&u));
                assert_eq!(nb.of(u).len(), 3);
            }
        });
    }

    #[test]
    fn neighbour_exchanges_trade_equal_sizes_between_two_matches() {
        let players: Vec<(f64, &str)> = (0..24)
            .map(|k| {
                (
                    1400.0 + 10.0 * k as f64,
                    if k % 2 == 0 { "eu" } else { "us" },
                )
            })
            .collect();
        with_scorer(&players, |sc| {
            let nb = Neighbours::build(sc).unwrap();
            let matches: Vec<Vec<u32>> = (0..4).map(|m| (6 * m..6 * m + 6).collect()).collect();
            let st = State::new(sc, matches, Vec::new());
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
            let mut mv = Exchange::default();
            let mut drawn = 0;
            for _ in 0..200 {
                if !neighbour_exchange(sc, &st, &nb, &mut rng, &mut mv) {
                    continue;
                }
                drawn += 1;
                assert_ne!(mv.a, mv.b);
                assert!(mv.a != BENCH && mv.b != BENCH);
                assert_eq!(mv.a_out.len(), 1);
                assert_eq!(mv.b_out.len(), 1);
                let (u, v) = (mv.a_out[0], mv.b_out[0]);
                assert_eq!(st.loc[u as usize].0, mv.a);
                assert_eq!(st.loc[v as usize].0, mv.b);
            }
            assert!(drawn > 100, "only {drawn} of 200 draws found an exchange");
        });
    }

    #[test]
    fn large_pools_find_the_same_neighbours_in_windows() {
        // 2,100 solos in two regions: every unit's nearest are in its own region and
        // close in skill, well inside the windows
        let players: Vec<(f64, &str)> = (0..2100)
            .map(|k| {
                (
                    1000.0 + (k * 7919 % 2100) as f64 * 0.5,
                    if k % 3 == 0 { "us" } else { "eu" },
                )
            })
            .collect();
        with_scorer(&players, |sc| {
            assert!(sc.ix.units.len() > EXACT_UNITS);
            let windowed = Neighbours::build(sc).unwrap();
            let exact = Neighbours::build_from(sc, false).unwrap();
            assert_eq!(windowed.list.len(), 2100 * NEIGHBOURS);
            assert_eq!(windowed.list, exact.list);
        });
    }

    #[test]
    fn no_lists_for_a_single_unit() {
        with_scorer(&[(1500.0, "eu")], |sc| {
            assert!(Neighbours::build(sc).is_none())
        });
    }
}
