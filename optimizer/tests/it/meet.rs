//! Who may meet whom, on realistic pools from the project's generator with the shipped
//! config: filters and avoids are never broken, no match breaks the quality floor in
//! force, the team gap stays within the first step's limit until `max_wait`, every
//! player left over has a reason, and with a relay step nobody past its wait is left
//! over for want of a host.

use std::collections::HashMap;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use matchmaker_optimizer::index::IndexedPool;
use matchmaker_optimizer::{
    Attribute, AvoidScope, Budget, LeftOverKind, Network, Pool, QueueModel, RoundOutcome,
    SolveOptions, explain_left_over, solve,
};
use matchmaker_population::population::{Population, PopulationSpec};

fn generate(spec: &PopulationSpec, seed: u64) -> Pool {
    static POPULATION: std::sync::OnceLock<Population> = std::sync::OnceLock::new();
    POPULATION
        .get_or_init(Population::realistic)
        .generate_pool(spec, seed)
}

fn ranked() -> QueueModel {
    crate::shipped_model("ranked_3v3")
}

fn options(seed: u64) -> SolveOptions {
    SolveOptions {
        budget: Budget::Restarts(2),
        moves_per_restart: Some(60_000),
        threads: Some(2),
        seed,
        ..SolveOptions::default()
    }
}

/// Global pools (an hour when several continents play) with long waiters: enqueued over
/// the last 25 minutes, so some are past max_wait and past every floor step.
fn realistic(players: usize, seed: u64, peer_pings: bool) -> Pool {
    let spec = PopulationSpec {
        players,
        hour_utc: [20, 2, 13][seed as usize % 3],
        enqueue_spread_secs: 1_500,
        peer_pings,
        network: Network::PeerToPeer,
        ..PopulationSpec::default()
    };
    generate(&spec, seed)
}

/// Give the pool builds, platforms, crossplay opt-outs and avoids, per party.
fn with_rules(mut pool: Pool, seed: u64) -> Pool {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let ids: Vec<String> = pool.players.iter().map(|p| p.id.clone()).collect();
    let mut by_party: HashMap<String, (String, String, bool)> = HashMap::new();
    for p in &mut pool.players {
        let draw = |rng: &mut Xoshiro256PlusPlus| {
            (
                if rng.random_bool(0.8) { "1.4" } else { "1.3" }.to_string(),
                if rng.random_bool(0.6) {
                    "pc"
                } else {
                    "console"
                }
                .to_string(),
                rng.random_bool(0.2),
            )
        };
        let (build, platform, off) = match &p.party {
            Some(x) => by_party
                .entry(x.clone())
                .or_insert_with(|| draw(&mut rng))
                .clone(),
            None => draw(&mut rng),
        };
        p.attributes.insert("build".into(), Attribute::One(build));
        p.attributes
            .insert("platform".into(), Attribute::One(platform));
        if off {
            p.attributes
                .insert("crossplay".into(), Attribute::One("off".into()));
        }
        if rng.random_bool(0.3) {
            p.avoids = (0..3)
                .map(|_| ids[rng.random_range(0..ids.len())].clone())
                .collect();
        }
    }
    pool
}

fn wait_minutes(pool: &Pool) -> HashMap<&str, f64> {
    let now = pool.now.unwrap();
    pool.players
        .iter()
        .map(|p| {
            let w = (now - p.enqueued_at.unwrap()).num_milliseconds() as f64 / 60_000.0;
            (p.id.as_str(), w)
        })
        .collect()
}

