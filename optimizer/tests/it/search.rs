//! The search: delta scoring equals the from-scratch score, every strategy produces
//! valid rounds (proptest), results do not depend on the thread count, and small pools
//! are solved to the exact optimum (checked against brute-force enumeration).

use std::collections::{BTreeMap, HashMap, HashSet};

use proptest::prelude::*;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use matchmaker_optimizer::index::IndexedPool;
use matchmaker_optimizer::model::TeamSkill;
use matchmaker_optimizer::score::Scorer;
use matchmaker_optimizer::search::{construct, moves, state::Scratch};
use matchmaker_optimizer::{
    Budget, MatchOutcome, PastMatch, Pool, QueueModel, RoleMode, RoundOutcome, SolveOptions,
    Strategy, solve,
};
use matchmaker_population::population::{Population, PopulationSpec};

fn generate(spec: &PopulationSpec, seed: u64) -> Pool {
    static POPULATION: std::sync::OnceLock<Population> = std::sync::OnceLock::new();
    POPULATION
        .get_or_init(Population::realistic)
        .generate_pool(spec, seed)
}

fn with_history(mut pool: Pool) -> Pool {
    // a few past matches among the pool's players
    let ids: Vec<String> = pool.players.iter().map(|p| p.id.clone()).collect();
    for k in 0..ids.len() / 12 {
        let t: Vec<String> = ids[k * 6..k * 6 + 6].to_vec();
        pool.history.push(PastMatch {
            teams: vec![t[..3].to_vec(), t[3..].to_vec()],
            at: "2026-11-21T19:30:00Z".parse().unwrap(),
            map: None,
        });
    }
    pool
}

/// Score random moves by delta, apply them, and compare with the from-scratch score.
fn delta_walk(pool: &Pool, model: &QueueModel, fast: bool) {
    let ix = IndexedPool::build(pool, model).unwrap();
    let sc = Scorer::new(&ix, model);
    assert_eq!(sc.is_fast(), fast);
    let mut st = construct::cut(&sc, &construct::skill_order(&sc));
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let mut scratch = Scratch::default();
    let mut mv = moves::Exchange::default();
    let mut checked = 0;
    // Debug builds (the solver's own checks on) walk a fifth as far.
    let tries = if cfg!(debug_assertions) { 600 } else { 3_000 };
    for _ in 0..tries {
        if !moves::random_exchange(&sc, &st, &mut rng, &mut mv) {
            continue;
        }
        let Some(s) = st.score_exchange(&sc, mv.a, &mv.a_out, mv.b, &mv.b_out, &mut scratch) else {
            continue;
        };
        let before = st.full_value(&sc);
        let mut after = st.clone();
        after.apply_exchange(&sc, mv.a, &mv.a_out, mv.b, &mv.b_out, &s, &mut scratch);
        let full = after.full_value(&sc);
        assert_eq!(full.matches - before.matches, s.delta.matches);
        assert_eq!(full.overdue - before.overdue, s.delta.overdue);
        assert!((full.quality - before.quality - s.delta.quality).abs() < 1e-9);
        assert!((after.value.quality - full.quality).abs() < 1e-9);
        checked += 1;
        // walk: keep about half of the moves
        if checked % 2 == 0 {
            st = after;
        }
    }
    assert!(checked > tries / 3, "only {checked} moves scored");
}

