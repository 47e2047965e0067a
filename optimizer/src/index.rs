//! Validation, and the solver's indexed form of a pool.
//!
//! Malformed input is a `PoolError` naming the player and field: NaN, infinite or
//! negative numbers, duplicate or empty ids, roles the queue does not define, a side
//! outside [0, 1], party members that disagree on `enqueued_at` (a party enqueues
//! together). Well-formed players the queue can never use are `Rejection`s: a party
//! larger than `team_size`, or (strict roles) a party whose members cannot take distinct
//! roles on one team.
//!
//! The indexed form numbers the usable players 0..n and their parties ("units", solos
//! are units of one) 0..u, and keeps compact per-player arrays. There is no n x n
//! matrix: peer ping is looked up in a short sorted list of explicit pings, otherwise
//! estimated from region latencies on demand (`ping_ms`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};

use super::error::PoolError;
use super::maps::MapChoices;
use super::model::{QueueModel, RoleMode};
use super::pool::Pool;
use super::round::Rejection;

/// A party (or a solo player): always placed whole on one team (AccelByte's rebalance guide).
#[derive(Debug, Clone)]
pub struct Unit {
    pub members: Vec<u32>,
    /// Mean (capped) skill of the members, used by the sorted constructions.
    pub skill: f64,
}

impl Unit {
    pub fn size(&self) -> usize {
        self.members.len()
    }
}

/// The per-player values every match evaluation reads.
#[derive(Debug, Clone, Copy)]
pub struct Hot {
    /// Capped skill.
    pub skill: f64,
    /// Minutes waited, capped at `max_wait`.
    pub wait_capped: f64,
    /// 1 if past `max_wait`.
    pub overdue: u32,
}

/// Sentinel: no explicit peer ping / latency.
pub const MISSING: f32 = f32::NAN;

#[derive(Debug, Clone)]
pub struct IndexedPool {
    pub ids: Vec<String>,
    /// Skill after capping (`skill.cap_min` / `skill.cap_max`); every skill factor uses it.
    pub skill: Vec<f64>,
    pub sigma: Vec<f64>,
    /// Minutes waited up to the round's `now` (>= 0).
    pub wait_minutes: Vec<f64>,
    pub overdue: Vec<bool>,
    /// Side preference in [0, 1], NaN when the player has none.
    pub side: Vec<f64>,
    /// Bit r set: the player accepts role r. All bits when the player named no role.
    pub roles: Vec<u32>,
    pub unit_of: Vec<u32>,
    pub units: Vec<Unit>,
    /// Size of each unit (a compact copy of `units[u].size()` for the hot path).
    pub unit_size: Vec<u8>,
    /// Members of every unit, flat: unit u's are `unit_members[unit_start[u]..unit_start[u + 1]]`.
    pub unit_members: Vec<u32>,
    pub unit_start: Vec<u32>,
    /// Per-player data the scorer reads for every match, packed together.
    pub hot: Vec<Hot>,
    /// Units by skill (ties by index), and each unit's position in that order.
    pub by_skill: Vec<u32>,
    pub skill_rank: Vec<u32>,
    /// Region names (sorted) and latencies, player-major: `lat[p * regions + r]`.
    pub regions: Vec<String>,
    pub lat: Vec<f32>,
    /// Explicit peer pings, sorted by the other player (both directions merged: mean).
    pub peer: Vec<Vec<(u32, f32)>>,
    /// Opponent-variation history: (other player, cost if teammates now, cost if
    /// opponents now), sorted by other player.
    pub history: Vec<Vec<(u32, f32, f32)>>,
    pub rejected: Vec<Rejection>,
    /// Index (into the input's player list) of each indexed player.
    pub source: Vec<usize>,
    /// Who may meet whom: the queue's filters and the players' avoids, per player.
    pub meet: Meet,
    /// Each player's vetoed, preferred and recent maps (queues with maps).
    pub maps: MapChoices,
}

