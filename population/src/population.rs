//! A realistic simulated player population (pure, no I/O): where players live, how good
//! their connection is, how skilled they are, whom they queue with and when they play.
//!
//! - **Where**: a city from `data/` (WonderProxy, 84 cities on all continents), drawn by
//!   the city's player weight times the activity at its local time of day
//!   ([`activity`]), so at 20:00 UTC Europe is busy and Oceania asleep.
//! - **Latency** to each datacenter region = measured city-to-region-city RTT + the
//!   player's last-mile term (home network and distance to the city:
//!   `3 + U(0, 8) + Exp(mean 12)` ms, capped at 120 ms).
//! - **Skill**: Elo-like, dense near the default rating 1500 (see
//!   `../shared/data/README.md`: PUBG ranked solo p5 1475, p25 = p50 = 1500, p75 1533,
//!   p99 1896): 30% exactly 1500 (new players), 55% around it (`1500 + N(10, 30)`), 15% in
//!   a thin long upper tail (`1530 + Lomax(shape 3, scale 300)`), rounded to whole points,
//!   so many players share identical skills.
//! - **Parties** of 2-3 from the same city (70%) or a nearby one (RTT <= 40 ms), with
//!   skills pulled towards the party leader's.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, TimeZone, Utc};
use rand::distr::weighted::WeightedIndex;
use rand::{Rng, RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::world::World;
use matchmaker_optimizer::{Network, Player, Pool};

/// The default rating of a new player, where the distribution is densest.
pub const DEFAULT_RATING: f64 = 1500.0;

/// Party members are drawn from cities at most this far (RTT ms) from the leader's.
const NEARBY_RTT_MS: f64 = 40.0;

/// What to generate. `Default` is a 3v3 peer-to-peer pool of 200 players at 20:00 UTC
/// (European evening), 30% of players in parties.
#[derive(Debug, Clone, PartialEq)]
pub struct PopulationSpec {
    /// Number of players in the pool.
    pub players: usize,
    /// Share of players (not of groups) queueing in a party, in [0, 1].
    pub party_share: f64,
    /// Among parties, the share of size 3 (the rest are size 2).
    pub party_of_three_share: f64,
    /// Largest party to generate (set to the team size for 1v1 / 2v2 queues).
    pub max_party_size: usize,
    /// The queue's network model. Latencies to every region are generated for both; for
    /// peer-to-peer queues the core estimates peer pings from them (set `peer_pings` to
    /// add measured-like ones instead).
    pub network: Network,
    /// Hour of day (UTC, 0-23) of the pool: weighs cities by local activity.
    pub hour_utc: u32,
    /// The round's clock. `None`: a fixed date (2026-01-14) at `hour_utc`, for
    /// reproducible pools.
    pub now: Option<DateTime<Utc>>,
    /// `enqueued_at` is spread uniformly over this many seconds before `now`.
    pub enqueue_spread_secs: u32,
    /// Roles of a role queue; each player then accepts one, two or all of them. Empty: none.
    pub roles: Vec<String>,
    /// Share of players with a side preference (0 or 1, sometimes in between).
    pub side_share: f64,
    /// Give players a rating uncertainty (`skill_sigma`): high for new players.
    pub skill_sigma: bool,
    /// Add explicit `peer_pings` between every pair (quadratic: small pools only).
    pub peer_pings: bool,
    /// Queue name written into the pool.
    pub queue: Option<String>,
    /// Player ids are this prefix plus a number; party ids add `party-`.
    pub id_prefix: String,
}

impl Default for PopulationSpec {
    fn default() -> Self {
        PopulationSpec {
            players: 200,
            party_share: 0.3,
            party_of_three_share: 0.4,
            max_party_size: 3,
            network: Network::PeerToPeer,
            hour_utc: 20,
            now: None,
            enqueue_spread_secs: 180,
            roles: Vec::new(),
            side_share: 0.0,
            skill_sigma: true,
            peer_pings: false,
            queue: None,
            id_prefix: "p".into(),
        }
    }
}

impl PopulationSpec {
    /// The pool's clock: `now`, or the fixed reference date at `hour_utc`.
    pub fn clock(&self) -> DateTime<Utc> {
        self.now.unwrap_or_else(|| {
            Utc.with_ymd_and_hms(2026, 1, 14, self.hour_utc % 24, 0, 0)
                .single()
                .expect("a valid fixed date")
        })
    }
}

/// A player's lasting traits: home city, connection, skill, roles and side. The simulator
/// keeps these across matches; [`Population::to_player`] turns one into a queue entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub id: String,
    /// Index into the world's cities.
    pub city: usize,
    /// Added to every latency of this player (home network, distance to the city).
    pub last_mile_ms: f64,
    pub skill: f64,
    pub skill_sigma: Option<f64>,
    pub roles: Vec<String>,
    pub side: Option<f64>,
}