#[test]
fn delta_equals_full_on_random_moves() {
    let spec = PopulationSpec {
        players: if cfg!(debug_assertions) { 60 } else { 150 },
        side_share: 0.5,
        ..PopulationSpec::default()
    };
    let pool = with_history(generate(&spec, 11));
    // the general split path
    let mut model = QueueModel::default();
    model.weights.side_preference = 0.5;
    model.weights.indistinguishable_teams = 0.5;
    model.weights.predicted_fairness = 0.5;
    delta_walk(&pool, &model, false);
    // the fast path's incremental rows: default weights, with history; 5v5 dedicated
    delta_walk(&pool, &QueueModel::default(), true);
    let five = QueueModel {
        team_size: 5,
        network: matchmaker_optimizer::model::Network::Dedicated,
        ..QueueModel::default()
    };
    delta_walk(&pool, &five, true);
    // every compiled row size of the fast path, peer-to-peer (the pool's parties of 3
    // are rejected in 2v2)
    for team_size in [1, 2, 4, 5, 8] {
        let model = QueueModel {
            team_size,
            ..QueueModel::default()
        };
        delta_walk(&pool, &model, true);
    }
}

/// The early rejection is exact: a move the bound rejects (`Verdict::Below`) scores
/// below the threshold when scored in full, and a move it lets through is scored
/// exactly. Thresholds are drawn around each move's exact delta, so both verdicts occur.
#[test]
fn the_bound_rejects_only_moves_below_the_threshold() {
    use matchmaker_optimizer::search::state::Verdict;
    use rand::RngExt;
    let pool = with_history(generate(
        &PopulationSpec {
            players: 150,
            ..PopulationSpec::default()
        },
        12,
    ));
    let dedicated = QueueModel {
        team_size: 5,
        network: matchmaker_optimizer::model::Network::Dedicated,
        ..QueueModel::default()
    };
    for model in [
        QueueModel::default(),
        QueueModel {
            team_size: 2,
            ..QueueModel::default()
        },
        dedicated,
    ] {
        let ix = IndexedPool::build(&pool, &model).unwrap();
        let sc = Scorer::new(&ix, &model);
        assert!(sc.is_fast());
        // cut within regions: a skill-only cut of the world's players makes many matches
        // nobody can host, and a move on one of those is never bounded (it may gain a
        // match)
        let st = construct::cut(&sc, &construct::region_order(&sc));
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
        let mut scratch = Scratch::default();
        let mut mv = moves::Exchange::default();
        let (mut below, mut scored) = (0, 0);
        for _ in 0..4_000 {
            if !moves::random_exchange(&sc, &st, &mut rng, &mut mv) {
                continue;
            }
            let Some(exact) =
                st.score_exchange(&sc, mv.a, &mv.a_out, mv.b, &mv.b_out, &mut scratch)
            else {
                continue;
            };
            let d = exact.delta;
            // thresholds from well below to well above the exact delta
            let t = d.quality + rng.random_range(-0.05..0.05);
            match st.score_exchange_above(&sc, mv.a, &mv.a_out, mv.b, &mv.b_out, t, &mut scratch) {
                Verdict::Below => {
                    // below the threshold in the objective's order: fewer overdue
                    // players or matches (a match that loses its last host counts for
                    // nothing), or the same and a lower quality
                    assert!(
                        d.overdue < 0
                            || (d.overdue == 0
                                && (d.matches < 0 || (d.matches == 0 && d.quality < t))),
                        "{d:?} vs {t}"
                    );
                    below += 1;
                }
                Verdict::Scored(s) => {
                    // (the sides may be added in the other order)
                    assert!(s.delta.overdue == d.overdue && s.delta.matches == d.matches);
                    assert!((s.delta.quality - d.quality).abs() < 1e-12);
                    scored += 1;
                }
                Verdict::Infeasible => panic!("a move that scored became infeasible"),
            }
        }
        assert!(
            below > 100 && scored > 100,
            "below {below}, scored {scored}"
        );
    }
}

