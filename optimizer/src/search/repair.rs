//! Premade repair: a move aimed at the premades factor's structure.
//!
//! A match whose party sizes cannot be split into two identical team structures (a
//! 3-premade against 2 + 1, a 2-premade and a solo against three solos) loses part of the
//! premades weight. Two such matches asymmetric in the same way are usually fixed by one
//! exchange between them (3 | 2+1 twice: the second 3-premade for the first match's 2 + 1),
//! but the random exchanges draw that pair of matches, that unit and that set rarely, and
//! the late skip of shape-changing exchanges (`anneal`) drops most of them. Every
//! `REPAIR_EVERY` steps the annealing run proposes such an exchange instead, scored and
//! accepted as any other. Measured on the three 300-player bench pools at 1 s
//! (docs/optimizer-tuning.md, "Premade repair"): +0.00014 ± 0.00006 of round score.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::factors::PREMADES;
use crate::score::Scorer;

use super::moves::{Exchange, below};
use super::state::State;

/// One step in this many is a premade repair (1 in 256: +0.00011 and +0.00012 of round
/// score, but pool 2 lost 0.0001 in both batches; 1 in 1024 did not).
pub const REPAIR_EVERY: u64 = 1024;

/// Repairs apply to two-team queues that score premades (the parity test below is the
/// two-team condition).
pub fn applies(sc: &Scorer) -> bool {
    sc.model.teams == 2 && sc.weights[PREMADES] > 0.0
}

/// One bit per party size (2 and up) that occurs an odd number of times: 0 when the
/// match's parties can form two identical team structures.
fn size_parity(sc: &Scorer, units: &[u32]) -> u32 {
    units
        .iter()
        .fold(0, |p, &u| match sc.ix.unit_size[u as usize] {
            0 | 1 => p,
            s => p ^ 1 << (s as u32).min(31),
        })
}