/// The built-in world plus the distributions players are drawn from.
#[derive(Debug, Clone)]
pub struct Population {
    world: World,
    /// For each city, the other cities within [`NEARBY_RTT_MS`].
    nearby: Vec<Vec<usize>>,
}

impl Population {
    /// The realistic world from the embedded `data/` files.
    pub fn realistic() -> Population {
        Population::new(World::embedded())
    }

    pub fn new(world: World) -> Population {
        let n = world.cities().len();
        let nearby = (0..n)
            .map(|a| {
                (0..n)
                    .filter(|&b| b != a && world.rtt(a, b) <= NEARBY_RTT_MS)
                    .collect()
            })
            .collect();
        Population { world, nearby }
    }

    pub fn world(&self) -> &World {
        &self.world
    }

    /// Names of the datacenter regions, the keys of every player's `latencies`.
    pub fn region_names(&self) -> Vec<String> {
        self.world
            .regions()
            .iter()
            .map(|r| r.name.clone())
            .collect()
    }

    /// Relative arrival weight of each city at this UTC time of day (hours, fractional):
    /// player weight times the activity at the city's local time.
    pub fn city_weights(&self, hour_utc: f64) -> Vec<f64> {
        self.world
            .cities()
            .iter()
            .map(|c| c.player_weight * activity(hour_utc + c.utc_offset_hours))
            .collect()
    }

    /// Generates a whole pool, deterministic for `seed`.
    pub fn generate_pool(&self, spec: &PopulationSpec, seed: u64) -> Pool {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let now = spec.clock();
        let picker = CityPicker::new(&self.city_weights(spec.hour_utc as f64));
        let mut players: Vec<Player> = Vec::with_capacity(spec.players);
        let mut profiles: Vec<Profile> = Vec::with_capacity(spec.players);
        let mut next_id = 1u64;
        let mut next_party = 1u64;
        while players.len() < spec.players {
            let remaining = spec.players - players.len();
            let group = self.sample_group(spec, &picker, &mut rng, &mut next_id, remaining);
            let party = (group.len() > 1).then(|| {
                let id = format!("{}party-{next_party:05}", spec.id_prefix);
                next_party += 1;
                id
            });
            let spread = i64::from(spec.enqueue_spread_secs) * 1000;
            let waited = if spread > 0 {
                rng.random_range(0..=spread)
            } else {
                0
            };
            let enqueued_at = now - Duration::milliseconds(waited);
            for profile in group {
                players.push(self.to_player(&profile, party.clone(), enqueued_at));
                profiles.push(profile);
            }
        }
        if spec.peer_pings {
            for (i, a) in profiles.iter().enumerate() {
                for (j, b) in profiles.iter().enumerate() {
                    if i != j {
                        players[i]
                            .peer_pings
                            .insert(b.id.clone(), self.peer_ping(a, b));
                    }
                }
            }
        }
        Pool {
            queue: spec.queue.clone(),
            now: Some(now),
            players,
            history: Vec::new(),
        }
    }