#[test]
fn fast_split_path_equals_the_general_path() {
    let pool = with_history(generate(
        &PopulationSpec {
            players: 120,
            ..PopulationSpec::default()
        },
        4,
    ));
    for team_skill in [TeamSkill::Mean, TeamSkill::Norm] {
        let mut model = QueueModel::default();
        model.equal_teams.team_skill = team_skill;
        let ix = IndexedPool::build(&pool, &model).unwrap();
        let sc = Scorer::new(&ix, &model);
        assert!(sc.is_fast());
        let st = construct::cut(&sc, &construct::skill_order(&sc));
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let mut mv = moves::Exchange::default();
        let mut compared = 0;
        for m in &st.matches {
            let (a, b) = (sc.evaluate(m), sc.evaluate_general(m));
            assert!((a.score - b.score).abs() < 1e-12 && a.feasible == b.feasible);
            compared += 1;
        }
        // and on the compositions random moves produce
        for _ in 0..500 {
            if moves::random_exchange(&sc, &st, &mut rng, &mut mv)
                && mv.b != u32::MAX
                && mv.a != u32::MAX
            {
                let mut m: Vec<u32> = st.matches[mv.a as usize]
                    .iter()
                    .copied()
                    .filter(|u| !mv.a_out.contains(u))
                    .collect();
                m.extend(&mv.b_out);
                let (a, b) = (sc.evaluate(&m), sc.evaluate_general(&m));
                assert_eq!(a.feasible, b.feasible);
                assert!((a.score - b.score).abs() < 1e-12);
                compared += 1;
            }
        }
        assert!(compared > 300);
    }
}

/// `check_delta` re-scores the round from scratch after every applied move of both
/// restart strategies (a drift panics); the count in the stats shows the check ran.
#[test]
fn check_delta_mode_runs_every_restart_strategy() {
    let pool = with_history(generate(
        &PopulationSpec {
            players: 60,
            ..PopulationSpec::default()
        },
        3,
    ));
    for strategy in [Strategy::Default, Strategy::Awesomenauts] {
        for check_delta in [true, false] {
            let options = SolveOptions {
                strategy,
                budget: Budget::Restarts(2),
                moves_per_restart: Some(2_000),
                check_delta,
                threads: Some(2),
                ..SolveOptions::default()
            };
            let out = solve(&pool, &QueueModel::default(), &options).unwrap();
            // 60 players: 10 matches, less the ones nobody could host
            assert!((9..=10).contains(&out.matches.len()), "{out:?}");
            assert!(out.matches.iter().all(|m| m.host.is_some()));
            assert_eq!(out.matches.len() * 6 + out.unmatched.len(), 60);
            let checks = out.stats.delta_checks;
            if check_delta {
                assert!(checks > 0, "{strategy:?}: no applied move was checked");
            } else {
                assert_eq!(checks, 0, "{strategy:?}: checked with the mode off");
            }
        }
    }
}

/// A returned match as the scorer's units and the team of each.
fn as_units(ix: &IndexedPool, m: &MatchOutcome) -> (Vec<u32>, Vec<u8>) {
    let index: HashMap<&str, u32> = ix
        .ids
        .iter()
        .enumerate()
        .map(|(p, id)| (id.as_str(), p as u32))
        .collect();
    let (mut units, mut unit_team) = (Vec::new(), Vec::new());
    for (t, team) in m.teams.iter().enumerate() {
        for id in team {
            let u = ix.unit_of[index[id.as_str()] as usize];
            match units.iter().position(|&x| x == u) {
                Some(i) => assert_eq!(unit_team[i], t as u8, "party of {id} split"),
                None => {
                    units.push(u);
                    unit_team.push(t as u8);
                }
            }
        }
    }
    (units, unit_team)
}

