//! Whole parties into squads (or teams) of exactly `team_size`: bin packing.
//!
//! Best-fit decreasing: units by size (largest first), each into the bin with the least
//! room that still takes it. For the sizes of these formats (parties of at most
//! `team_size`, bins of a few players) it fills every bin whenever that is possible
//! with squads of four or five (a 3 takes a bin with room 3 and leaves a hole only a
//! solo fills; 2 + 2 or 2 + 1 + 1 fill the rest). Two bins (two-team formats) fall back
//! to an exact subset sum when it does not.
//!
//! A squad's solos are chosen by skill: the squads a party left room in, strongest party
//! first, take the strongest remaining solos; the rest of the solos form squads in skill
//! order, so squadmates are of similar skill.

use super::score::Ctx;
use crate::model::AvoidScope;

/// Bin of each unit (same order) when `sizes` fill `bins` bins of `cap` exactly.
pub fn pack(sizes: &[usize], bins: usize, cap: usize) -> Option<Vec<u8>> {
    if sizes.iter().sum::<usize>() != bins * cap || sizes.iter().any(|&s| s > cap) {
        return None;
    }
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]).then(a.cmp(&b)));
    let mut room = vec![cap; bins];
    let mut out = vec![0u8; sizes.len()];
    let mut ok = true;
    for &i in &order {
        let best = (0..bins)
            .filter(|&b| room[b] >= sizes[i])
            .min_by_key(|&b| (room[b], b));
        match best {
            Some(b) => {
                room[b] -= sizes[i];
                out[i] = b as u8;
            }
            None => {
                ok = false;
                break;
            }
        }
    }
    if ok {
        return Some(out);
    }
    (bins == 2).then(|| subset_sum(sizes, cap)).flatten()
}

/// Whether `sizes` can fill `bins` bins of `cap` (`pack` succeeds), allowing fewer
/// players than that: the room left is taken by solos to come.
pub fn fits_partial(sizes: &[usize], bins: usize, cap: usize) -> bool {
    let total: usize = sizes.iter().sum();
    if total > bins * cap {
        return false;
    }
    let mut padded = sizes.to_vec();
    padded.extend(std::iter::repeat_n(1, bins * cap - total));
    pack(&padded, bins, cap).is_some()
}

/// Two bins of `cap` by an exact subset sum: side 0 for the subset that makes `cap`.
fn subset_sum(sizes: &[usize], cap: usize) -> Option<Vec<u8>> {
    let n = sizes.len();
    // reach[i][s]: the first i units can make s
    let mut reach = vec![vec![false; cap + 1]; n + 1];
    reach[0][0] = true;
    for i in 0..n {
        for s in 0..=cap {
            if reach[i][s] {
                reach[i + 1][s] = true;
                if s + sizes[i] <= cap {
                    reach[i + 1][s + sizes[i]] = true;
                }
            }
        }
    }
    if !reach[n][cap] {
        return None;
    }
    let mut out = vec![1u8; n];
    let mut s = cap;
    for i in (0..n).rev() {
        if !reach[i][s] {
            out[i] = 0;
            s -= sizes[i];
        }
    }
    Some(out)
}

/// The squads of a lobby of a squad format: units per squad, every squad full; None when
/// the units do not pack.
pub fn form_squads(ctx: &Ctx, units: &[u32]) -> Option<Vec<Vec<u32>>> {
    let ix = ctx.ix;
    let (bins, cap) = (ctx.model.teams, ctx.model.team_size);
    let size = |u: u32| ix.units[u as usize].size();
    let skill = |u: u32| ix.units[u as usize].skill;
    let sizes: Vec<usize> = units.iter().map(|&u| size(u)).collect();
    let placed = pack(&sizes, bins, cap)?;
    // keep the parties' bins, hand the solos out again by skill
    let mut squads: Vec<Vec<u32>> = vec![Vec::new(); bins];
    let mut solos: Vec<u32> = Vec::new();
    for (k, &u) in units.iter().enumerate() {
        if size(u) > 1 {
            squads[placed[k] as usize].push(u);
        } else {
            solos.push(u);
        }
    }
    solos.sort_by(|&a, &b| skill(b).total_cmp(&skill(a)).then(a.cmp(&b)));
    let players = |s: &Vec<u32>| s.iter().map(|&u| size(u)).sum::<usize>();
    let mean = |s: &Vec<u32>| {
        s.iter().map(|&u| skill(u) * size(u) as f64).sum::<f64>() / players(s).max(1) as f64
    };
    let mut open: Vec<usize> = (0..bins)
        .filter(|&b| (1..cap).contains(&players(&squads[b])))
        .collect();
    open.sort_by(|&a, &b| {
        mean(&squads[b])
            .total_cmp(&mean(&squads[a]))
            .then(a.cmp(&b))
    });
    let empty: Vec<usize> = (0..bins).filter(|&b| squads[b].is_empty()).collect();
    let mut next = solos.into_iter();
    for b in open.into_iter().chain(empty) {
        while players(&squads[b]) < cap {
            squads[b].push(next.next()?);
        }
    }
    if ctx.model.avoids.scope == AvoidScope::Team && !ix.meet.avoids.is_empty() {
        separate_avoids(ctx, &mut squads)?;
    }
    Some(squads)
}

