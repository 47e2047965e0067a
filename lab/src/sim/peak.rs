//! The plan of a peak evening, pure: which queues (datacenter regions x
//! modes: a 3v3 peer-to-peer and a 5v5 on dedicated servers), their round schedules and
//! waits, the daemon config that serves them, and how the player base and its arrivals
//! split between the queues. `matchmaker-lab peak` runs the plan (`cli::peak`).
//!
//! Each region's queues get the players living nearest to it (by measured RTT), so a
//! region's arrivals follow its own time of day: at 20:00 UTC Europe is busy and Tokyo
//! asleep. Half of a region's players play its 3v3, half its 5v5.
//!
//! The 3v3 queues are ranked: they share one built-in rating pool ([`RATING_POOL`],
//! Weng-Lin), their players enqueue without a skill and play at the rating their reported
//! results gave them. The 5v5 queues take the skill the players send.

use std::time::Duration;

use crate::sim::population::Population;
use crate::sim::world::World;

/// The rating pool of the evening's 3v3 queues.
pub const RATING_POOL: &str = "ranked_3v3";

/// A match format of the evening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 3v3, peer-to-peer (a player hosts).
    PeerToPeer3v3,
    /// 5v5 on dedicated servers.
    Dedicated5v5,
}

impl Mode {
    pub const ALL: [Mode; 2] = [Mode::PeerToPeer3v3, Mode::Dedicated5v5];

    pub fn suffix(self) -> &'static str {
        match self {
            Mode::PeerToPeer3v3 => "3v3",
            Mode::Dedicated5v5 => "5v5",
        }
    }

    pub fn team_size(self) -> usize {
        match self {
            Mode::PeerToPeer3v3 => 3,
            Mode::Dedicated5v5 => 5,
        }
    }
}

/// What to run: the whole evening, or a scaled-down one (the CI test).
#[derive(Debug, Clone, PartialEq)]
pub struct EveningSpec {
    /// The first `regions` datacenter regions of the world, by player share (largest
    /// first); 10 regions x 2 modes = 20 queues.
    pub regions: usize,
    /// Distinct players, split over the queues by region share.
    pub players: usize,
    /// New players per wall-clock second, all queues together, if every region were at
    /// its busiest hour at once (each queue's arrivals follow its region's time of day).
    pub rate: f64,
    /// Round every this long: the 3v3 queues, and the 5v5 queues.
    pub every_3v3: Duration,
    pub every_5v5: Duration,
    /// `max_wait` of the 3v3 and 5v5 queues.
    pub max_wait_3v3: Duration,
    pub max_wait_5v5: Duration,
    /// Solver budget of each round.
    pub budget: Duration,
    /// The 5v5 queues place their matches on game servers (`[queues.X.servers]
    /// required = true`) with this ttl; None: no such table (a match names its region).
    pub server_ttl: Option<Duration>,
}

impl Default for EveningSpec {
    fn default() -> Self {
        EveningSpec {
            regions: 10,
            players: 30_000,
            rate: 60.0,
            every_3v3: Duration::from_secs(30),
            every_5v5: Duration::from_secs(60),
            max_wait_3v3: Duration::from_secs(90),
            max_wait_5v5: Duration::from_secs(120),
            budget: Duration::from_millis(500),
            server_ttl: None,
        }
    }
}

/// One queue of the evening and its share of the load.
#[derive(Debug, Clone)]
pub struct QueuePlan {
    /// `<region>_<mode>`, e.g. `eu_west_3v3`.
    pub queue: String,
    pub region: String,
    pub mode: Mode,
    pub every: Duration,
    pub max_wait: Duration,
    /// Distinct players of this queue.
    pub population: usize,
    /// Peak arrivals per wall-clock second.
    pub rate: f64,
    /// The world with only this region's players (the others weigh 0).
    pub world: World,
}

/// The queues of the evening, largest region first.
pub fn plan_evening(population: &Population, spec: &EveningSpec) -> Vec<QueuePlan> {
    let world = population.world();
    let nearest: Vec<usize> = (0..world.cities().len())
        .map(|c| world.nearest_region(c))
        .collect();
    let total: f64 = world.cities().iter().map(|c| c.player_weight).sum();
    let mut shares: Vec<(usize, f64)> = (0..world.regions().len())
        .map(|r| {
            let weight: f64 = world
                .cities()
                .iter()
                .zip(&nearest)
                .filter(|(_, n)| **n == r)
                .map(|(c, _)| c.player_weight)
                .sum();
            (r, weight / total.max(f64::MIN_POSITIVE))
        })
        .filter(|(_, share)| *share > 0.0)
        .collect();
    shares.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    shares.truncate(spec.regions.max(1));
    // The chosen regions carry the whole base between them.
    let kept: f64 = shares.iter().map(|(_, s)| s).sum();
    let mut plans = Vec::new();
    for (region, share) in shares {
        let share = share / kept;
        let name = world.regions()[region].name.clone();
        let regional = world.with_player_weights(|k, c| {
            if nearest[k] == region {
                c.player_weight
            } else {
                0.0
            }
        });
        for mode in Mode::ALL {
            let (every, max_wait) = match mode {
                Mode::PeerToPeer3v3 => (spec.every_3v3, spec.max_wait_3v3),
                Mode::Dedicated5v5 => (spec.every_5v5, spec.max_wait_5v5),
            };
            plans.push(QueuePlan {
                queue: format!("{}_{}", name.replace('-', "_"), mode.suffix()),
                region: name.clone(),
                mode,
                every,
                max_wait,
                // At least two matches' worth, so a small region can play at all.
                population: ((spec.players as f64 * share / 2.0).round() as usize)
                    .max(4 * mode.team_size()),
                rate: spec.rate * share / 2.0,
                world: regional.clone(),
            });
        }
    }
    plans
}