/// The hard meeting rules of a pool, precomputed per player so that a match is checked
/// in a few compares (`Scorer::rules`), and nothing at all when no rule applies.
#[derive(Debug, Clone, Default)]
pub struct Meet {
    /// Per player: the number of their `filters.same` values (players meet only within
    /// one number); empty when every player shares them.
    pub same_key: Vec<u32>,
    /// Per key: what the key stands for (`build = 1.4.2`), for left-over reasons.
    pub same_names: Vec<String>,
    /// Per player: the number of their platform (`filters.crossplay`); empty when no
    /// player opted out of crossplay.
    pub platform: Vec<u32>,
    /// Per player: opted out of crossplay (`crossplay = "off"`).
    pub crossplay_off: Vec<bool>,
    /// Per platform number: its name, for left-over reasons.
    pub platform_names: Vec<String>,
    /// Per player: the players they must not meet, either direction, sorted; empty
    /// when nobody in the pool avoids anyone.
    pub avoids: Vec<Vec<u32>>,
    /// Per player: bit (other % 64) set for each avoided player (a cheap filter).
    pub avoid_mask: Vec<u64>,
    /// Per player: their languages as bits (`filters.language`); empty without the filter.
    pub languages: Vec<u64>,
}

impl Meet {
    /// Some rule may keep two players of this pool apart.
    pub fn any(&self) -> bool {
        !self.same_key.is_empty() || !self.platform.is_empty() || !self.avoids.is_empty()
    }

    /// Whether players a and b avoid one another.
    #[inline]
    pub fn avoid(&self, a: u32, b: u32) -> bool {
        !self.avoids.is_empty()
            && self.avoid_mask[a as usize] & (1 << (b % 64)) != 0
            && self.avoids[a as usize].binary_search(&b).is_ok()
    }
}

/// The value of a `same` attribute key: the values of every named attribute, a missing
/// one as None (a player without it meets only players without it).
pub fn same_values(p: &crate::pool::Player, names: &[String]) -> Vec<Option<Vec<String>>> {
    names
        .iter()
        .map(|n| p.attributes.get(n).map(|a| a.values().to_vec()))
        .collect()
}