/// Draw a premade repair into `mv`: a party of one asymmetric match against units of
/// another with the same parity that add up to its size and leave both symmetric. False
/// when the round has no such pair or the drawn pair has no such exchange.
pub fn premade_repair(
    sc: &Scorer,
    st: &State,
    rng: &mut Xoshiro256PlusPlus,
    mv: &mut Exchange,
) -> bool {
    let mut asym = [(0u32, 0u32); 64];
    let mut n = 0;
    for (c, m) in st.matches.iter().enumerate() {
        let p = size_parity(sc, m);
        if p != 0 && n < asym.len() {
            asym[n] = (c as u32, p);
            n += 1;
        }
    }
    if n < 2 {
        return false;
    }
    let r = rng.next_u64();
    let (x, px) = asym[below(r, n)];
    let off = below(r >> 32, n);
    let Some(&(y, _)) = (0..n)
        .map(|k| &asym[(off + k) % n])
        .find(|&&(c, p)| c != x && p == px)
    else {
        return false;
    };
    let r2 = rng.next_u64();
    let (a, b) = if r2 & 1 == 0 { (x, y) } else { (y, x) };
    let (src, dst) = (&st.matches[a as usize], &st.matches[b as usize]);
    let size = |u: u32| sc.ix.unit_size[u as usize] as u32;
    // the target's subsets as bit masks, from a random offset
    let nd = dst.len().min(16);
    let subsets = 1usize << nd;
    let (start_u, start_s) = (below(r2 >> 1, src.len()), below(r2 >> 33, subsets));
    for k in 0..src.len() {
        let u = src[(start_u + k) % src.len()];
        let su = size(u);
        if su < 2 {
            continue;
        }
        for t in 0..subsets {
            let set = (start_s + t) % subsets;
            let members = || {
                dst.iter()
                    .take(nd)
                    .enumerate()
                    .filter(move |(i, _)| set >> i & 1 == 1)
                    .map(|(_, &v)| v)
            };
            let total: u32 = members().map(size).sum();
            let flipped = members().fold(size_parity(sc, &[u]), |p, v| p ^ size_parity(sc, &[v]));
            // both become symmetric when the exchanged units flip exactly the parity bits
            // the two matches share
            if total == su && flipped == px {
                mv.a = a;
                mv.b = b;
                mv.a_out.clear();
                mv.a_out.push(u);
                mv.b_out.clear();
                mv.b_out.extend(members());
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexedPool;
    use crate::model::QueueModel;
    use crate::pool::Pool;
    use rand::SeedableRng;

    /// `n` players of party `party` (an empty party: `n` solos), as pool JSON entries.
    fn pool(parties: &[(&str, usize)]) -> Pool {
        let mut players = Vec::new();
        for (k, &(party, n)) in parties.iter().enumerate() {
            for i in 0..n {
                let mut p = serde_json::json!({ "id": format!("p{k}-{i}"), "skill": 1500.0 + 10.0 * k as f64 });
                if !party.is_empty() {
                    p["party"] = party.into();
                }
                players.push(p);
            }
        }
        serde_json::from_value(serde_json::json!({ "players": players })).unwrap()
    }

    /// The round's matches: consecutive units, `per` players each.
    fn state(sc: &Scorer) -> State {
        let mut matches = vec![Vec::new()];
        let mut filled = 0;
        for u in 0..sc.ix.units.len() as u32 {
            if filled == sc.players_per_match() {
                matches.push(Vec::new());
                filled = 0;
            }
            matches.last_mut().unwrap().push(u);
            filled += sc.ix.unit_size[u as usize] as usize;
        }
        State::new(sc, matches, Vec::new())
    }

    /// Run `f` on the default queue's scorer and consecutive-units state of `parties`.
    fn with_round(parties: &[(&str, usize)], f: impl FnOnce(&Scorer, &State)) {
        let pool = pool(parties);
        let model = QueueModel::default();
        let ix = IndexedPool::build(&pool, &model).unwrap();
        let sc = Scorer::new(&ix, &model);
        f(&sc, &state(&sc));
    }

    #[test]
    fn two_matches_of_three_against_two_and_one_are_both_made_symmetric() {
        // match 0: A (3) | B (2) + solo; match 1: C (3) | D (2) + solo; match 2: six solos
        let parties = [("A", 3), ("B", 2), ("", 1), ("C", 3), ("D", 2), ("", 7)];
        with_round(&parties, |sc, st| {
            assert_eq!(st.matches.len(), 3);
            assert!(applies(sc));
            for seed in 0..20 {
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                let mut mv = Exchange::default();
                assert!(premade_repair(sc, st, &mut rng, &mut mv));
                // between the two asymmetric matches, never the symmetric one
                assert!(mv.a != 2 && mv.b != 2 && mv.a != mv.b);
                let size = |us: &[u32]| {
                    us.iter()
                        .map(|&u| sc.ix.unit_size[u as usize] as u32)
                        .sum::<u32>()
                };
                assert_eq!(size(&mv.a_out), size(&mv.b_out));
                // applied, both matches become symmetric
                for (c, out, inc) in [(mv.a, &mv.a_out, &mv.b_out), (mv.b, &mv.b_out, &mv.a_out)] {
                    let mut units: Vec<u32> = st.matches[c as usize]
                        .iter()
                        .copied()
                        .filter(|u| !out.contains(u))
                        .collect();
                    units.extend(inc.iter());
                    assert_eq!(size_parity(sc, &units), 0, "match {c} after {mv:?}");
                }
            }
        });
    }

    #[test]
    fn a_single_asymmetric_match_has_no_repair() {
        let parties = [("A", 3), ("B", 2), ("", 7)];
        with_round(&parties, |sc, st| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
            assert!(!premade_repair(sc, st, &mut rng, &mut Exchange::default()));
        });
    }

    #[test]
    fn three_team_queues_and_queues_without_premades_get_no_repairs() {
        let pool = pool(&[("", 1)]);
        let three = QueueModel {
            teams: 3,
            ..QueueModel::default()
        };
        let ix = IndexedPool::build(&pool, &three).unwrap();
        assert!(!applies(&Scorer::new(&ix, &three)));
        let mut model = QueueModel::default();
        model.weights.premades = 0.0;
        let ix = IndexedPool::build(&pool, &model).unwrap();
        assert!(!applies(&Scorer::new(&ix, &model)));
    }
}
