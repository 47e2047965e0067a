//! Team split enumeration (the Awesomenauts post's brute force, the AccelByte guide's "parties always on one
//! team").
//!
//! A match is a multiset of units (parties and solos); its "shape" is the list of unit
//! sizes, largest first. For every shape the queue can produce, all assignments of the
//! units to teams that give every team exactly `team_size` players are enumerated once,
//! up front, skipping splits that only relabel the teams (unit 0 is always in team 0,
//! and a new team number is only opened in order: restricted growth strings). A 3v3 of
//! solos has 10 splits, a 5v5 126, a 3x3 280. Scoring a match then only walks its
//! shape's table.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Shape keys are already well-spread u64s: one multiply instead of SipHash (the
/// lookup runs for every match scored).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type KeyMap = HashMap<u64, u32, BuildHasherDefault<KeyHasher>>;

/// All splits of one shape.
#[derive(Debug, Clone)]
pub struct SplitTable {
    /// Unit sizes, largest first.
    pub sizes: Vec<u8>,
    pub splits: usize,
    /// Team of each unit position, `unit_team[split * units + u]`.
    pub unit_team: Vec<u8>,
    /// Team of each player slot (units' members laid out in unit order),
    /// `slot_team[split * players + slot]`.
    pub slot_team: Vec<u8>,
    /// Pairs of slots on different teams (as `pair_index`), `cross[split * ncross + k]`.
    pub cross: Vec<u8>,
    pub ncross: usize,
    /// Max minus min premade bonds (players minus units) per team, per split (the
    /// premade difference; with equal teams the spread of units per team).
    pub party_spread: Vec<u8>,
    /// Every split has the same party spread (e.g. all solos).
    pub spread_constant: bool,
    /// Slots of team 0, `first_team[split * team_size + k]` (the two-team fast path).
    pub first_team: Vec<u8>,
    /// Pairs of slots both in team 0 (as `pair_index`), `first_pairs[split * nfirst + k]`:
    /// with two teams, the cross pairs' sum is the team-0 slots' row sums minus twice
    /// these (fewer terms than `cross`).
    pub first_pairs: Vec<u8>,
    pub nfirst: usize,
}

/// Index of slot pair (i, j), i < j, in a triangular array over `n` slots.
#[inline]
pub const fn pair_index(i: usize, j: usize, n: usize) -> usize {
    debug_assert!(i < j && j < n);
    i * n - i * (i + 1) / 2 + (j - i - 1)
}

/// The split tables of every shape of a queue, looked up by a packed shape key.
#[derive(Debug, Clone)]
pub struct SplitTables {
    pub teams: usize,
    /// The largest team.
    pub team_size: usize,
    /// Players per team, largest first (all `team_size` in a fixed format).
    pub caps: Vec<usize>,
    players: usize,
    tables: Vec<SplitTable>,
    by_key: KeyMap,
    all_solo: Option<u32>,
}

impl SplitTables {
    pub fn new(teams: usize, team_size: usize) -> Self {
        Self::for_format(&vec![team_size; teams])
    }

    /// The tables of a format of teams of these sizes (the AccelByte guide's flexible alliance
    /// rule: e.g. [5, 4]).
    pub fn for_format(caps: &[usize]) -> Self {
        let mut caps = caps.to_vec();
        caps.sort_unstable_by(|a, b| b.cmp(a));
        let (teams, team_size) = (caps.len(), caps[0]);
        let players: usize = caps.iter().sum();
        let mut shapes = Vec::new();
        partitions(players, team_size, &mut Vec::new(), &mut shapes);
        let mut tables = Vec::new();
        let mut by_key = KeyMap::default();
        for sizes in shapes {
            let t = enumerate_caps(&sizes, &caps);
            if t.splits == 0 {
                continue; // e.g. 2+2+2 in 3v3: no team can be exactly 3
            }
            by_key.insert(shape_key(&sizes, players), tables.len() as u32);
            tables.push(t);
        }
        let all_solo = by_key.get(&shape_key(&vec![1; players], players)).copied();
        SplitTables {
            teams,
            team_size,
            caps,
            players,
            tables,
            by_key,
            all_solo,
        }
    }

    /// The table of a shape (sizes largest first), None if no split exists.
    #[inline]
    pub fn lookup(&self, sizes: &[u8]) -> Option<&SplitTable> {
        self.lookup_index(sizes).map(|i| &self.tables[i as usize])
    }

    /// The index (for `get`) of a shape's table, None if no split exists.
    #[inline]
    pub fn lookup_index(&self, sizes: &[u8]) -> Option<u32> {
        let players = self.players;
        if sizes.len() == players {
            return self.all_solo;
        }
        self.by_key.get(&shape_key(sizes, players)).copied()
    }

    /// The table with index `i` (from `lookup_index`).
    #[inline]
    pub fn get(&self, i: u32) -> &SplitTable {
        &self.tables[i as usize]
    }

