//! Maps chosen in the round: on realistic pools with vetoes, preferences and a history of
//! maps played, no match is on a map one of its players vetoed, few players replay
//! their last map, nine in ten players are placed; players whose vetoes leave no map
//! with anyone are left over with that reason, and a floor step that relaxes vetoes
//! places them on the map the fewest vetoed.

use std::collections::HashMap;
use std::time::Duration;

use matchmaker_optimizer::model::MapParams;
use matchmaker_optimizer::{
    Attribute, Budget, FloorStep, LeftOverKind, Network, PastMatch, Pool, QueueModel, RoundOutcome,
    SolveOptions, explain_left_over, solve,
};
use matchmaker_population::map_choices::add_map_choices;
use matchmaker_population::population::{Population, PopulationSpec};

use crate::contract::{player, pool_of, quick};

const MAPS: [&str; 7] = [
    "Dust", "Harbor", "Summit", "Canal", "Foundry", "Orchard", "Vault",
];

fn with_maps(mut model: QueueModel, vetoes: usize) -> QueueModel {
    model.maps = MapParams {
        pool: MAPS.iter().map(|m| m.to_string()).collect(),
        vetoes,
        repeat_depth: 3,
    };
    model
}

fn options(seed: u64) -> SolveOptions {
    SolveOptions {
        budget: Budget::Restarts(2),
        moves_per_restart: Some(60_000),
        threads: Some(2),
        seed,
        // the incremental rows carry the maps factor: hold them to the full re-score
        check_delta: true,
        ..SolveOptions::default()
    }
}

fn names(list: &[usize]) -> Attribute {
    Attribute::Many(list.iter().map(|&m| MAPS[m].to_string()).collect())
}

/// A realistic pool whose players veto up to two maps (one map is widely disliked),
/// some prefer one to three, and each has played three matches, on a map each, in the
/// last hour (`map_choices::add_map_choices`).
fn pool_with_choices(players: usize, seed: u64) -> Pool {
    static POPULATION: std::sync::OnceLock<Population> = std::sync::OnceLock::new();
    let spec = PopulationSpec {
        players,
        hour_utc: [20, 2, 13][seed as usize % 3],
        enqueue_spread_secs: 600,
        network: Network::PeerToPeer,
        ..PopulationSpec::default()
    };
    let mut pool = POPULATION
        .get_or_init(Population::realistic)
        .generate_pool(&spec, seed);
    add_map_choices(&mut pool, &MAPS, seed ^ 0x6d61_7073);
    pool
}

fn vetoes_of(pool: &Pool) -> HashMap<&str, Vec<&str>> {
    pool.players
        .iter()
        .map(|p| {
            let v = p.attributes.get("veto").map_or(Vec::new(), |a| {
                a.values().iter().map(String::as_str).collect()
            });
            (p.id.as_str(), v)
        })
        .collect()
}

/// Each player's last map before the round.
fn last_maps(pool: &Pool) -> HashMap<&str, &str> {
    let mut last: HashMap<&str, (chrono::DateTime<chrono::Utc>, &str)> = HashMap::new();
    for m in &pool.history {
        for id in m.teams.iter().flatten() {
            let e = last.entry(id.as_str()).or_insert((m.at, ""));
            if m.at >= e.0 {
                *e = (m.at, m.map.as_deref().unwrap_or(""));
            }
        }
    }
    last.into_iter().map(|(k, v)| (k, v.1)).collect()
}

fn placed(out: &RoundOutcome) -> usize {
    out.matches
        .iter()
        .map(|m| m.teams.iter().flatten().count())
        .sum()
}

#[test]
fn no_match_is_on_a_vetoed_map_and_few_replay_their_last_map() {
    let model = with_maps(crate::shipped_model("ranked_3v3"), 2);
    for seed in 1..=3 {
        let pool = pool_with_choices(300, seed);
        let out = solve(&pool, &model, &options(seed)).unwrap();
        let vetoes = vetoes_of(&pool);
        let last = last_maps(&pool);
        let (mut seats, mut replays) = (0usize, 0usize);
        for m in &out.matches {
            let map = m.map.as_deref().expect("every match has a map");
            assert!(MAPS.contains(&map), "{map}");
            assert_eq!(m.map_vetoed_by, 0, "no step relaxes vetoes");
            for id in m.teams.iter().flatten() {
                assert!(
                    !vetoes[id.as_str()].contains(&map),
                    "seed {seed}: {id} vetoed {map} and plays it"
                );
                seats += 1;
                replays += (last.get(id.as_str()) == Some(&map)) as usize;
            }
            assert!(m.factors.contains_key("maps"), "{:?}", m.factors);
        }
        // the vetoes cost few placements: the same pool without them places at most
        // one in thirty more (the pool's own limits, hosts and party shapes, are the
        // same for both)
        let mut free = pool.clone();
        for p in &mut free.players {
            p.attributes.clear();
        }
        let without = placed(&solve(&free, &model, &options(seed)).unwrap());
        assert!(
            placed(&out) * 30 >= without * 29 && placed(&out) * 10 >= pool.players.len() * 8,
            "seed {seed}: {} of {} placed, {without} without vetoes",
            placed(&out),
            pool.players.len()
        );
        // a map drawn at random would repeat one player in seven: at most half that
        assert!(
            replays * 14 <= seats,
            "seed {seed}: {replays} of {seats} players replay their last map"
        );
    }
}

