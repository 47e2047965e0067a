//! Score factors through the public API, with hand-computed values and the seeds'
//! worked examples (the AccelByte guide's combination and greedy tables, the Awesomenauts post's premade table,
//! Alman and McKay's imbalance function).

use matchmaker_optimizer::index::IndexedPool;
use matchmaker_optimizer::model::{
    CurveKind, Exponent, PingParams, SpreadMeasure, TeamSkill, Weights,
};
use matchmaker_optimizer::score::Scorer;
use matchmaker_optimizer::search::baselines::greedy_split;
use matchmaker_optimizer::{Network, PastMatch, Player, QueueModel, RoundOutcome, Strategy, solve};

use super::contract::{player, pool_of, quick};

fn only(f: impl FnOnce(&mut Weights)) -> Weights {
    let mut w = Weights {
        equal_teams: 0.0,
        equal_players: 0.0,
        indistinguishable_teams: 0.0,
        premades: 0.0,
        enemy_ping: 0.0,
        opponent_variation: 0.0,
        two_hosts: 0.0,
        side_preference: 0.0,
        roles: 0.0,
        predicted_fairness: 0.0,
        member_count_difference: 0.0,
        language: 0.0,
        maps: 0.0,
    };
    f(&mut w);
    w
}

fn solve_one(players: Vec<Player>, model: &QueueModel) -> RoundOutcome {
    solve(&pool_of(players), model, &quick()).unwrap()
}

fn team_sets(out: &RoundOutcome, m: usize) -> Vec<Vec<String>> {
    let mut t: Vec<Vec<String>> = out.matches[m]
        .teams
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t.sort();
            t
        })
        .collect();
    t.sort();
    t
}

#[test]
fn alman_mckay_imbalance_is_reachable_exactly() {
    let skills = [1210.0, 1530.0, 1480.0, 1904.0, 1333.0, 1702.0];
    let s = 1.0e5;
    for (p, q, alpha) in [
        (1.0, 2.0, 1.0),
        (2.0, 1.0, 3.0),
        (f64::INFINITY, 3.0, 0.5),
        (3.0, f64::INFINITY, 2.0),
    ] {
        let mut model = QueueModel {
            weights: only(|w| {
                w.equal_teams = alpha;
                w.equal_players = 1.0;
            }),
            ..QueueModel::default()
        };
        model.equal_teams.team_skill = TeamSkill::Norm;
        model.equal_teams.p = Exponent(p);
        model.equal_teams.curve.scale = s;
        model.equal_players.measure = SpreadMeasure::Uniformity;
        model.equal_players.q = Exponent(q);
        model.equal_players.curve.scale = s;
        // Alman and McKay's f, minimised over the 10 splits by hand
        let norm = |t: &[f64]| {
            if p.is_infinite() {
                t.iter().copied().fold(f64::MIN, f64::max)
            } else {
                t.iter().map(|x| x.powf(p)).sum::<f64>().powf(1.0 / p)
            }
        };
        let mean = skills.iter().sum::<f64>() / 6.0;
        let vq = if q.is_infinite() {
            skills.iter().map(|x| (x - mean).abs()).fold(0.0, f64::max)
        } else {
            (skills.iter().map(|x| (x - mean).abs().powf(q)).sum::<f64>() / 6.0).powf(1.0 / q)
        };
        let mut best_f = f64::MAX;
        for a in 1..6 {
            for b in a + 1..6 {
                let x = [skills[0], skills[a], skills[b]];
                let y: Vec<f64> = (1..6)
                    .filter(|&i| i != a && i != b)
                    .map(|i| skills[i])
                    .collect();
                best_f = best_f.min(alpha * (norm(&x) - norm(&y)).abs() + vq);
            }
        }
        let players = skills
            .iter()
            .enumerate()
            .map(|(i, &s)| player(&format!("p{i}"), s))
            .collect();
        let out = solve_one(players, &model);
        let expected = 1.0 - best_f / (s * (1.0 + alpha));
        assert!(
            (out.matches[0].score - expected).abs() < 1e-12,
            "p={p} q={q}: {} vs {expected}",
            out.matches[0].score
        );
    }
}