/// Every match keeps the floor in force for its longest-waiting player, recomputed
/// here from the outcome; returns the worst team gap among matches whose players all
/// waited less than max_wait.
fn check_floors(pool: &Pool, model: &QueueModel, out: &RoundOutcome) -> f64 {
    let ix = IndexedPool::build(pool, model).unwrap();
    let index: HashMap<&str, u32> = ix
        .ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i as u32))
        .collect();
    let waits = wait_minutes(pool);
    let max_wait = model.max_wait.as_secs_f64() / 60.0;
    let mut worst_young = 0.0f64;
    for m in &out.matches {
        let longest = m
            .teams
            .iter()
            .flatten()
            .map(|id| waits[id.as_str()])
            .fold(0.0, f64::max);
        let step = model
            .floors
            .iter()
            .rev()
            .find(|s| longest >= s.after.as_secs_f64() / 60.0)
            .expect("the first step is in force from 0s");
        let means: Vec<f64> = m
            .teams
            .iter()
            .map(|t| {
                t.iter()
                    .map(|id| ix.skill[index[id.as_str()] as usize])
                    .sum::<f64>()
                    / t.len() as f64
            })
            .collect();
        let gap = means.iter().cloned().fold(f64::MIN, f64::max)
            - means.iter().cloned().fold(f64::MAX, f64::min);
        if let Some(max) = step.max_team_gap {
            assert!(
                gap <= max + 1e-9,
                "gap {gap} > {max} at {longest:.1} min: {m:?}"
            );
        }
        if let Some(min) = step.min_match_score {
            assert!(m.score >= min - 1e-12, "score {} < {min}: {m:?}", m.score);
        }
        if let Some(max) = step.max_enemy_ping_ms {
            let p = &model.ping;
            for (ta, a) in m.teams.iter().enumerate() {
                for b in m.teams.iter().skip(ta + 1).flatten() {
                    for x in a {
                        let ms = ix.ping_ms(
                            index[x.as_str()],
                            index[b.as_str()],
                            p.relay_overhead_ms,
                            p.unknown_ms,
                        );
                        assert!(ms <= max, "{x} - {b}: {ms} ms > {max}: {m:?}");
                    }
                }
            }
        }
        if m.teams
            .iter()
            .flatten()
            .all(|id| waits[id.as_str()] < max_wait)
        {
            worst_young = worst_young.max(gap);
        }
    }
    worst_young
}

fn check_meeting(pool: &Pool, model: &QueueModel, out: &RoundOutcome) {
    let by_id: HashMap<&str, &matchmaker_optimizer::Player> =
        pool.players.iter().map(|p| (p.id.as_str(), p)).collect();
    for m in &out.matches {
        let ids: Vec<&String> = m.teams.iter().flatten().collect();
        for a in &ids {
            let pa = by_id[a.as_str()];
            for b in &ids {
                let pb = by_id[b.as_str()];
                assert_eq!(
                    pa.attributes["build"], pb.attributes["build"],
                    "{a} met {b}"
                );
                if pa.attributes.contains_key("crossplay") {
                    assert_eq!(
                        pa.attributes["platform"], pb.attributes["platform"],
                        "{a} opted out, met {b}"
                    );
                }
                let team_of = |id: &String| m.teams.iter().position(|t| t.contains(id));
                let apart = model.avoids.scope == AvoidScope::Team && team_of(a) != team_of(b);
                // a player's own id on their list means nothing
                if !apart && a != b {
                    assert!(
                        !pa.avoids
                            .iter()
                            .take(model.avoids.max_per_player)
                            .any(|x| x == *b),
                        "{a} avoids {b}"
                    );
                }
            }
        }
    }
}

fn check_reasons(
    pool: &Pool,
    model: &QueueModel,
    out: &RoundOutcome,
) -> Vec<matchmaker_optimizer::LeftOver> {
    let why = explain_left_over(pool, model, out).unwrap();
    assert_eq!(
        why.len(),
        out.unmatched.len(),
        "every left-over player has a reason"
    );
    for w in &why {
        assert!(!w.reason.is_empty());
        assert!(out.unmatched.contains(&w.player));
    }
    why
}