    /// Could these unit sizes still be completed (with more units) into a valid match?
    /// Checks that they pack into the teams without overflowing one.
    pub fn packable(&self, sizes: &[u8]) -> bool {
        let mut s: Vec<u8> = sizes.to_vec();
        s.sort_unstable_by(|a, b| b.cmp(a));
        let total: usize = s.iter().map(|&x| x as usize).sum();
        if total > self.players {
            return false;
        }
        let mut room: Vec<u8> = self.caps.iter().map(|&c| c as u8).collect();
        fn go(i: usize, s: &[u8], room: &mut [u8]) -> bool {
            if i == s.len() {
                return true;
            }
            for t in 0..room.len() {
                if room[t] >= s[i] && (t == 0 || room[t] != room[t - 1]) {
                    room[t] -= s[i];
                    let ok = go(i + 1, s, room);
                    room[t] += s[i];
                    if ok {
                        return true;
                    }
                }
            }
            false
        }
        go(0, &s, &mut room)
    }
}

/// Sizes are counted per size value; key = sum count[s] * (players + 1)^(s - 1).
fn shape_key(sizes: &[u8], players: usize) -> u64 {
    let base = players as u64 + 1;
    sizes.iter().map(|&s| base.pow(s as u32 - 1)).sum()
}

/// Integer partitions of n into parts <= max, parts non-increasing.
fn partitions(n: usize, max: usize, cur: &mut Vec<u8>, out: &mut Vec<Vec<u8>>) {
    if n == 0 {
        out.push(cur.clone());
        return;
    }
    for part in (1..=max.min(n)).rev() {
        cur.push(part as u8);
        partitions(n - part, part, cur, out);
        cur.pop();
    }
}

/// Every assignment of units to teams with exact team sizes, up to team relabeling.
pub fn enumerate(sizes: &[u8], teams: usize, team_size: usize) -> SplitTable {
    enumerate_caps(sizes, &vec![team_size; teams])
}