/// `build = 1.4.2, map = x` for a key's values.
pub fn describe_same(names: &[String], values: &[Option<Vec<String>>]) -> String {
    names
        .iter()
        .zip(values)
        .map(|(n, v)| match v {
            None => format!("{n} unset"),
            Some(v) if v.len() == 1 => format!("{n} = {}", v[0]),
            Some(v) => format!("{n} = [{}]", v.join(", ")),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn player_err(id: &str, field: &'static str, problem: impl Into<String>) -> PoolError {
    PoolError::Player {
        id: id.to_string(),
        field,
        problem: problem.into(),
    }
}

fn check_number(id: &str, field: &'static str, v: f64) -> Result<(), PoolError> {
    if v.is_nan() {
        Err(player_err(id, field, "is NaN"))
    } else if v.is_infinite() {
        Err(player_err(id, field, "is infinite"))
    } else if v < 0.0 {
        Err(player_err(id, field, format!("is negative ({v})")))
    } else {
        Ok(())
    }
}

impl IndexedPool {
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Validate `pool` against `model` and build the indexed form.
    pub fn build(pool: &Pool, model: &QueueModel) -> Result<IndexedPool, PoolError> {
        model.validate()?;
        let roles = RoleIndex::new(model);
        check_players(pool, model, &roles)?;
        let parties = group_parties(pool);
        check_party_clocks(pool, &parties)?;
        let (rejected_players, rejected) = reject_unusable_parties(pool, model, &roles, &parties);

        let mut ix = IndexedPool::empty(region_names(pool), rejected);
        let index_of = ix.index_players(pool, model, &roles, &rejected_players);
        ix.flatten_units(model);
        ix.order_units_by_skill();
        ix.peer = merge_peer_pings(pool, &ix.source, &index_of);
        ix.history = build_history(pool, model, &index_of, ix.ids.len())?;
        ix.meet = build_meet(pool, model, &ix.source, &index_of);
        ix.maps = MapChoices::build(pool, &model.maps, &ix.source);
        Ok(ix)
    }

    /// No players yet: the regions and rejections known before indexing.
    fn empty(regions: Vec<String>, rejected: Vec<Rejection>) -> IndexedPool {
        IndexedPool {
            ids: Vec::new(),
            skill: Vec::new(),
            sigma: Vec::new(),
            wait_minutes: Vec::new(),
            overdue: Vec::new(),
            side: Vec::new(),
            roles: Vec::new(),
            unit_of: Vec::new(),
            units: Vec::new(),
            unit_size: Vec::new(),
            unit_members: Vec::new(),
            unit_start: Vec::new(),
            hot: Vec::new(),
            by_skill: Vec::new(),
            skill_rank: Vec::new(),
            regions,
            lat: Vec::new(),
            peer: Vec::new(),
            history: Vec::new(),
            rejected,
            source: Vec::new(),
            meet: Meet::default(),
            maps: MapChoices::default(),
        }
    }

    /// Number the usable players in pool order, fill their per-player arrays and gather
    /// them into units (a party, or a solo); returns each indexed player's number by id.
    fn index_players<'p>(
        &mut self,
        pool: &'p Pool,
        model: &QueueModel,
        roles: &RoleIndex,
        rejected_players: &[bool],
    ) -> HashMap<&'p str, u32> {
        // The round's clock.
        let now: Option<DateTime<Utc>> = pool
            .now
            .or_else(|| pool.players.iter().filter_map(|p| p.enqueued_at).max());
        let max_wait_min = model.max_wait.as_secs_f64() / 60.0;
        let region_index: HashMap<String, usize> = self
            .regions
            .iter()
            .enumerate()
            .map(|(i, r)| (r.clone(), i))
            .collect();
        let nreg = self.regions.len();
        let mut index_of: HashMap<&str, u32> = HashMap::new();
        let mut party_unit: HashMap<&str, u32> = HashMap::new();
        for (i, p) in pool.players.iter().enumerate() {
            if rejected_players[i] {
                continue;
            }
            let k = self.ids.len() as u32;
            index_of.insert(p.id.as_str(), k);
            self.ids.push(p.id.clone());
            self.source.push(i);
            let mut s = p.skill;
            if let Some(lo) = model.skill.cap_min {
                s = s.max(lo);
            }
            if let Some(hi) = model.skill.cap_max {
                s = s.min(hi);
            }
            self.skill.push(s);
            self.sigma.push(
                p.skill_sigma
                    .unwrap_or(model.predicted_fairness.default_sigma),
            );
            let wait = match (now, p.enqueued_at) {
                (Some(now), Some(at)) => ((now - at).num_milliseconds() as f64 / 60_000.0).max(0.0),
                _ => 0.0,
            };
            self.wait_minutes.push(wait);
            self.overdue.push(wait > max_wait_min);
            self.side.push(p.side.unwrap_or(f64::NAN));
            self.roles.push(roles.mask(&p.roles));
            let mut row = vec![MISSING; nreg];
            for (region, &ms) in &p.latencies {
                row[region_index[region.as_str()]] = ms as f32;
            }
            self.lat.extend(row);
            let unit = match &p.party {
                Some(party) => *party_unit
                    .entry(party.as_str())
                    .or_insert_with(|| self.add_unit()),
                None => self.add_unit(),
            };
            self.units[unit as usize].members.push(k);
            self.unit_of.push(unit);
        }
        index_of
    }

    fn add_unit(&mut self) -> u32 {
        self.units.push(Unit {
            members: Vec::new(),
            skill: 0.0,
        });
        (self.units.len() - 1) as u32
    }

    /// The compact copies the hot path reads: unit sizes, flat unit members, the
    /// per-player `Hot` values; and each unit's mean skill.
    fn flatten_units(&mut self, model: &QueueModel) {
        let max_wait_min = model.max_wait.as_secs_f64() / 60.0;
        self.unit_size = self.units.iter().map(|u| u.size() as u8).collect();
        self.unit_start.push(0);
        for u in &self.units {
            self.unit_members.extend(&u.members);
            self.unit_start.push(self.unit_members.len() as u32);
        }
        self.hot = (0..self.ids.len())
            .map(|p| Hot {
                skill: self.skill[p],
                wait_capped: self.wait_minutes[p].min(max_wait_min),
                overdue: self.overdue[p] as u32,
            })
            .collect();
        for u in &mut self.units {
            u.skill = u
                .members
                .iter()
                .map(|&m| self.skill[m as usize])
                .sum::<f64>()
                / u.members.len() as f64;
        }
    }

    /// Units by mean skill (ties by index), and each unit's rank in that order.
    fn order_units_by_skill(&mut self) {
        let units = &self.units;
        self.by_skill = (0..units.len() as u32).collect();
        self.by_skill.sort_by(|&a, &b| {
            units[a as usize]
                .skill
                .total_cmp(&units[b as usize].skill)
                .then(a.cmp(&b))
        });
        self.skill_rank = vec![0; units.len()];
        for (r, &u) in self.by_skill.iter().enumerate() {
            self.skill_rank[u as usize] = r as u32;
        }
    }

    /// Members of unit u.
    #[inline]
    pub fn members_of(&self, u: u32) -> &[u32] {
        let (a, b) = (self.unit_start[u as usize], self.unit_start[u as usize + 1]);
        &self.unit_members[a as usize..b as usize]
    }

    /// Latency of player p to region r, if known.
    #[inline]
    pub fn latency(&self, p: u32, r: usize) -> Option<f32> {
        let v = self.lat[p as usize * self.regions.len() + r];
        (!v.is_nan()).then_some(v)
    }

    /// Ping between two players in ms: the explicit peer ping when given, otherwise the
    /// relay estimate min over shared regions r of lat(a, r) + lat(b, r) +
    /// `relay_overhead_ms` (a route through the best shared relay/datacenter), otherwise
    /// `unknown_ms`.
    pub fn ping_ms(&self, a: u32, b: u32, relay_overhead_ms: f64, unknown_ms: f64) -> f64 {
        let list = &self.peer[a as usize];
        if !list.is_empty()
            && let Ok(i) = list.binary_search_by_key(&b, |e| e.0)
        {
            return list[i].1 as f64;
        }
        let nreg = self.regions.len();
        let ra = &self.lat[a as usize * nreg..(a as usize + 1) * nreg];
        let rb = &self.lat[b as usize * nreg..(b as usize + 1) * nreg];
        let mut best = f32::INFINITY;
        for (x, y) in ra.iter().zip(rb) {
            // NaN (missing) never wins a comparison
            let s = x + y;
            if s < best {
                best = s;
            }
        }
        if best.is_finite() {
            best as f64 + relay_overhead_ms
        } else {
            unknown_ms
        }
    }
}

/// Per player: (other player, cost if teammates now, cost if opponents now).
type HistoryLists = Vec<Vec<(u32, f32, f32)>>;

/// The queue's roles by name, and the mask of all of them.
struct RoleIndex<'m> {
    index: HashMap<&'m str, usize>,
    all: u32,
}

