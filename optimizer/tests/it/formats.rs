//! Flexible formats (the AccelByte guide's alliance rule): a smaller match forms only when its
//! score, with the member-count difference weighted, reaches the value of leaving its
//! players; fixed-format queues score exactly as before; the exhaustive split covers
//! teams of unequal size; small flexible pools are solved to the exact optimum
//! (brute force over every partition of the pool into matches of every format).

use std::collections::HashMap;

use matchmaker_optimizer::index::IndexedPool;
use matchmaker_optimizer::score::Scorer;
use matchmaker_optimizer::{Budget, Network, Pool, QueueModel, RoundOutcome, SolveOptions, solve};
use matchmaker_population::population::{Population, PopulationSpec};

use super::contract::{player, pool_of, quick};

fn generate(spec: &PopulationSpec, seed: u64) -> Pool {
    static POPULATION: std::sync::OnceLock<Population> = std::sync::OnceLock::new();
    POPULATION
        .get_or_init(Population::realistic)
        .generate_pool(spec, seed)
}

/// A 5v5 queue that may also play 5v4 and 4v4, scored by equal teams and the member
/// count difference only.
fn flexible_5v5(member_weight: f64, min_score: f64) -> QueueModel {
    let toml = format!(
        "teams = 2\nteam_size = 5\nnetwork = \"dedicated\"\n\
         [weights]\nequal_teams = 1.0\nequal_players = 0.0\npremades = 0.0\nenemy_ping = 0.0\n\
         opponent_variation = 0.0\ntwo_hosts = 0.0\nmember_count_difference = {member_weight}\n\
         [alliance]\nplayer_min_number = 4\nshort_match_min_score = {min_score}\n"
    );
    let m: QueueModel = toml::from_str(&toml).unwrap();
    m.validate().unwrap();
    m
}

fn nine_close_players() -> Pool {
    pool_of(
        (0..9)
            .map(|i| player(&format!("p{i}"), 1500.0 + 3.0 * i as f64))
            .collect(),
    )
}

fn team_sizes(out: &RoundOutcome) -> Vec<Vec<usize>> {
    out.matches
        .iter()
        .map(|m| m.teams.iter().map(|t| t.len()).collect())
        .collect()
}

fn factor(out: &RoundOutcome, m: usize, name: &str) -> f64 {
    out.matches[m].factors[name]
}

#[test]
fn a_flexible_5v5_forms_a_4v5_only_when_the_score_says_so() {
    let pool = nine_close_players();
    // a light member-count weight: 4v5 scores (f_et + 0.1 x 0.8) / 1.1 > 0.9
    let light = solve(&pool, &flexible_5v5(0.1, 0.9), &quick()).unwrap();
    assert_eq!(team_sizes(&light), [vec![5, 4]], "{light:?}");
    assert!(light.unmatched.is_empty());
    let et = factor(&light, 0, "equal_teams");
    assert_eq!(factor(&light, 0, "member_count_difference"), 0.8);
    let expected = (et + 0.1 * 0.8) / 1.1;
    assert!((light.matches[0].score - expected).abs() < 1e-12);
    assert!(light.matches[0].score >= 0.9);
    // a heavy one: (f_et + 4 x 0.8) / 5 < 0.9: no 4v5; the queue's 4v4 (member count
    // factor 1) still beats leaving eight of them, and one waits for the next round
    let heavy = solve(&pool, &flexible_5v5(4.0, 0.9), &quick()).unwrap();
    assert_eq!(team_sizes(&heavy), [vec![4, 4]], "{heavy:?}");
    assert_eq!(heavy.unmatched.len(), 1);
    assert!((et + 4.0 * 0.8) / 5.0 < 0.9);
    // with ten players the full 5v5 forms whatever the member-count weight
    let mut ten = nine_close_players();
    ten.players.push(player("p9", 1530.0));
    let full = solve(&ten, &flexible_5v5(4.0, 0.9), &quick()).unwrap();
    assert_eq!(team_sizes(&full), [vec![5, 5]]);
    assert_eq!(factor(&full, 0, "member_count_difference"), 1.0);
    // and a fixed 5v5 queue never forms a 4v5
    let fixed = QueueModel {
        alliance: Default::default(),
        ..flexible_5v5(0.1, 0.0)
    };
    let out = solve(&pool, &fixed, &quick()).unwrap();
    assert!(out.matches.is_empty() && out.unmatched.len() == 9);
}

#[test]
fn nineteen_players_make_a_5v5_and_a_4v5() {
    let mut pool = nine_close_players();
    for i in 9..19 {
        pool.players
            .push(player(&format!("p{i}"), 1500.0 + 3.0 * i as f64));
    }
    let out = solve(&pool, &flexible_5v5(0.1, 0.5), &quick()).unwrap();
    let mut sizes = team_sizes(&out);
    sizes.sort();
    assert_eq!(sizes, [vec![5, 4], vec![5, 5]]);
    assert!(out.unmatched.is_empty());
}