/// Team-scope avoids in a squad format keep two players out of one squad (they may meet
/// in the lobby): a squad holding such a pair swaps one of its solos for the solo of
/// another squad nearest in skill that leaves both squads without one. None when no swap
/// does (the pair is in parties, or every swap makes another pair).
fn separate_avoids(ctx: &Ctx, squads: &mut [Vec<u32>]) -> Option<()> {
    let ix = ctx.ix;
    let solo = |u: u32| ix.units[u as usize].size() == 1;
    let skill = |u: u32| ix.units[u as usize].skill;
    for b in 0..squads.len() {
        if at_peace(ctx, &squads[b]) {
            continue;
        }
        let mut swaps: Vec<(f64, usize, usize, usize)> = Vec::new();
        for (i, &s) in squads[b].iter().enumerate().filter(|(_, u)| solo(**u)) {
            for (c, other) in squads.iter().enumerate().filter(|(c, _)| *c != b) {
                for (j, &t) in other.iter().enumerate().filter(|(_, u)| solo(**u)) {
                    swaps.push(((skill(s) - skill(t)).abs(), i, c, j));
                }
            }
        }
        swaps.sort_by(|x, y| x.0.total_cmp(&y.0));
        let found = swaps.into_iter().find(|&(_, i, c, j)| {
            let (mut mine, mut theirs) = (squads[b].clone(), squads[c].clone());
            std::mem::swap(&mut mine[i], &mut theirs[j]);
            at_peace(ctx, &mine) && at_peace(ctx, &theirs)
        })?;
        let (_, i, c, j) = found;
        let t = squads[c][j];
        squads[c][j] = squads[b][i];
        squads[b][i] = t;
    }
    Some(())
}

/// No two players of `squad` (units) avoid one another.
fn at_peace(ctx: &Ctx, squad: &[u32]) -> bool {
    let players = super::lobbies::players(ctx, squad);
    let m = &ctx.ix.meet;
    players
        .iter()
        .enumerate()
        .all(|(k, &a)| players[k + 1..].iter().all(|&b| !m.avoid(a, b)))
}

/// First come, first fit: each unit, in the order given, into the first squad with room
/// (the first-come baseline's squads). None when that leaves a squad unfilled.
pub fn first_fit_squads(ctx: &Ctx, units: &[u32]) -> Option<Vec<Vec<u32>>> {
    let ix = ctx.ix;
    let (bins, cap) = (ctx.model.teams, ctx.model.team_size);
    let mut squads: Vec<Vec<u32>> = vec![Vec::new(); bins];
    let mut room = vec![cap; bins];
    for &u in units {
        let s = ix.units[u as usize].size();
        let b = (0..bins).find(|&b| room[b] >= s)?;
        room[b] -= s;
        squads[b].push(u);
    }
    room.iter().all(|&r| r == 0).then_some(squads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_parties_into_full_squads() {
        // 3 + 1, 2 + 2, 2 + 1 + 1, 4
        let sizes = [3, 2, 2, 2, 4, 1, 1, 1];
        let bins = pack(&sizes, 4, 4).unwrap();
        let mut fill = [0; 4];
        for (k, &b) in bins.iter().enumerate() {
            fill[b as usize] += sizes[k];
        }
        assert_eq!(fill, [4; 4]);
        // three parties of three and three solos fill three squads; a fourth 3 cannot
        assert!(pack(&[3, 3, 3, 1, 1, 1], 3, 4).is_some());
        assert!(pack(&[3, 3, 3, 3], 3, 4).is_none());
        assert!(fits_partial(&[3, 3], 3, 4));
        assert!(!fits_partial(&[3, 3, 3, 2], 3, 4));
    }

    #[test]
    fn two_bins_fall_back_to_subset_sum() {
        // best fit decreasing puts 4 + 4 together and strands a 3: 4 + 3 + 3 twice
        let sizes = [4, 4, 3, 3, 3, 3];
        let sides = pack(&sizes, 2, 10).unwrap();
        let side0: usize = (0..6).filter(|&k| sides[k] == 0).map(|k| sizes[k]).sum();
        assert_eq!(side0, 10);
    }
}