/// The daemon config serving the plans: lease and poll settings, and per queue its
/// format, schedule, waits and budget. Rounds run on the schedule (no early start at a
/// target pool), so the countdown players see is the round's real start.
pub fn config_toml(plans: &[QueuePlan], spec: &EveningSpec, solver_threads: usize) -> String {
    let ms = |d: Duration| format!("{}ms", d.as_millis());
    let mut toml = format!(
        "default_queue = \"{}\"\n\n[daemon]\npoll_interval = \"2s\"\nlease_ttl = \"15s\"\n\
         lease_renew = \"5s\"\nsolver_threads = {solver_threads}\n",
        plans.first().map(|p| p.queue.as_str()).unwrap_or("none")
    );
    for plan in plans {
        let q = &plan.queue;
        let (network, weights) = match plan.mode {
            // Beta as the simulators' results have it: the game's own randomness.
            Mode::PeerToPeer3v3 => (
                "peer_to_peer",
                "\n[queues.{q}.rating]\nsystem = \"weng_lin\"\npool = \"{pool}\"\nbeta = 125\n",
            ),
            // Nobody hosts on a dedicated server.
            Mode::Dedicated5v5 => ("dedicated", "\n[queues.{q}.weights]\ntwo_hosts = 0.0\n"),
        };
        toml.push_str(&format!(
            "\n[queues.{q}]\nteams = 2\nteam_size = {}\nnetwork = \"{network}\"\n\
             max_wait = \"{}\"\n{}\n[queues.{q}.round]\nevery = \"{}\"\nbudget = \"{}\"\n\
             threads = 1\n",
            plan.mode.team_size(),
            ms(plan.max_wait),
            weights.replace("{q}", q).replace("{pool}", RATING_POOL),
            ms(plan.every),
            ms(spec.budget),
        ));
        if plan.mode == Mode::Dedicated5v5 {
            // A dedicated queue lists its regions: those its world's players measure.
            let regions: Vec<String> = plan
                .world
                .regions()
                .iter()
                .map(|r| format!("{:?}", r.name))
                .collect();
            toml.push_str(&format!(
                "\n[queues.{q}.tickets]\nregions = [{}]\n",
                regions.join(", ")
            ));
            if let Some(ttl) = spec.server_ttl {
                toml.push_str(&format!(
                    "\n[queues.{q}.servers]\nrequired = true\nttl = \"{}\"\n",
                    ms(ttl)
                ));
            }
        }
    }
    toml
}

#[cfg(test)]
mod tests {
    use super::*;
    use matchmaker::config::Config;

    #[test]
    fn the_evening_has_twenty_queues_that_share_the_whole_base() {
        let population = Population::realistic();
        let spec = EveningSpec::default();
        let plans = plan_evening(&population, &spec);
        assert_eq!(plans.len(), 20);
        let players: usize = plans.iter().map(|p| p.population).sum();
        // Rounding and the two-match floor of small regions move it a little.
        assert!((29_900..=30_200).contains(&players), "{players}");
        let rate: f64 = plans.iter().map(|p| p.rate).sum();
        assert!((rate - spec.rate).abs() < 1e-9);
        let mut names: Vec<&str> = plans.iter().map(|p| p.queue.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 20, "queue names are distinct");
        // Each queue's world holds only its region's players.
        for plan in &plans {
            let w = &plan.world;
            for (k, city) in w.cities().iter().enumerate() {
                if city.player_weight > 0.0 {
                    assert_eq!(w.regions()[w.nearest_region(k)].name, plan.region);
                }
            }
        }
    }

    #[test]
    fn the_evening_config_is_valid_and_serves_every_queue() {
        let population = Population::realistic();
        let spec = EveningSpec::default();
        let plans = plan_evening(&population, &spec);
        let config = Config::from_toml_str(&config_toml(&plans, &spec, 1)).unwrap();
        assert_eq!(config.queues.len(), 20);
        for plan in &plans {
            let q = &config.queues[&plan.queue];
            assert_eq!(q.model.team_size, plan.mode.team_size());
            assert_eq!(q.model.max_wait, plan.max_wait);
            assert_eq!(q.round.target_pool, None, "rounds follow the schedule");
            assert_eq!(q.servers, None, "no fleet: no servers table");
            let pool = q.rating.as_ref().map(|r| r.pool_name(&plan.queue));
            match plan.mode {
                Mode::PeerToPeer3v3 => assert_eq!(pool, Some(RATING_POOL)),
                Mode::Dedicated5v5 => assert_eq!(pool, None),
            }
        }
        // With a fleet, the 5v5 queues (dedicated servers) require servers.
        let spec = EveningSpec {
            server_ttl: Some(Duration::from_secs(20)),
            ..spec
        };
        let config = Config::from_toml_str(&config_toml(&plans, &spec, 1)).unwrap();
        for plan in &plans {
            let servers = config.queues[&plan.queue].servers.as_ref();
            match plan.mode {
                Mode::Dedicated5v5 => {
                    let servers = servers.expect("a 5v5 queue requires servers");
                    assert!(servers.required);
                    assert_eq!(servers.ttl, Duration::from_secs(20));
                }
                Mode::PeerToPeer3v3 => assert_eq!(servers, None),
            }
        }
    }

    #[test]
    fn a_scaled_down_evening_keeps_the_largest_regions() {
        let population = Population::realistic();
        let spec = EveningSpec {
            regions: 2,
            players: 1000,
            ..EveningSpec::default()
        };
        let plans = plan_evening(&population, &spec);
        assert_eq!(plans.len(), 4);
        assert!(plans[0].region.starts_with("eu-"), "{}", plans[0].region);
        assert_eq!(plans.iter().map(|p| p.population).sum::<usize>(), 1000);
    }
}