#[test]
fn the_map_is_the_one_its_players_like_and_have_not_played() {
    let model = with_maps(QueueModel::default(), 1);
    let mut players: Vec<_> = (0..6).map(|i| player(&format!("p{i}"), 1500.0)).collect();
    for p in &mut players[..3] {
        p.attributes.insert("maps".into(), names(&[1, 2]));
    }
    players[3].attributes.insert("veto".into(), names(&[2]));
    let mut pool = pool_of(players);
    pool.history.push(PastMatch {
        teams: vec![
            vec!["p0".into(), "p1".into(), "p2".into()],
            vec!["p5".into()],
        ],
        at: "2026-11-21T19:40:00Z".parse().unwrap(),
        map: Some("Dust".into()),
    });
    let out = solve(&pool, &model, &quick()).unwrap();
    // Summit is vetoed; Harbor is liked by three and played by nobody lately
    assert_eq!(out.matches[0].map.as_deref(), Some("Harbor"));
    // three like it (1 point + fresh 1), three like every map (no preference)
    assert!((out.matches[0].factors["maps"] - 1.0).abs() < 1e-9);
}

/// Six maps; `a` players veto the first three, `b` players the last three.
fn clashing_pool(a: usize, b: usize) -> (Pool, QueueModel) {
    let mut model = with_maps(QueueModel::default(), 3);
    model.maps.pool.truncate(6);
    let mut players = Vec::new();
    for (prefix, count, vetoes) in [("a", a, [0, 1, 2]), ("b", b, [3, 4, 5])] {
        for i in 0..count {
            let mut p = player(&format!("{prefix}{i}"), 1500.0 + i as f64);
            p.attributes.insert("veto".into(), names(&vetoes));
            players.push(p);
        }
    }
    (pool_of(players), model)
}

#[test]
fn players_whose_vetoes_leave_no_map_are_left_over_saying_so() {
    // together the two groups veto every map: the round never mixes them
    let (pool, model) = clashing_pool(6, 6);
    let out = solve(&pool, &model, &quick()).unwrap();
    assert_eq!(out.matches.len(), 2);
    for m in &out.matches {
        let ids: Vec<&str> = m.teams.iter().flatten().map(String::as_str).collect();
        let a = ids.iter().filter(|id| id.starts_with('a')).count();
        assert!(a == 0 || a == 6, "{ids:?}");
    }
    // five b's: only the a's match forms, and the b's are told why
    let (pool, model) = clashing_pool(6, 5);
    let out = solve(&pool, &model, &quick()).unwrap();
    assert_eq!(out.matches.len(), 1);
    let left = explain_left_over(&pool, &model, &out).unwrap();
    assert_eq!(left.len(), 5);
    for l in &left {
        assert_eq!(l.kind, LeftOverKind::Vetoed, "{l:?}");
        assert!(
            l.reason.contains("they veto Canal, Foundry, Orchard"),
            "{}",
            l.reason
        );
    }
}

#[test]
fn a_floor_step_relaxes_vetoes_for_long_waits() {
    let mut model = with_maps(QueueModel::default(), 3);
    model.floors = vec![
        FloorStep::default(),
        FloorStep {
            after: Duration::from_secs(5 * 60),
            relax_vetoes: true,
            ..FloorStep::default()
        },
    ];
    // six players: three veto Dust, Harbor, Summit; two Canal, Foundry, Orchard; one
    // Canal, Foundry, Vault: every map is vetoed, Vault by one player only
    let now: chrono::DateTime<chrono::Utc> = "2026-11-21T20:00:00Z".parse().unwrap();
    let pool = |waited: i64| {
        let mut players = Vec::new();
        for i in 0..6 {
            let mut p = player(&format!("p{i}"), 1500.0);
            let v: &[usize] = if i < 3 { &[0, 1, 2] } else { &[3, 4, 5] };
            p.attributes.insert("veto".into(), names(v));
            p.enqueued_at = Some(now - chrono::Duration::minutes(waited));
            players.push(p);
        }
        players[5]
            .attributes
            .insert("veto".into(), names(&[3, 4, 6]));
        Pool {
            now: Some(now),
            ..pool_of(players)
        }
    };
    let young = solve(&pool(1), &model, &quick()).unwrap();
    assert!(young.matches.is_empty(), "{young:?}");
    let left = explain_left_over(&pool(1), &model, &young).unwrap();
    assert!(
        left.iter()
            .all(|l| l.kind == LeftOverKind::Vetoed && l.reason.contains("after 5m")),
        "{left:?}"
    );
    let old = solve(&pool(6), &model, &quick()).unwrap();
    assert_eq!(old.matches.len(), 1);
    let m = &old.matches[0];
    assert_eq!(m.map.as_deref(), Some("Vault"), "{m:?}");
    assert_eq!(m.map_vetoed_by, 1);
}

#[test]
fn names_outside_the_pool_are_ignored_and_a_bad_pool_is_refused() {
    let model = with_maps(QueueModel::default(), 1);
    let mut players: Vec<_> = (0..6).map(|i| player(&format!("p{i}"), 1500.0)).collect();
    players[0]
        .attributes
        .insert("veto".into(), Attribute::One("Retired".into()));
    let out = solve(&pool_of(players), &model, &quick()).unwrap();
    assert_eq!(out.matches.len(), 1);
    let mut bad = model.clone();
    bad.maps.vetoes = 7;
    let e = bad.validate().unwrap_err().to_string();
    assert!(e.contains("maps.vetoes"), "{e}");
    let mut bad = model.clone();
    bad.maps.pool.push("Dust".into());
    let e = bad.validate().unwrap_err().to_string();
    assert!(e.contains("listed twice"), "{e}");
    let bad = QueueModel {
        floors: vec![FloorStep {
            relax_vetoes: true,
            ..FloorStep::default()
        }],
        ..QueueModel::default()
    };
    let e = bad.validate().unwrap_err().to_string();
    assert!(e.contains("relax_vetoes"), "{e}");
}