impl<'m> RoleIndex<'m> {
    fn new(model: &'m QueueModel) -> Self {
        RoleIndex {
            index: model
                .roles
                .iter()
                .enumerate()
                .map(|(i, r)| (r.as_str(), i))
                .collect(),
            all: if model.roles.is_empty() {
                0
            } else {
                (1u32 << model.roles.len()) - 1
            },
        }
    }

    fn knows(&self, role: &str) -> bool {
        self.index.contains_key(role)
    }

    /// Bit r set: the player accepts role r; all bits when they named none.
    fn mask(&self, roles: &[String]) -> u32 {
        if roles.is_empty() {
            self.all
        } else {
            roles
                .iter()
                .fold(0, |m, r| m | (1 << self.index[r.as_str()]))
        }
    }
}

/// Field checks, player by player: the first malformed field is the error.
fn check_players(pool: &Pool, model: &QueueModel, roles: &RoleIndex) -> Result<(), PoolError> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (index, p) in pool.players.iter().enumerate() {
        if p.id.is_empty() {
            return Err(PoolError::PlayerIndex {
                index,
                problem: "is empty".into(),
            });
        }
        if seen.insert(p.id.as_str(), index).is_some() {
            return Err(player_err(&p.id, "id", "duplicate player id"));
        }
        check_number(&p.id, "skill", p.skill)?;
        if let Some(s) = p.skill_sigma {
            check_number(&p.id, "skill_sigma", s)?;
        }
        check_pings(&p.id, "latencies", &p.latencies)?;
        check_pings(&p.id, "peer_pings", &p.peer_pings)?;
        for r in &p.roles {
            if !roles.knows(r.as_str()) {
                let known = if model.roles.is_empty() {
                    "this queue has no roles".to_string()
                } else {
                    format!("known roles: {}", model.roles.join(", "))
                };
                return Err(player_err(
                    &p.id,
                    "roles",
                    format!("unknown role {r:?} ({known})"),
                ));
            }
        }
        if let Some(s) = p.side
            && !(0.0..=1.0).contains(&s)
        {
            return Err(player_err(&p.id, "side", format!("{s} is not in [0, 1]")));
        }
        if let Some(party) = &p.party
            && party.is_empty()
        {
            return Err(player_err(&p.id, "party", "empty party id"));
        }
    }
    Ok(())
}