/// On a pool of 20 matches the default strategy's delta scoring agrees with the
/// from-scratch score after every applied move, and the returned round is valued by the
/// true objective (a plain scorer, re-scoring the returned teams from scratch), also
/// when the run ends at its first deadline check.
#[test]
fn default_search_keeps_delta_exact_and_reports_the_true_score() {
    let pool = with_history(generate(
        &PopulationSpec {
            players: 120,
            ..PopulationSpec::default()
        },
        4,
    ));
    let model = QueueModel::default();
    let ix = IndexedPool::build(&pool, &model).unwrap();
    let plain = Scorer::new(&ix, &model);
    let budgets = [
        // the whole schedule
        (Budget::Restarts(2), Some(30_000)),
        // a deadline already passed: the run stops at its first check
        (Budget::Time(std::time::Duration::from_nanos(1)), None),
    ];
    for (budget, moves_per_restart) in budgets {
        let whole_schedule = moves_per_restart.is_some();
        let options = SolveOptions {
            budget,
            moves_per_restart,
            check_delta: true,
            threads: Some(2),
            ..SolveOptions::default()
        };
        let out = solve(&pool, &model, &options).unwrap();
        // 120 players: 20 matches, less the ones nobody could host
        assert!((19..=20).contains(&out.matches.len()), "{out:?}");
        assert!(out.matches.iter().all(|m| m.host.is_some()));
        assert_eq!(out.matches.len() * 6 + out.unmatched.len(), 120);
        if whole_schedule {
            assert!(out.stats.delta_checks > 0, "no applied move was checked");
        }
        let mut true_scores = Vec::new();
        for m in &out.matches {
            let (units, teams) = as_units(&ix, m);
            let eval = plain
                .evaluate_fixed(&units, &teams)
                .expect("returned teams are feasible");
            let truth = plain.describe(&units, &eval);
            assert!(
                (m.score - truth.score).abs() < 1e-12,
                "match score {} is not the true {}",
                m.score,
                truth.score
            );
            for (i, name) in plain.enabled() {
                assert!(
                    (m.factors[name] - truth.factors[i]).abs() < 1e-12,
                    "{name}: {} is not the true {}",
                    m.factors[name],
                    truth.factors[i]
                );
            }
            true_scores.push(truth.score);
        }
        let round = plain.round_score(true_scores.into_iter());
        assert!(
            (out.score - round).abs() < 1e-12,
            "round score {} is not the true {round}",
            out.score
        );
    }
}

fn fingerprint(out: &RoundOutcome) -> (Vec<Vec<Vec<String>>>, Vec<String>, u64) {
    (
        out.matches.iter().map(|m| m.teams.clone()).collect(),
        out.unmatched.clone(),
        out.score.to_bits(),
    )
}

#[test]
fn restart_budget_gives_identical_results_on_any_thread_count() {
    let pool = generate(
        &PopulationSpec {
            players: 90,
            ..PopulationSpec::default()
        },
        8,
    );
    for strategy in [Strategy::Default, Strategy::Awesomenauts] {
        let run = |threads| {
            let options = SolveOptions {
                strategy,
                budget: Budget::Restarts(5),
                moves_per_restart: Some(20_000),
                seed: 42,
                threads: Some(threads),
                ..SolveOptions::default()
            };
            fingerprint(&solve(&pool, &QueueModel::default(), &options).unwrap())
        };
        let one = run(1);
        assert_eq!(one, run(2), "{strategy:?}");
        assert_eq!(one, run(3), "{strategy:?}");
    }
}