/// Every assignment of units to teams of exactly `caps` players (largest first), up to
/// relabeling teams of equal size: within a run of equal caps a team is only opened
/// after the one before it (restricted growth strings per run; with all caps equal,
/// the same splits in the same order as before flexible formats).
pub fn enumerate_caps(sizes: &[u8], caps: &[usize]) -> SplitTable {
    debug_assert!(caps.windows(2).all(|w| w[0] >= w[1]));
    let teams = caps.len();
    let units = sizes.len();
    let players: usize = sizes.iter().map(|&s| s as usize).sum();
    let mut assign = vec![0u8; units];
    let mut fill = vec![0usize; teams];
    let mut opened = vec![false; teams];
    #[allow(clippy::too_many_arguments)]
    fn go(
        u: usize,
        opened: &mut [bool],
        sizes: &[u8],
        caps: &[usize],
        assign: &mut [u8],
        fill: &mut [usize],
        out: &mut (Vec<u8>, Vec<u8>),
    ) {
        if u == sizes.len() {
            if fill.iter().zip(caps).all(|(&f, &c)| f == c) {
                out.0.extend_from_slice(assign);
                for (k, &s) in sizes.iter().enumerate() {
                    for _ in 0..s {
                        out.1.push(assign[k]);
                    }
                }
            }
            return;
        }
        for t in 0..caps.len() {
            // a team of the same size as the one before it opens only after it
            if t > 0 && caps[t - 1] == caps[t] && !opened[t - 1] {
                continue;
            }
            if fill[t] + sizes[u] as usize <= caps[t] {
                fill[t] += sizes[u] as usize;
                assign[u] = t as u8;
                let was = opened[t];
                opened[t] = true;
                go(u + 1, opened, sizes, caps, assign, fill, out);
                opened[t] = was;
                fill[t] -= sizes[u] as usize;
            }
        }
    }
    let mut out = (Vec::new(), Vec::new());
    go(
        0,
        &mut opened,
        sizes,
        caps,
        &mut assign,
        &mut fill,
        &mut out,
    );
    let (unit_team, slot_team) = out;
    let splits = unit_team.len().checked_div(units).unwrap_or(0);
    debug_assert_eq!(slot_team.len(), splits * players);
    let mut cross = Vec::new();
    let mut party_spread = Vec::new();
    let mut ncross = 0;
    let mut first_team = Vec::new();
    let mut first_pairs = Vec::new();
    let mut nfirst = 0;
    for s in 0..splits {
        let row = &slot_team[s * players..(s + 1) * players];
        first_team.extend((0..players).filter(|&i| row[i] == 0).map(|i| i as u8));
        let before = first_pairs.len();
        for i in 0..players {
            for j in i + 1..players {
                if row[i] == 0 && row[j] == 0 {
                    first_pairs.push(pair_index(i, j, players) as u8);
                }
            }
        }
        nfirst = first_pairs.len() - before;
        let before = cross.len();
        for i in 0..players {
            for j in i + 1..players {
                if row[i] != row[j] {
                    cross.push(pair_index(i, j, players) as u8);
                }
            }
        }
        ncross = cross.len() - before;
        // bonds = players - units per team (equal teams: the spread of units per team)
        let mut bonds: Vec<u8> = caps.iter().map(|&c| c as u8).collect();
        for &t in &unit_team[s * units..(s + 1) * units] {
            bonds[t as usize] -= 1;
        }
        party_spread.push(bonds.iter().max().unwrap() - bonds.iter().min().unwrap());
    }
    SplitTable {
        sizes: sizes.to_vec(),
        splits,
        unit_team,
        slot_team,
        cross,
        ncross,
        spread_constant: party_spread.windows(2).all(|w| w[0] == w[1]),
        party_spread,
        first_team,
        first_pairs,
        nfirst,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binom(n: u64, k: u64) -> u64 {
        (1..=k).fold(1, |acc, i| acc * (n - k + i) / i)
    }

    #[test]
    fn split_counts_skip_symmetric_splits() {
        assert_eq!(enumerate(&[1; 6], 2, 3).splits, 10);
        assert_eq!(enumerate(&[1; 10], 2, 5).splits as u64, binom(9, 4));
        assert_eq!(enumerate(&[1; 9], 3, 3).splits, 280);
        assert_eq!(enumerate(&[1; 2], 2, 1).splits, 1);
        // a premade of 3 vs 3 solos: one split
        assert_eq!(enumerate(&[3, 1, 1, 1], 2, 3).splits, 1);
        // 2 + 1 + 1 + 1 + 1: the pair takes one of 4 solos
        assert_eq!(enumerate(&[2, 1, 1, 1, 1], 2, 3).splits, 4);
        assert_eq!(enumerate(&[2, 2, 2], 2, 3).splits, 0);
    }

    #[test]
    fn every_split_has_exact_team_sizes() {
        let t = enumerate(&[2, 2, 1, 1, 1, 1, 1, 1], 2, 5);
        for s in 0..t.splits {
            let row = &t.slot_team[s * 10..(s + 1) * 10];
            assert_eq!(row.iter().filter(|&&x| x == 0).count(), 5);
            assert_eq!(row[0], 0);
            // party members share a team
            assert_eq!(row[0], row[1]);
            assert_eq!(row[2], row[3]);
        }
    }

    #[test]
    fn unequal_teams_split_every_way_once() {
        // 5v4 of solos: choose the 4 (no relabeling: the teams differ in size)
        let t = enumerate_caps(&[1; 9], &[5, 4]);
        assert_eq!(t.splits as u64, binom(9, 4));
        assert_eq!(t.splits as u64, crate::model::format_splits(&[5, 4]));
        for s in 0..t.splits {
            let row = &t.slot_team[s * 9..(s + 1) * 9];
            assert_eq!(row.iter().filter(|&&x| x == 0).count(), 5);
            assert_eq!(row.iter().filter(|&&x| x == 1).count(), 4);
        }
        let mut seen = std::collections::HashSet::new();
        for s in 0..t.splits {
            assert!(seen.insert(t.slot_team[s * 9..(s + 1) * 9].to_vec()));
        }
        // 3, 3, 2: the two teams of 3 are interchangeable
        let t = enumerate_caps(&[1; 8], &[3, 3, 2]);
        assert_eq!(t.splits as u64, 8 * 7 / 2 * binom(6, 3) / 2);
        assert_eq!(t.splits as u64, crate::model::format_splits(&[3, 3, 2]));
        // a pair and three solos in 3v2: the pair with one of three solos, or alone
        let t = enumerate_caps(&[2, 1, 1, 1], &[3, 2]);
        assert_eq!(t.splits, 3 + 1);
        // premade bonds: 5 solos vs 4 solos is no premade difference
        let t = enumerate_caps(&[1; 9], &[5, 4]);
        assert!(t.party_spread.iter().all(|&d| d == 0));
        let tables = SplitTables::for_format(&[4, 5]);
        assert_eq!(tables.caps, [5, 4]);
        assert!(tables.lookup(&[5, 4]).is_some());
        assert!(tables.lookup(&[3, 3, 3]).is_none());
        assert!(tables.packable(&[5, 3]) && !tables.packable(&[3, 3, 3]));
    }

    #[test]
    fn tables_cover_every_valid_shape() {
        let tables = SplitTables::new(2, 3);
        assert!(tables.lookup(&[1; 6]).is_some());
        assert!(tables.lookup(&[3, 3]).is_some());
        assert!(tables.lookup(&[2, 2, 1, 1]).is_some());
        assert!(tables.lookup(&[2, 2, 2]).is_none());
        assert!(tables.packable(&[2, 2, 1]));
        assert!(!tables.packable(&[2, 2, 2]));
        assert!(!tables.packable(&[3, 2, 2]));
    }
}