#[test]
fn seed_002_combination_example_best_split() {
    // A 70, party {B, C} 60 each, D 40, E 40, F 10; balanced by team mean difference
    let mut p = vec![
        player("A", 70.0),
        player("B", 60.0),
        player("C", 60.0),
        player("D", 40.0),
        player("E", 40.0),
        player("F", 10.0),
    ];
    p[1].party = Some("2".into());
    p[2].party = Some("2".into());
    let model = QueueModel {
        weights: only(|w| w.equal_teams = 1.0),
        ..QueueModel::default()
    };
    let out = solve_one(p, &model);
    // the table's smallest MMR distance, 6.66: {A, D, E} vs {B, C, F}
    assert_eq!(
        team_sets(&out, 0),
        vec![vec!["A", "D", "E"], vec!["B", "C", "F"]]
    );
    let d = 150.0 / 3.0 - 130.0 / 3.0;
    assert!((out.matches[0].score - (1.0 - d / 300.0)).abs() < 1e-12);
}

#[test]
fn seed_002_greedy_example_reproduced() {
    let spec: [(&str, Option<&str>, f64); 14] = [
        ("A", None, 70.0),
        ("B", Some("2"), 40.0),
        ("C", Some("2"), 40.0),
        ("D", None, 40.0),
        ("E", None, 60.0),
        ("F", None, 50.0),
        ("G", Some("6"), 70.0),
        ("H", Some("6"), 70.0),
        ("I", Some("7"), 60.0),
        ("J", Some("7"), 60.0),
        ("K", Some("7"), 60.0),
        ("L", Some("8"), 50.0),
        ("M", Some("8"), 50.0),
        ("N", Some("8"), 50.0),
    ];
    let players: Vec<Player> = spec
        .iter()
        .map(|(id, party, s)| Player {
            party: party.map(String::from),
            ..player(id, *s)
        })
        .collect();
    let model = QueueModel {
        team_size: 7,
        weights: only(|w| w.equal_teams = 1.0),
        ..QueueModel::default()
    };
    let pool = pool_of(players.clone());
    let ix = IndexedPool::build(&pool, &model).unwrap();
    let sc = Scorer::new(&ix, &model);
    let units: Vec<u32> = (0..ix.units.len() as u32).collect();
    let assign = greedy_split(&sc, &units).unwrap();
    let mut teams = vec![Vec::new(), Vec::new()];
    for (k, &u) in units.iter().enumerate() {
        for &p in &ix.units[u as usize].members {
            teams[assign[k] as usize].push(ix.ids[p as usize].clone());
        }
    }
    for t in &mut teams {
        t.sort();
    }
    assert_eq!(teams[0], ["A", "B", "C", "F", "I", "J", "K"]);
    assert_eq!(teams[1], ["D", "E", "G", "H", "L", "M", "N"]);
    // and the greedy strategy reports that split
    let out = solve(
        &pool,
        &model,
        &matchmaker_optimizer::SolveOptions {
            strategy: Strategy::Greedy,
            ..quick()
        },
    )
    .unwrap();
    let mut got = team_sets(&out, 0);
    got.sort();
    let mut want = teams.clone();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn seed_003_premade_table_through_the_solver() {
    let model = QueueModel {
        weights: only(|w| w.premades = 1.0),
        ..QueueModel::default()
    };
    let with_parties = |parties: &[(usize, &str)]| {
        let mut p: Vec<Player> = (0..6).map(|i| player(&format!("p{i}"), 1500.0)).collect();
        for &(i, g) in parties {
            p[i].party = Some(g.into());
        }
        solve_one(p, &model).matches[0].factors["premades"]
    };
    // 3-premade vs 3 solos: big difference
    assert_eq!(with_parties(&[(0, "a"), (1, "a"), (2, "a")]), 0.0);
    // 3-premade vs 2-premade + solo: small difference
    assert_eq!(
        with_parties(&[(0, "a"), (1, "a"), (2, "a"), (3, "b"), (4, "b")]),
        0.6
    );
    // same structure on both sides
    assert_eq!(
        with_parties(&[(0, "a"), (1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "b")]),
        1.0
    );
    // two 2-premades: the split puts one on each side
    assert_eq!(with_parties(&[(0, "a"), (1, "a"), (2, "b"), (3, "b")]), 1.0);
}

#[test]
fn opponent_variation_prefers_the_swapped_relation() {
    let model = QueueModel {
        weights: only(|w| w.opponent_variation = 1.0),
        ..QueueModel::default()
    };
    let mut pool = pool_of((1..=6).map(|i| player(&format!("p{i}"), 1500.0)).collect());
    pool.history = vec![PastMatch {
        teams: vec![
            vec!["p1".into(), "p2".into(), "p3".into()],
            vec!["p4".into(), "p5".into(), "p6".into()],
        ],
        at: "2026-11-21T19:40:00Z".parse().unwrap(),
        map: None,
    }];
    let out = solve(&pool, &model, &quick()).unwrap();
    // replaying the old teams costs all 15 pairs (score 0); any other split moves one
    // player each way: 7 pairs keep their relation (cost 1), 8 swap it (cost 0.7)
    let expected = 1.0 - (7.0 + 8.0 * 0.7) / 15.0;
    assert!((out.matches[0].factors["opponent_variation"] - expected).abs() < 1e-6);
    assert_ne!(
        team_sets(&out, 0),
        vec![vec!["p1", "p2", "p3"], vec!["p4", "p5", "p6"]]
    );
}

#[test]
fn ping_estimate_hosts_and_region() {
    // unknown pings: ping.unknown_ms (150) for every pair
    let model = QueueModel {
        weights: only(|w| w.enemy_ping = 1.0),
        ..QueueModel::default()
    };
    let out = solve_one(
        (0..6).map(|i| player(&format!("p{i}"), 1500.0)).collect(),
        &model,
    );
    let ping = PingParams::default();
    assert!((out.matches[0].factors["enemy_ping"] - ping.score(150.0)).abs() < 1e-6);

    // relay estimate: 30 + 40 ms through eu-west, better than 100 + 120 via us-east
    let model = QueueModel {
        teams: 2,
        team_size: 1,
        weights: only(|w| w.enemy_ping = 1.0),
        ..QueueModel::default()
    };
    let mut a = player("a", 1500.0);
    a.latencies = [
        ("eu-west".to_string(), 30.0),
        ("us-east".to_string(), 100.0),
    ]
    .into();
    let mut b = player("b", 1500.0);
    b.latencies = [
        ("eu-west".to_string(), 40.0),
        ("us-east".to_string(), 120.0),
    ]
    .into();
    let out = solve_one(vec![a.clone(), b.clone()], &model);
    assert!((out.matches[0].factors["enemy_ping"] - ping.score(70.0)).abs() < 1e-6);

    // dedicated: the region minimising the worst latency, scored per player
    let dedicated = QueueModel {
        network: Network::Dedicated,
        ..model.clone()
    };
    b.latencies = [
        ("eu-west".to_string(), 120.0),
        ("us-east".to_string(), 50.0),
    ]
    .into();
    let out = solve_one(vec![a, b], &dedicated);
    assert_eq!(out.matches[0].region.as_deref(), Some("us-east"));
    let expected = (ping.score(100.0) + ping.score(50.0)) / 2.0;
    assert!((out.matches[0].factors["enemy_ping"] - expected).abs() < 1e-6);
    assert!(out.matches[0].hosts.is_none());

    // hosts: only p1 reaches everyone within 150 ms
    let model = QueueModel {
        weights: only(|w| w.two_hosts = 1.0),
        ..QueueModel::default()
    };
    let mut p: Vec<Player> = (1..=6).map(|i| player(&format!("p{i}"), 1500.0)).collect();
    for (i, x) in p.iter_mut().enumerate() {
        for j in 0..6 {
            if i != j {
                x.peer_pings.insert(format!("p{}", j + 1), 50.0);
            }
        }
    }
    for (x, y) in [(1, 2), (3, 4), (5, 1)] {
        p[x].peer_pings.insert(format!("p{}", y + 1), 300.0);
        p[y].peer_pings.insert(format!("p{}", x + 1), 300.0);
    }
    let out = solve_one(p, &model);
    assert_eq!(
        out.matches[0].hosts.as_deref(),
        Some(&["p1".to_string()][..])
    );
    assert_eq!(out.matches[0].factors["two_hosts"], 0.5);
}

#[test]
fn side_orientation_meets_preferences() {
    let model = QueueModel {
        team_size: 1,
        weights: only(|w| w.side_preference = 1.0),
        ..QueueModel::default()
    };
    let mut a = player("a", 1500.0);
    a.side = Some(1.0);
    let mut b = player("b", 1500.0);
    b.side = Some(0.0);
    let out = solve_one(vec![a, b], &model);
    assert_eq!(
        out.matches[0].teams,
        vec![vec!["b".to_string()], vec!["a".to_string()]]
    );
    assert!((out.matches[0].factors["side_preference"] - 1.0).abs() < 1e-12);
}

#[test]
fn predicted_fairness_and_indistinguishable_teams() {
    let model = QueueModel {
        weights: only(|w| {
            w.predicted_fairness = 1.0;
            w.indistinguishable_teams = 1.0;
        }),
        ..QueueModel::default()
    };
    // 1400, 1500, 1600 twice: the mirror split has identical teams
    let skills = [1400.0, 1500.0, 1600.0, 1400.0, 1500.0, 1600.0];
    let p = skills
        .iter()
        .enumerate()
        .map(|(i, &s)| player(&format!("p{i}"), s))
        .collect();
    let out = solve_one(p, &model);
    assert!((out.matches[0].factors["predicted_fairness"] - 1.0).abs() < 1e-12);
    assert!((out.matches[0].factors["indistinguishable_teams"] - 1.0).abs() < 1e-12);
}

#[test]
fn round_score_power_mean() {
    let model = QueueModel {
        team_size: 1,
        round_score_power: 0.5,
        weights: only(|w| w.equal_teams = 1.0),
        ..QueueModel::default()
    };
    let mut m = model.clone();
    m.equal_teams.curve.kind = CurveKind::Linear;
    let p = vec![
        player("a", 1000.0),
        player("b", 1030.0),
        player("c", 2000.0),
        player("d", 2150.0),
    ];
    let out = solve_one(p, &m);
    let s: Vec<f64> = out.matches.iter().map(|x| x.score).collect();
    let expected = ((s[0].sqrt() + s[1].sqrt()) / 2.0).powi(2);
    assert!((out.score - expected).abs() < 1e-12);
    assert!(
        (s[0] - 0.5).abs() < 1e-12 && (s[1] - 0.9).abs() < 1e-12,
        "{s:?}"
    );
}

#[test]
fn overdue_players_are_placed_and_long_waits_preferred() {
    let now: chrono::DateTime<chrono::Utc> = "2026-11-21T20:00:00Z".parse().unwrap();
    let ago = |min: i64| Some(now - chrono::Duration::minutes(min));
    // seven similar players and one far outlier who has waited past max_wait (10m):
    // the outlier must be placed even though leaving them out scores better
    let mut p: Vec<Player> = (1..=7)
        .map(|i| player(&format!("p{i}"), 1500.0 + i as f64))
        .collect();
    for x in &mut p {
        x.enqueued_at = ago(2);
    }
    let mut outlier = player("late", 2600.0);
    outlier.enqueued_at = ago(12);
    p.push(outlier);
    let mut pool = pool_of(p);
    pool.now = Some(now);
    let out = solve(&pool, &QueueModel::default(), &quick()).unwrap();
    assert!(out.matches[0].teams.iter().flatten().any(|id| id == "late"));
    assert_eq!(out.unmatched.len(), 2);

    // identical players: the one who waited least stays unmatched (Alman and McKay's g)
    let mut p: Vec<Player> = (1..=7).map(|i| player(&format!("p{i}"), 1500.0)).collect();
    for (i, x) in p.iter_mut().enumerate() {
        x.enqueued_at = ago(if i == 3 { 1 } else { 8 });
    }
    let mut pool = pool_of(p);
    pool.now = Some(now);
    let out = solve(&pool, &QueueModel::default(), &quick()).unwrap();
    assert_eq!(out.unmatched, vec!["p4".to_string()]);
}