#[test]
fn fixed_format_queues_score_exactly_as_before() {
    let spec = PopulationSpec {
        players: 60,
        ..PopulationSpec::default()
    };
    let pool = generate(&spec, 77);
    let options = SolveOptions {
        budget: Budget::Restarts(2),
        moves_per_restart: Some(5_000),
        threads: Some(1),
        ..SolveOptions::default()
    };
    let base = solve(&pool, &QueueModel::default(), &options).unwrap();
    // the member-count weight and an alliance that restates the format change nothing
    let mut restated = QueueModel::default();
    restated.weights.member_count_difference = 7.0;
    restated.alliance.min_number = Some(2);
    restated.alliance.player_min_number = Some(3);
    restated.alliance.short_match_min_score = 0.5;
    restated.validate().unwrap();
    assert!(!restated.is_flexible());
    let again = solve(&pool, &restated, &options).unwrap();
    assert_eq!(base.matches.len(), again.matches.len());
    for (a, b) in base.matches.iter().zip(&again.matches) {
        assert_eq!(a.teams, b.teams);
        assert_eq!(a.score.to_bits(), b.score.to_bits());
        assert_eq!(a.factors, b.factors);
        assert!(!a.factors.contains_key("member_count_difference"));
    }
    assert_eq!(base.score.to_bits(), again.score.to_bits());
    assert_eq!(base.unmatched, again.unmatched);
}

/// The best split of a 5v4 (with parties) is the best of every assignment of its
/// units to a team of 5 and a team of 4.
#[test]
fn the_exhaustive_split_covers_unequal_teams() {
    let model: QueueModel = toml::from_str(
        "teams = 2\nteam_size = 5\n[weights]\nindistinguishable_teams = 1.0\n\
         side_preference = 1.0\npredicted_fairness = 1.0\n\
         [alliance]\nplayer_min_number = 4\n",
    )
    .unwrap();
    model.validate().unwrap();
    let mut checked = 0;
    for seed in 0..40u64 {
        let spec = PopulationSpec {
            players: 9,
            side_share: 0.5,
            network: Network::PeerToPeer,
            ..PopulationSpec::default()
        };
        let pool = generate(&spec, 500 + seed);
        let ix = IndexedPool::build(&pool, &model).unwrap();
        let sc = Scorer::for_format(&ix, &model, &[5, 4]);
        let units: Vec<u32> = (0..ix.units.len() as u32).collect();
        let e = sc.evaluate(&units);
        let sizes: Vec<usize> = units.iter().map(|&u| ix.units[u as usize].size()).collect();
        let mut best = f64::NEG_INFINITY;
        for mask in 0u32..(1 << units.len()) {
            let in_first: usize = (0..units.len())
                .filter(|&k| mask & (1 << k) != 0)
                .map(|k| sizes[k])
                .sum();
            if in_first != 5 {
                continue;
            }
            let teams: Vec<u8> = (0..units.len())
                .map(|k| u8::from(mask & (1 << k) == 0))
                .collect();
            let fixed = sc.evaluate_fixed(&units, &teams).expect("a 5 and a 4");
            best = best.max(fixed.score);
        }
        if best == f64::NEG_INFINITY {
            assert!(!e.feasible, "seed {seed}: no 5 + 4 split, yet feasible");
            continue;
        }
        assert!(e.feasible);
        assert!(
            (e.score - best).abs() < 1e-12,
            "seed {seed}: {} vs {best}",
            e.score
        );
        let d = sc.describe(&units, &e);
        let mut t: Vec<usize> = d.teams.iter().map(|t| t.len()).collect();
        t.sort();
        assert_eq!(t, [4, 5]);
        assert!((d.score - e.score).abs() < 1e-12);
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} pools had a 5 + 4 split");
}

/// (full: overdue, matches, quality; smaller: overdue, players, quality)
type Value = (i64, i64, f64, i64, i64, f64);

fn add(a: Value, b: Value) -> Value {
    (
        a.0 + b.0,
        a.1 + b.1,
        a.2 + b.2,
        a.3 + b.3,
        a.4 + b.4,
        a.5 + b.5,
    )
}

fn better(a: Value, b: Value) -> bool {
    let cmp =
        a.0.cmp(&b.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.total_cmp(&b.2))
            .then(a.3.cmp(&b.3))
            .then(a.4.cmp(&b.4))
            .then(a.5.total_cmp(&b.5));
    cmp == std::cmp::Ordering::Greater
}