    /// One solo player or one party (2-3 players, same or nearby city), with ids
    /// `{prefix}{n:05}` taken from `next_id`. Never more than `room` players.
    pub fn sample_group<R: Rng + ?Sized>(
        &self,
        spec: &PopulationSpec,
        picker: &CityPicker,
        rng: &mut R,
        next_id: &mut u64,
        room: usize,
    ) -> Vec<Profile> {
        let mut take_id = || {
            let id = format!("{}{:05}", spec.id_prefix, *next_id);
            *next_id += 1;
            id
        };
        let size = self.sample_group_size(spec, rng).min(room.max(1));
        let home = picker.pick(rng);
        let leader = self.sample_player(spec, rng, take_id(), home);
        let mut group = vec![leader];
        for _ in 1..size {
            let home = group[0].city;
            let city = if rng.random_bool(0.7) || self.nearby[home].is_empty() {
                home
            } else {
                self.nearby[home][rng.random_range(0..self.nearby[home].len())]
            };
            let mut mate = self.sample_player(spec, rng, take_id(), city);
            // Friends play at similar levels: halfway between own draw and the leader.
            mate.skill = ((mate.skill + group[0].skill) / 2.0).round();
            group.push(mate);
        }
        group
    }

    /// 1 for a solo player, else 2 or 3, such that `party_share` of the players (not of
    /// the groups) end up in parties.
    fn sample_group_size<R: Rng + ?Sized>(&self, spec: &PopulationSpec, rng: &mut R) -> usize {
        let max = spec.max_party_size.min(3);
        if max < 2 {
            return 1;
        }
        let three = if max >= 3 {
            spec.party_of_three_share.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let mean = 2.0 + three;
        let share = spec.party_share.clamp(0.0, 1.0);
        // share = p*mean / (p*mean + 1 - p)  =>  p = share / (mean*(1-share) + share)
        let p_party = share / (mean * (1.0 - share) + share);
        if !rng.random_bool(p_party.clamp(0.0, 1.0)) {
            1
        } else if rng.random_bool(three) {
            3
        } else {
            2
        }
    }

    /// A player living in `city` with freshly drawn connection, skill, roles and side.
    pub fn sample_player<R: Rng + ?Sized>(
        &self,
        spec: &PopulationSpec,
        rng: &mut R,
        id: String,
        city: usize,
    ) -> Profile {
        let last_mile_ms = (3.0 + rng.random_range(0.0..8.0) + exponential(rng, 12.0)).min(120.0);
        let skill = sample_skill(rng);
        let skill_sigma = spec.skill_sigma.then(|| {
            if skill == DEFAULT_RATING {
                350.0
            } else {
                (40.0 + rng.random_range(0.0..160.0_f64)).round()
            }
        });
        let roles = sample_roles(rng, &spec.roles);
        let side = rng.random_bool(spec.side_share.clamp(0.0, 1.0)).then(|| {
            if rng.random_bool(0.9) {
                if rng.random_bool(0.5) { 0.0 } else { 1.0 }
            } else {
                (rng.random_range(0.0..1.0_f64) * 100.0).round() / 100.0
            }
        });
        Profile {
            id,
            city,
            last_mile_ms: round1(last_mile_ms),
            skill,
            skill_sigma,
            roles,
            side,
        }
    }

    /// Latency in ms from this player to every datacenter region.
    pub fn latencies(&self, profile: &Profile) -> BTreeMap<String, f64> {
        self.world
            .regions()
            .iter()
            .map(|r| {
                let ms = self.world.rtt(profile.city, r.city) + profile.last_mile_ms;
                (r.name.clone(), round1(ms))
            })
            .collect()
    }

    /// Round-trip time between two players: city RTT plus both last miles.
    pub fn peer_ping(&self, a: &Profile, b: &Profile) -> f64 {
        round1(self.world.rtt(a.city, b.city) + a.last_mile_ms + b.last_mile_ms)
    }

    /// The queue entry of this player (no peer pings).
    pub fn to_player(
        &self,
        profile: &Profile,
        party: Option<String>,
        enqueued_at: DateTime<Utc>,
    ) -> Player {
        Player {
            id: profile.id.clone(),
            party,
            skill: profile.skill,
            skill_sigma: profile.skill_sigma,
            enqueued_at: Some(enqueued_at),
            latencies: self.latencies(profile),
            peer_pings: BTreeMap::new(),
            roles: profile.roles.clone(),
            side: profile.side,
            ..Default::default()
        }
    }
}

/// Draws a city index from arrival weights (see [`Population::city_weights`]).
#[derive(Debug, Clone)]
pub struct CityPicker {
    index: WeightedIndex<f64>,
}

impl CityPicker {
    /// Weights must be non-negative with a positive sum; otherwise every city is equally
    /// likely (a world with no activity still yields players).
    pub fn new(weights: &[f64]) -> CityPicker {
        let index = WeightedIndex::new(weights.iter().copied()).unwrap_or_else(|_| {
            WeightedIndex::new(std::iter::repeat_n(1.0, weights.len().max(1)))
                .expect("uniform weights are valid")
        });
        CityPicker { index }
    }