/// The invariants every round must satisfy.
fn assert_valid(pool: &Pool, model: &QueueModel, out: &RoundOutcome) {
    let by_id: HashMap<&str, &matchmaker_optimizer::Player> =
        pool.players.iter().map(|p| (p.id.as_str(), p)).collect();
    let mut seen = HashSet::new();
    for m in &out.matches {
        assert_eq!(m.teams.len(), model.teams);
        let mut party_team: BTreeMap<&str, usize> = BTreeMap::new();
        for (t, team) in m.teams.iter().enumerate() {
            assert_eq!(team.len(), model.team_size, "exact team size");
            for id in team {
                assert!(seen.insert(id.clone()), "{id} placed twice");
                if let Some(g) = &by_id[id.as_str()].party {
                    assert_eq!(*party_team.entry(g).or_insert(t), t, "party {g} split");
                }
            }
            if !model.roles.is_empty() && model.role_mode == RoleMode::Strict {
                let roles = m.roles.as_ref().expect("roles output");
                for r in &model.roles {
                    let holder = team.iter().find(|id| roles.get(*id) == Some(r));
                    let holder = holder.unwrap_or_else(|| panic!("role {r} unfilled in {team:?}"));
                    let accepts = &by_id[holder.as_str()].roles;
                    assert!(accepts.is_empty() || accepts.contains(r));
                }
            }
        }
        assert!((0.0..=1.0).contains(&m.score));
    }
    // parties are never split between a match and the bench
    let mut placed_party: HashMap<&str, bool> = HashMap::new();
    for id in out
        .unmatched
        .iter()
        .chain(out.rejected.iter().map(|r| &r.id))
    {
        assert!(seen.insert(id.clone()), "{id} listed twice");
    }
    for p in &pool.players {
        assert!(seen.contains(&p.id), "{} lost", p.id);
        if let Some(g) = &p.party {
            let matched =
                !out.unmatched.contains(&p.id) && !out.rejected.iter().any(|r| r.id == p.id);
            assert_eq!(
                *placed_party.entry(g).or_insert(matched),
                matched,
                "party {g} split"
            );
        }
    }
}

proptest! {
    // Debug builds (the solver's own checks on) run fewer cases, on smaller pools.
    #![proptest_config(ProptestConfig {
        cases: if cfg!(debug_assertions) { 6 } else { 24 },
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_strategy_produces_valid_rounds(
        players in 0usize..if cfg!(debug_assertions) { 36 } else { 70 },
        party_share in 0.0f64..0.8,
        seed in 0u64..1_000_000,
        roles in any::<bool>(),
        team_size in 1usize..=4,
        teams in 2usize..=3,
    ) {
        let role_names: Vec<String> = if roles {
            ["tank", "healer", "dps"][..team_size.min(3)].iter().map(|s| s.to_string()).collect()
        } else {
            Vec::new()
        };
        let spec = PopulationSpec {
            players,
            party_share,
            max_party_size: 4,
            roles: role_names.clone(),
            side_share: 0.3,
            ..PopulationSpec::default()
        };
        let pool = generate(&spec, seed);
        let model = QueueModel { teams, team_size, roles: role_names, ..QueueModel::default() };
        for strategy in Strategy::ALL {
            let options = SolveOptions {
                strategy,
                budget: Budget::Restarts(2),
                moves_per_restart: Some(1_500),
                threads: Some(1),
                seed,
                ..SolveOptions::default()
            };
            let out = solve(&pool, &model, &options).unwrap();
            assert_valid(&pool, &model, &out);
        }
    }
}

/// Exact optimum by dynamic programming over subsets of units: the best round is the
/// best of (leave the lowest unit out) and (a feasible match containing it + the best
/// round of the rest), compared like the solver (overdue players placed, then matches,
/// then quality).
type Value = (i64, i64, f64);

fn better(a: Value, b: Value) -> bool {
    a.0 > b.0 || (a.0 == b.0 && (a.1 > b.1 || (a.1 == b.1 && a.2 > b.2)))
}

fn brute_force(sc: &Scorer) -> Value {
    let nu = sc.ix.units.len();
    let per = sc.players_per_match();
    let size = |u: usize| sc.ix.units[u].size();
    // every feasible match as a unit mask
    let mut groups: Vec<Vec<(u32, i64, f64)>> = vec![Vec::new(); nu];
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
    let mut all = Vec::new();
    rec(0, nu, per, &mut Vec::new(), &size, &mut all);
    for g in all {
        let e = sc.evaluate(&g);
        // a match needs a valid split and, peer-to-peer, someone to host it
        if e.valid() {
            let mask = g.iter().fold(0u32, |m, &u| m | (1 << u));
            groups[g[0] as usize].push((mask, e.overdue as i64, e.quality));
        }
    }
    let mut memo: HashMap<u32, Value> = HashMap::new();
    fn best(s: u32, groups: &[Vec<(u32, i64, f64)>], memo: &mut HashMap<u32, Value>) -> Value {
        if s == 0 {
            return (0, 0, 0.0);
        }
        if let Some(&v) = memo.get(&s) {
            return v;
        }
        let low = s.trailing_zeros() as usize;
        let mut b = best(s & !(1 << low), groups, memo);
        for &(m, o, q) in &groups[low] {
            if m & s == m {
                let (ro, rk, rq) = best(s & !m, groups, memo);
                let cand = (ro + o, rk + 1, rq + q);
                if better(cand, b) {
                    b = cand;
                }
            }
        }
        memo.insert(s, b);
        b
    }
    best(((1u64 << nu) - 1) as u32, &groups, &mut memo)
}