/// Exact optimum over every partition of the pool's units into full and smaller
/// matches (dynamic program over unit subsets), under the flexible objective: full
/// matches first (overdue, count, quality), then the smaller ones (overdue, players,
/// quality), each smaller match at least `min_score`; a match nobody can host counts for
/// nothing (the host rule), so it is never a candidate.
fn brute_force(
    scorers: &[Scorer],
    min_score: f64,
    nu: usize,
    size: &dyn Fn(usize) -> usize,
) -> Value {
    let mut groups: Vec<Vec<(u32, Value)>> = vec![Vec::new(); nu];
    for (f, sc) in scorers.iter().enumerate() {
        let per = sc.players_per_match();
        let mut all = Vec::new();
        fn rec(
            start: usize,
            nu: usize,
            left: usize,
            cur: &mut Vec<u32>,
            size: &dyn Fn(usize) -> usize,
            out: &mut Vec<Vec<u32>>,
        ) {
            if left == 0 {
                out.push(cur.clone());
                return;
            }
            for u in start..nu {
                if size(u) <= left {
                    cur.push(u as u32);
                    rec(u + 1, nu, left - size(u), cur, size, out);
                    cur.pop();
                }
            }
        }
        rec(0, nu, per, &mut Vec::new(), size, &mut all);
        for g in all {
            let e = sc.evaluate(&g);
            if !e.feasible || !e.allowed || (f > 0 && e.score < min_score) {
                continue;
            }
            let v = if f == 0 {
                (e.overdue as i64, 1, e.quality, 0, 0, 0.0)
            } else {
                (0, 0, 0.0, e.overdue as i64, per as i64, e.quality)
            };
            let mask = g.iter().fold(0u32, |m, &u| m | (1 << u));
            groups[g[0] as usize].push((mask, v));
        }
    }
    fn best(s: u32, groups: &[Vec<(u32, Value)>], memo: &mut HashMap<u32, Value>) -> Value {
        if s == 0 {
            return (0, 0, 0.0, 0, 0, 0.0);
        }
        if let Some(&v) = memo.get(&s) {
            return v;
        }
        let low = s.trailing_zeros() as usize;
        let mut b = best(s & !(1 << low), groups, memo);
        for &(m, v) in &groups[low] {
            if m & s == m {
                let cand = add(best(s & !m, groups, memo), v);
                if better(cand, b) {
                    b = cand;
                }
            }
        }
        memo.insert(s, b);
        b
    }
    best(((1u64 << nu) - 1) as u32, &groups, &mut HashMap::new())
}

#[test]
fn small_flexible_pools_are_solved_to_the_exact_optimum() {
    // 3v3 that may also play 3v2 and 2v2
    let mut model: QueueModel =
        toml::from_str("[alliance]\nplayer_min_number = 2\nshort_match_min_score = 0.6\n").unwrap();
    model.wait_priority_per_minute = 0.0;
    model.validate().unwrap();
    let formats = model.formats();
    assert_eq!(formats, [vec![3, 3], vec![3, 2], vec![2, 2]]);
    let (mut exact, mut short_seen) = (0, 0);
    // Debug builds (the solver's own checks on) solve a third of the pools.
    let total: u64 = if cfg!(debug_assertions) { 40 } else { 120 };
    for seed in 0..total {
        let players = 4 + (seed as usize * 7) % 13; // 4..=16
        let spec = PopulationSpec {
            players,
            ..PopulationSpec::default()
        };
        let pool = generate(&spec, 3_000 + seed);
        let ix = IndexedPool::build(&pool, &model).unwrap();
        let scorers: Vec<Scorer> = formats
            .iter()
            .map(|f| Scorer::for_format(&ix, &model, f))
            .collect();
        let size = |u: usize| ix.units[u].size();
        let want = brute_force(&scorers, 0.6, ix.units.len(), &size);
        let options = SolveOptions {
            budget: Budget::Restarts(8),
            moves_per_restart: Some(6_000),
            threads: Some(2),
            seed,
            ..SolveOptions::default()
        };
        let out = solve(&pool, &model, &options).unwrap();
        let (mut full, mut full_q, mut short_players, mut short_q) = (0i64, 0.0, 0i64, 0.0);
        for m in &out.matches {
            let sizes: Vec<usize> = m.teams.iter().map(|t| t.len()).collect();
            if sizes == [3, 3] {
                full += 1;
                full_q += m.score;
            } else {
                assert!(
                    m.score >= 0.6,
                    "seed {seed}: a smaller match below the minimum"
                );
                short_players += sizes.iter().sum::<usize>() as i64;
                short_q += m.score;
            }
        }
        short_seen += usize::from(short_players > 0);
        assert_eq!(full, want.1, "seed {seed}: full matches");
        assert!(full_q <= want.2 + 1e-9, "seed {seed}: beats brute force");
        let same_full = (full_q - want.2).abs() < 1e-9;
        if same_full {
            assert_eq!(
                short_players, want.4,
                "seed {seed}: players in smaller matches"
            );
            assert!(short_q <= want.5 + 1e-9, "seed {seed}: beats brute force");
        }
        if same_full && (short_q - want.5).abs() < 1e-9 {
            exact += 1;
        } else {
            eprintln!(
                "seed {seed}: {players} players: got {full} {full_q} {short_players} {short_q}, optimum {want:?}"
            );
        }
        let placed: usize = out
            .matches
            .iter()
            .flat_map(|m| &m.teams)
            .map(|t| t.len())
            .sum();
        assert_eq!(placed + out.unmatched.len() + out.rejected.len(), players);
    }
    assert!(
        short_seen as u64 * 6 >= total,
        "only {short_seen} of {total} pools formed a smaller match"
    );
    assert!(
        exact * 100 >= total * 97,
        "exact optimum on {exact} of {total} pools"
    );
}