#[test]
fn realistic_pools_keep_the_floors_and_every_left_over_has_a_reason() {
    let model = ranked();
    let first = model.floors[0]
        .max_team_gap
        .expect("the first step limits the gap");
    let mut matches = 0;
    for seed in 0..3u64 {
        let pool = realistic(300, 40 + seed, false);
        let out = solve(&pool, &model, &options(seed)).unwrap();
        let worst = check_floors(&pool, &model, &out);
        assert!(
            worst <= first,
            "seed {seed}: worst young gap {worst} > {first}"
        );
        check_reasons(&pool, &model, &out);
        matches += out.matches.len();
    }
    assert!(matches >= 3 * 30, "only {matches} matches of 900 players");
}

#[test]
fn filters_and_avoids_hold_on_realistic_pools_in_both_scopes() {
    for scope in [AvoidScope::Match, AvoidScope::Team] {
        let mut model = ranked();
        model.filters.same = vec!["build".into()];
        model.filters.crossplay = Some("platform".into());
        model.avoids.scope = scope;
        for seed in 0..2u64 {
            let pool = with_rules(realistic(240, 60 + seed, false), seed);
            let out = solve(&pool, &model, &options(seed)).unwrap();
            check_meeting(&pool, &model, &out);
            check_floors(&pool, &model, &out);
            check_reasons(&pool, &model, &out);
            assert!(
                out.matches.len() >= 20,
                "{scope:?} seed {seed}: {} matches",
                out.matches.len()
            );
        }
    }
}

#[test]
fn with_a_relay_step_nobody_past_it_is_left_over_for_want_of_a_host() {
    let mut model = ranked();
    let relay_after = Duration::from_secs(600);
    for step in &mut model.floors {
        if step.after >= relay_after {
            step.relay = true;
        }
    }
    model.validate().unwrap();
    for seed in 0..2u64 {
        // peer pings between every pair: the measured-like pings of a global pool
        let pool = realistic(150, 80 + seed, true);
        let waits = wait_minutes(&pool);
        let out = solve(&pool, &model, &options(seed)).unwrap();
        check_floors(&pool, &model, &out);
        let why = check_reasons(&pool, &model, &out);
        for w in &why {
            if w.kind == LeftOverKind::NoHost {
                assert!(
                    waits[w.player.as_str()] < relay_after.as_secs_f64() / 60.0,
                    "{} waited past the relay step: {}",
                    w.player,
                    w.reason
                );
                assert!(
                    w.reason.contains("a relay step applies from 10m"),
                    "{}",
                    w.reason
                );
            }
        }
        for m in out.matches.iter().filter(|m| m.relay) {
            assert_eq!(m.hosts, Some(Vec::new()));
            let longest = m
                .teams
                .iter()
                .flatten()
                .map(|id| waits[id.as_str()])
                .fold(0.0, f64::max);
            assert!(
                longest >= 10.0,
                "a relay match before the relay step: {m:?}"
            );
        }
    }
}

/// Crossplay opt-outs who can only play with their own platform are placed when a match
/// of that platform exists: 8 on pc (2 opted out), 5 on ps5 and 5 on xbox make one pc
/// match and two mixed ones.
#[test]
fn crossplay_opt_outs_are_placed_when_their_platform_fills_a_match() {
    let mut model = QueueModel::default();
    model.filters.crossplay = Some("platform".into());
    let players: Vec<matchmaker_optimizer::Player> = (0..18)
        .map(|i| {
            let platform = if i < 8 {
                "pc"
            } else if i % 2 == 0 {
                "ps5"
            } else {
                "xbox"
            };
            let mut p = crate::contract::player(&format!("p{i}"), 1500.0 + i as f64);
            p.latencies.insert("eu".into(), 30.0);
            p.attributes
                .insert("platform".into(), Attribute::One(platform.into()));
            p.attributes
                .insert("build".into(), Attribute::One("1".into()));
            if i < 2 {
                p.attributes
                    .insert("crossplay".into(), Attribute::One("off".into()));
            }
            p
        })
        .collect();
    let pool = crate::contract::pool_of(players);
    for seed in 0..4 {
        let out = solve(&pool, &model, &options(seed)).unwrap();
        check_meeting(&pool, &model, &out);
        assert_eq!(out.matches.len(), 3, "seed {seed}: {:?}", out.unmatched);
    }
}