    pub fn pick<R: Rng + ?Sized>(&self, rng: &mut R) -> usize {
        rng.sample(&self.index)
    }
}

/// Relative number of players online at a local hour of day (0-24, fractional; wraps):
/// a quiet night, a slow morning, an evening peak at 20-21 h. Linear between hours.
pub fn activity(local_hour: f64) -> f64 {
    const CURVE: [f64; 24] = [
        0.55, 0.35, 0.20, 0.12, 0.08, 0.07, 0.08, 0.12, 0.18, 0.25, 0.30, 0.35, // 0-11
        0.42, 0.45, 0.50, 0.58, 0.68, 0.80, 0.90, 0.97, 1.00, 1.00, 0.90, 0.75, // 12-23
    ];
    let h = local_hour.rem_euclid(24.0);
    let lo = h.floor() as usize % 24;
    let hi = (lo + 1) % 24;
    let t = h - h.floor();
    CURVE[lo] * (1.0 - t) + CURVE[hi] * t
}

/// One skill from the realistic distribution (module docs), whole points.
pub fn sample_skill<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u: f64 = rng.random();
    if u < 0.30 {
        DEFAULT_RATING
    } else if u < 0.85 {
        (DEFAULT_RATING + 10.0 + 30.0 * standard_normal(rng)).round()
    } else {
        // Lomax (Pareto II) by inversion: scale * ((1 - v)^(-1/shape) - 1).
        let v: f64 = rng.random();
        (DEFAULT_RATING + 30.0 + 300.0 * ((1.0 - v).powf(-1.0 / 3.0) - 1.0)).round()
    }
}

fn sample_roles<R: Rng + ?Sized>(rng: &mut R, roles: &[String]) -> Vec<String> {
    if roles.is_empty() {
        return Vec::new();
    }
    let u: f64 = rng.random();
    let count = if u < 0.4 {
        1
    } else if u < 0.7 {
        2.min(roles.len())
    } else {
        roles.len()
    };
    // Keep `count` roles, chosen uniformly, in the queue's order.
    let mut keep = vec![false; roles.len()];
    let mut chosen = 0;
    while chosen < count {
        let k = rng.random_range(0..roles.len());
        if !keep[k] {
            keep[k] = true;
            chosen += 1;
        }
    }
    roles
        .iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(r, _)| r.clone())
        .collect()
}

fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
    let u: f64 = rng.random();
    let v: f64 = rng.random();
    (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

fn exponential<R: Rng + ?Sized>(rng: &mut R, mean: f64) -> f64 {
    let u: f64 = rng.random();
    -mean * (1.0 - u).ln()
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn percentile(sorted: &[f64], p: f64) -> f64 {
        sorted[((sorted.len() - 1) as f64 * p).round() as usize]
    }

    #[test]
    fn same_seed_same_pool_other_seed_other_pool() {
        let population = Population::realistic();
        let spec = PopulationSpec::default();
        let a = population.generate_pool(&spec, 7);
        let b = population.generate_pool(&spec, 7);
        let c = population.generate_pool(&spec, 8);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.players.len(), spec.players);
        let ids: BTreeSet<&str> = a.players.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids.len(), a.players.len(), "player ids are unique");
    }

    #[test]
    fn skills_are_dense_at_the_default_with_a_thin_upper_tail() {
        let population = Population::realistic();
        let spec = PopulationSpec {
            players: 20_000,
            party_share: 0.0,
            ..PopulationSpec::default()
        };
        let pool = population.generate_pool(&spec, 1);
        let mut skills: Vec<f64> = pool.players.iter().map(|p| p.skill).collect();
        skills.sort_by(f64::total_cmp);
        let p5 = percentile(&skills, 0.05);
        let p25 = percentile(&skills, 0.25);
        let p50 = percentile(&skills, 0.50);
        let p75 = percentile(&skills, 0.75);
        let p99 = percentile(&skills, 0.99);
        assert!((1460.0..=1490.0).contains(&p5), "p5 {p5}");
        assert!((1490.0..=1510.0).contains(&p25), "p25 {p25}");
        assert!((1495.0..=1515.0).contains(&p50), "median {p50}");
        assert!((1520.0..=1560.0).contains(&p75), "p75 {p75}");
        assert!((1750.0..=2100.0).contains(&p99), "p99 {p99}");
        assert!(skills.last().unwrap() - p99 > 300.0, "long tail beyond p99");
        let at_default = skills.iter().filter(|&&s| s == DEFAULT_RATING).count();
        assert!(
            at_default > skills.len() / 4,
            "{at_default} at exactly 1500"
        );
    }

    #[test]
    fn latencies_cover_every_region_and_are_plausible() {
        let population = Population::realistic();
        let regions = population.region_names();
        let pool = population.generate_pool(&PopulationSpec::default(), 3);
        for p in &pool.players {
            assert_eq!(p.latencies.len(), regions.len(), "{}", p.id);
            let best = p.latencies.values().copied().fold(f64::INFINITY, f64::min);
            for (region, ms) in &p.latencies {
                assert!(
                    ms.is_finite() && *ms >= 3.0 && *ms < 700.0,
                    "{} {region} {ms}",
                    p.id
                );
            }
            // Every selected city is within a continent's reach of some region.
            assert!(best < 250.0, "{} best region {best} ms", p.id);
        }
    }

    #[test]
    fn parties_have_two_or_three_players_and_the_requested_share() {
        let population = Population::realistic();
        let spec = PopulationSpec {
            players: 3_000,
            ..PopulationSpec::default()
        };
        let pool = population.generate_pool(&spec, 5);
        let mut parties: BTreeMap<&str, Vec<&Player>> = BTreeMap::new();
        for p in &pool.players {
            if let Some(party) = &p.party {
                parties.entry(party).or_default().push(p);
            }
        }
        assert!(!parties.is_empty());
        let in_parties: usize = parties.values().map(Vec::len).sum();
        let share = in_parties as f64 / pool.players.len() as f64;
        assert!((0.25..0.35).contains(&share), "party share {share}");
        assert!(parties.values().any(|m| m.len() == 3));
        for members in parties.values() {
            assert!((2..=3).contains(&members.len()), "{members:?}");
            // Party members enqueue together.
            assert!(
                members
                    .iter()
                    .all(|m| m.enqueued_at == members[0].enqueued_at)
            );
        }
    }

    #[test]
    fn party_members_live_in_the_same_or_a_nearby_city() {
        let population = Population::realistic();
        let spec = PopulationSpec {
            party_share: 1.0,
            ..PopulationSpec::default()
        };
        let picker = CityPicker::new(&population.city_weights(20.0));
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        let mut next_id = 1;
        let mut elsewhere = 0;
        for _ in 0..500 {
            let group = population.sample_group(&spec, &picker, &mut rng, &mut next_id, 3);
            assert!((2..=3).contains(&group.len()));
            for mate in &group[1..] {
                let rtt = population.world().rtt(group[0].city, mate.city);
                assert!(rtt <= NEARBY_RTT_MS, "{rtt}");
                elsewhere += usize::from(mate.city != group[0].city);
            }
        }
        assert!(elsewhere > 0, "some friends live in a nearby city");
    }

    #[test]
    fn small_formats_get_no_parties_larger_than_allowed() {
        let population = Population::realistic();
        let spec = PopulationSpec {
            players: 500,
            max_party_size: 2,
            party_share: 0.5,
            ..PopulationSpec::default()
        };
        let pool = population.generate_pool(&spec, 9);
        let mut sizes: BTreeMap<String, usize> = BTreeMap::new();
        for p in &pool.players {
            if let Some(party) = &p.party {
                *sizes.entry(party.clone()).or_default() += 1;
            }
        }
        assert!(!sizes.is_empty());
        assert!(sizes.values().all(|&n| n == 2), "{sizes:?}");
    }

    #[test]
    fn evening_in_europe_brings_mostly_europeans() {
        use crate::world::Continent;
        let population = Population::realistic();
        let share_europe_asia = |hour_utc| {
            let spec = PopulationSpec {
                players: 2_000,
                hour_utc,
                ..PopulationSpec::default()
            };
            let pool = population.generate_pool(&spec, 11);
            let europe = pool
                .players
                .iter()
                .filter(|p| {
                    let best = p
                        .latencies
                        .iter()
                        .min_by(|a, b| a.1.total_cmp(b.1))
                        .unwrap()
                        .0;
                    best.starts_with("eu-")
                })
                .count();
            europe as f64 / pool.players.len() as f64
        };
        let eu_evening = share_europe_asia(20);
        let us_evening = share_europe_asia(2);
        assert!(eu_evening > 0.5, "{eu_evening}");
        assert!(
            us_evening < eu_evening - 0.2,
            "{us_evening} vs {eu_evening}"
        );
        // Thin regions are still present.
        let world = population.world();
        assert!(
            world
                .cities()
                .iter()
                .any(|c| c.continent == Continent::Oceania)
        );
    }

    #[test]
    fn enqueue_times_are_spread_before_now_and_options_apply() {
        let population = Population::realistic();
        let spec = PopulationSpec {
            players: 60,
            roles: vec!["tank".into(), "healer".into(), "dps".into()],
            side_share: 1.0,
            peer_pings: true,
            ..PopulationSpec::default()
        };
        let pool = population.generate_pool(&spec, 2);
        let now = pool.now.unwrap();
        for p in &pool.players {
            let at = p.enqueued_at.unwrap();
            assert!(at <= now && now - at <= Duration::seconds(180), "{}", p.id);
            assert!(!p.roles.is_empty() && p.roles.iter().all(|r| spec.roles.contains(r)));
            assert!(p.side.is_some_and(|s| (0.0..=1.0).contains(&s)));
            assert_eq!(p.peer_pings.len(), spec.players - 1);
            assert!(p.peer_pings.values().all(|&ms| ms > 0.0));
        }
    }

    #[test]
    fn activity_peaks_in_the_evening_and_wraps() {
        assert!(activity(20.5) > activity(4.0) * 5.0);
        assert!((activity(24.0 + 20.0) - activity(20.0)).abs() < 1e-12);
        assert!((activity(-4.0) - activity(20.0)).abs() < 1e-12);
    }
}