/// Pings in ms, by region or by player: each a number >= 0.
fn check_pings(
    id: &str,
    field: &'static str,
    pings: &BTreeMap<String, f64>,
) -> Result<(), PoolError> {
    for (to, &ms) in pings {
        check_number(id, field, ms)
            .map_err(|_| player_err(id, field, format!("{to}: {ms} is not a ping in ms >= 0")))?;
    }
    Ok(())
}

/// The members of every party (indices into the pool), by party id.
fn group_parties(pool: &Pool) -> BTreeMap<&str, Vec<usize>> {
    let mut parties: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, p) in pool.players.iter().enumerate() {
        if let Some(party) = &p.party {
            parties.entry(party.as_str()).or_default().push(i);
        }
    }
    parties
}

/// A party enqueues together: its members must agree on `enqueued_at`.
fn check_party_clocks(pool: &Pool, parties: &BTreeMap<&str, Vec<usize>>) -> Result<(), PoolError> {
    for (party, members) in parties {
        let first = &pool.players[members[0]];
        for &m in &members[1..] {
            let p = &pool.players[m];
            if p.enqueued_at != first.enqueued_at {
                return Err(player_err(
                    &p.id,
                    "enqueued_at",
                    format!(
                        "party {party:?} is inconsistent: {:?} differs from member {:?} ({:?})",
                        p.enqueued_at, first.id, first.enqueued_at
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The parties this queue can never use (solos always fit): per pool player whether
/// they are rejected, and the rejections.
fn reject_unusable_parties(
    pool: &Pool,
    model: &QueueModel,
    roles: &RoleIndex,
    parties: &BTreeMap<&str, Vec<usize>>,
) -> (Vec<bool>, Vec<Rejection>) {
    let mut rejected_players = vec![false; pool.players.len()];
    let mut rejected = Vec::new();
    for (party, members) in parties {
        if let Some(reason) = unusable_party(pool, model, roles, party, members) {
            for &m in members {
                rejected_players[m] = true;
                rejected.push(Rejection {
                    id: pool.players[m].id.clone(),
                    reason: reason.clone(),
                });
            }
        }
    }
    (rejected_players, rejected)
}

/// Why the queue cannot use this party, if it cannot: too large for a team, members
/// with different `same` values, or (strict roles) no distinct roles for them.
fn unusable_party(
    pool: &Pool,
    model: &QueueModel,
    roles: &RoleIndex,
    party: &str,
    members: &[usize],
) -> Option<String> {
    if members.len() > model.team_size {
        return Some(format!(
            "party {party:?} has {} players, more than the team size {}",
            members.len(),
            model.team_size
        ));
    }
    let same = &model.filters.same;
    let first = &pool.players[members[0]];
    if !same.is_empty()
        && let Some(&m) = members[1..]
            .iter()
            .find(|&&m| same_values(&pool.players[m], same) != same_values(first, same))
    {
        return Some(format!(
            "party {party:?} mixes {} (member {}) with {} (member {}): a match needs one value",
            describe_same(same, &same_values(&pool.players[m], same)),
            pool.players[m].id,
            describe_same(same, &same_values(first, same)),
            first.id,
        ));
    }
    if !model.roles.is_empty() && model.role_mode == RoleMode::Strict {
        let masks: Vec<u32> = members
            .iter()
            .map(|&m| roles.mask(&pool.players[m].roles))
            .collect();
        if !party_fits_roles(&masks, model.roles.len(), model.team_size) {
            return Some(format!(
                "party {party:?} cannot take distinct roles on one team (roles: {})",
                model.roles.join(", ")
            ));
        }
    }
    None
}

/// Every region any player has a latency to, sorted.
fn region_names(pool: &Pool) -> Vec<String> {
    pool.players
        .iter()
        .flat_map(|p| p.latencies.keys().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Explicit peer pings, symmetric: the mean of both directions when both are given;
/// per indexed player, sorted by the other player.
fn merge_peer_pings(
    pool: &Pool,
    source: &[usize],
    index_of: &HashMap<&str, u32>,
) -> Vec<Vec<(u32, f32)>> {
    let mut peer: Vec<BTreeMap<u32, (f64, u32)>> = vec![BTreeMap::new(); source.len()];
    for (k, &src) in source.iter().enumerate() {
        for (other, &ms) in &pool.players[src].peer_pings {
            let Some(&o) = index_of.get(other.as_str()) else {
                continue; // not in this pool (or rejected): irrelevant
            };
            if o as usize == k {
                continue;
            }
            for (a, b) in [(k as u32, o), (o, k as u32)] {
                let e = peer[a as usize].entry(b).or_insert((0.0, 0));
                e.0 += ms;
                e.1 += 1;
            }
        }
    }
    peer.into_iter()
        .map(|m| {
            m.into_iter()
                .map(|(o, (sum, c))| (o, (sum / c as f64) as f32))
                .collect()
        })
        .collect()
}

/// Can these players take distinct roles on one team (the rest of the slots being flex)?
fn party_fits_roles(masks: &[u32], nroles: usize, team_size: usize) -> bool {
    // players beyond the role slots can take flex slots; assign greedily by search
    let flex = team_size - nroles;
    fn go(i: usize, masks: &[u32], used: u32, flex_left: usize) -> bool {
        if i == masks.len() {
            return true;
        }
        if flex_left > 0 && go(i + 1, masks, used, flex_left - 1) {
            return true;
        }
        let mut free = masks[i] & !used;
        while free != 0 {
            let bit = free & free.wrapping_neg();
            if go(i + 1, masks, used | bit, flex_left) {
                return true;
            }
            free &= !bit;
        }
        false
    }
    go(0, masks, 0, flex)
}

/// Per player, the pairs met in their `depth` most recent past matches, weighted by
/// decay^k (k = 0 for the newest). A pair met several times keeps its largest weight.
/// History costs (in [0, 1]) are rounded to multiples of 2^-20, exact in f32: sums of
/// them are then exact in f64 in any order, so the search's incremental scoring and
/// the from-scratch oracle agree to the bit.
fn quantize_cost(c: f64) -> f32 {
    const UNIT: f64 = (1u32 << 20) as f64;
    ((c * UNIT).round() / UNIT) as f32
}

/// The per-player meeting rules (`Meet`) of the indexed players.
fn build_meet(
    pool: &Pool,
    model: &QueueModel,
    source: &[usize],
    index_of: &HashMap<&str, u32>,
) -> Meet {
    let f = &model.filters;
    let mut meet = Meet::default();
    let players = || source.iter().map(|&i| &pool.players[i]);
    if !f.same.is_empty() {
        let mut keys: HashMap<Vec<Option<Vec<String>>>, u32> = HashMap::new();
        let mut names = Vec::new();
        let key: Vec<u32> = players()
            .map(|p| {
                let v = same_values(p, &f.same);
                let next = keys.len() as u32;
                *keys.entry(v.clone()).or_insert_with(|| {
                    names.push(describe_same(&f.same, &v));
                    next
                })
            })
            .collect();
        if keys.len() > 1 {
            meet.same_key = key;
            meet.same_names = names;
        }
    }
    if let Some(attr) = &f.crossplay {
        let off: Vec<bool> = players()
            .map(|p| {
                p.attributes
                    .get("crossplay")
                    .is_some_and(|a| a.values() == ["off"])
            })
            .collect();
        if off.iter().any(|&o| o) {
            let mut ids: HashMap<String, u32> = HashMap::new();
            let mut names = Vec::new();
            meet.platform = players()
                .map(|p| {
                    let v = p
                        .attributes
                        .get(attr)
                        .map(|a| a.values().join(","))
                        .unwrap_or_default();
                    let next = ids.len() as u32;
                    *ids.entry(v.clone()).or_insert_with(|| {
                        names.push(if v.is_empty() {
                            format!("{attr} unset")
                        } else {
                            v
                        });
                        next
                    })
                })
                .collect();
            meet.platform_names = names;
            meet.crossplay_off = off;
        }
    }
    let n = source.len();
    let mut avoids: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut any = false;
    for (k, p) in players().enumerate() {
        // the first ones listed are the newest (the snapshot's order)
        for other in p.avoids.iter().take(model.avoids.max_per_player) {
            let Some(&o) = index_of.get(other.as_str()) else {
                continue; // not in this pool: nothing to keep apart
            };
            if o as usize == k {
                continue;
            }
            avoids[k].push(o);
            avoids[o as usize].push(k as u32);
            any = true;
        }
    }
    if any {
        for list in &mut avoids {
            list.sort_unstable();
            list.dedup();
        }
        meet.avoid_mask = avoids
            .iter()
            .map(|l| l.iter().fold(0u64, |m, &o| m | 1 << (o % 64)))
            .collect();
        meet.avoids = avoids;
    }
    if let Some(attr) = &f.language {
        let mut ids: HashMap<&str, u32> = HashMap::new();
        meet.languages = players()
            .map(|p| {
                p.attributes.get(attr).map_or(0, |a| {
                    a.values().iter().fold(0u64, |m, l| {
                        let next = ids.len() as u32;
                        // beyond 64 languages two may share a bit: a rare, soft error
                        m | 1 << (*ids.entry(l.as_str()).or_insert(next) % 64)
                    })
                })
            })
            .collect();
    }
    meet
}

fn build_history(
    pool: &Pool,
    model: &QueueModel,
    index_of: &HashMap<&str, u32>,
    n: usize,
) -> Result<HistoryLists, PoolError> {
    let v = &model.opponent_variation;
    // validate and resolve history entries; players not in the pool are irrelevant
    let mut order: Vec<usize> = (0..pool.history.len()).collect();
    for (index, m) in pool.history.iter().enumerate() {
        let mut seen = BTreeSet::new();
        for team in &m.teams {
            for id in team {
                if !seen.insert(id.as_str()) {
                    return Err(PoolError::History {
                        index,
                        problem: format!("player {id:?} appears twice"),
                    });
                }
            }
        }
    }
    order.sort_by(|&a, &b| pool.history[b].at.cmp(&pool.history[a].at).then(a.cmp(&b)));
    let mut taken = vec![0usize; n];
    // (a, b) -> (was teammates weight, was opponents weight)
    let mut pairs: Vec<BTreeMap<u32, (f64, f64)>> = vec![BTreeMap::new(); n];
    for &h in &order {
        let m = &pool.history[h];
        let members: Vec<(u32, usize)> = m
            .teams
            .iter()
            .enumerate()
            .flat_map(|(t, team)| {
                team.iter()
                    .filter_map(move |id| index_of.get(id.as_str()).map(|&k| (k, t)))
            })
            .collect();
        for &(a, ta) in &members {
            let rank = taken[a as usize];
            if rank >= v.depth {
                continue;
            }
            let w = v.decay.powi(rank as i32);
            for &(b, tb) in &members {
                if a == b {
                    continue;
                }
                let e = pairs[a as usize].entry(b).or_insert((0.0, 0.0));
                if ta == tb {
                    e.0 = e.0.max(w);
                } else {
                    e.1 = e.1.max(w);
                }
            }
        }
        for &(a, _) in &members {
            taken[a as usize] += 1;
        }
    }
    // symmetric: the pair's weight is the max of both players' views
    let mut out: Vec<BTreeMap<u32, (f64, f64)>> = pairs.clone();
    for (a, m) in pairs.iter().enumerate() {
        for (&b, &(tm, op)) in m {
            let e = out[b as usize].entry(a as u32).or_insert((0.0, 0.0));
            e.0 = e.0.max(tm);
            e.1 = e.1.max(op);
        }
    }
    let (same, swapped) = (v.same_relation_cost, v.swapped_relation_cost);
    Ok(out
        .into_iter()
        .map(|m| {
            m.into_iter()
                .map(|(b, (tm, op))| {
                    // cost if teammates now: same relation for past teammates, swapped for
                    // past opponents; the worse of the two when they met both ways
                    let if_team = (tm * same).max(op * swapped);
                    let if_opp = (op * same).max(tm * swapped);
                    (b, quantize_cost(if_team), quantize_cost(if_opp))
                })
                .collect()
        })
        .collect())
}