#[test]
fn small_pools_are_solved_to_the_exact_optimum() {
    let model = QueueModel {
        wait_priority_per_minute: 0.0,
        ..QueueModel::default()
    };
    let mut exact = 0;
    // Debug builds (the solver's own checks on) solve the first 40 pools.
    let total = if cfg!(debug_assertions) { 40 } else { 200 };
    for seed in 0..total {
        let players = 6 + (seed as usize * 7) % 13; // 6..=18
        let spec = PopulationSpec {
            players,
            ..PopulationSpec::default()
        };
        let pool = generate(&spec, 1_000 + seed);
        let ix = IndexedPool::build(&pool, &model).unwrap();
        let sc = Scorer::new(&ix, &model);
        let (_, k, q) = brute_force(&sc);
        let options = SolveOptions {
            budget: Budget::Restarts(8),
            moves_per_restart: Some(6_000),
            threads: Some(2),
            seed,
            ..SolveOptions::default()
        };
        let out = solve(&pool, &model, &options).unwrap();
        assert_eq!(out.matches.len() as i64, k, "seed {seed}: match count");
        let got: f64 = out.matches.iter().map(|m| m.score).sum();
        assert!(
            got <= q + 1e-9,
            "seed {seed}: solver {got} beats brute force {q}"
        );
        if got >= q - 1e-9 {
            exact += 1;
        } else {
            eprintln!(
                "seed {seed}: {players} players, {} units, solver {got} vs {q}",
                ix.units.len()
            );
        }
    }
    // Hosts are a hard rule: a walk that never keeps a match nobody can host misses the
    // optimum on 4 of these 200 pools (seeds 31, 128, 148, 165, all within 0.03 of it).
    assert!(
        exact * 100 >= total * 97,
        "exact optimum on {exact} of {total} pools"
    );
}

#[test]
fn small_pools_stop_early_under_a_time_budget_at_the_optimum() {
    let model = QueueModel {
        wait_priority_per_minute: 0.0,
        ..QueueModel::default()
    };
    for seed in 0..20u64 {
        let pool = generate(
            &PopulationSpec {
                players: 6 + (seed as usize * 5) % 13,
                ..PopulationSpec::default()
            },
            2_000 + seed,
        );
        let ix = IndexedPool::build(&pool, &model).unwrap();
        let sc = Scorer::new(&ix, &model);
        let (_, k, q) = brute_force(&sc);
        let options = SolveOptions {
            budget: Budget::Time(std::time::Duration::from_secs(20)),
            threads: Some(2),
            seed,
            ..SolveOptions::default()
        };
        let out = solve(&pool, &model, &options).unwrap();
        assert_eq!(
            out.stats.stop_reason,
            matchmaker_optimizer::StopReason::Converged,
            "seed {seed}"
        );
        assert!(
            out.stats.elapsed < std::time::Duration::from_secs(10),
            "seed {seed}: a small pool used {:?} of a 20 s budget",
            out.stats.elapsed
        );
        assert_eq!(out.matches.len() as i64, k, "seed {seed}: match count");
        let got: f64 = out.matches.iter().map(|m| m.score).sum();
        assert!((got - q).abs() < 1e-9, "seed {seed}: {got} vs optimum {q}");
    }
}
