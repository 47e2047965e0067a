//! Hot paths of the optimizer: scoring one match over all its splits, and scoring one
//! random exchange (two matches re-split) in a 300-player 3v3 round; what maps cost:
//! the same exchange and a whole round of fixed length, with and without a pool of seven
//! maps, vetoes, preferences and a map history (`_maps`).
//!
//! `cargo bench -p matchmaker-optimizer --bench optimizer`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use matchmaker_optimizer::index::IndexedPool;
use matchmaker_optimizer::model::MapParams;
use matchmaker_optimizer::score::Scorer;
use matchmaker_optimizer::search::{construct, moves, state::Scratch};
use matchmaker_optimizer::{Budget, Pool, QueueModel, SolveOptions, solve};
use matchmaker_population::map_choices::add_map_choices;
use matchmaker_population::population::{Population, PopulationSpec};

fn bench_split(c: &mut Criterion) {
    let population = Population::realistic();
    for (name, team_size) in [("split_3v3", 3), ("split_5v5", 5)] {
        let model = QueueModel {
            team_size,
            ..QueueModel::default()
        };
        let spec = PopulationSpec {
            players: 60,
            party_share: 0.0,
            ..PopulationSpec::default()
        };
        let pool = population.generate_pool(&spec, 1);
        let ix = IndexedPool::build(&pool, &model).unwrap();
        let sc = Scorer::new(&ix, &model);
        let units: Vec<u32> = (0..2 * team_size as u32).collect();
        c.bench_function(name, |b| {
            b.iter(|| black_box(sc.evaluate(black_box(&units))))
        });
    }
}

const MAPS: [&str; 7] = [
    "Dust", "Harbor", "Summit", "Canal", "Foundry", "Orchard", "Vault",
];

/// The 300-player 3v3 pool and model, without maps or with them.
fn pool_300(maps: bool) -> (Pool, QueueModel) {
    let population = Population::realistic();
    let mut model = QueueModel::default();
    let spec = PopulationSpec {
        players: 300,
        ..PopulationSpec::default()
    };
    let mut pool = population.generate_pool(&spec, 1);
    if maps {
        model.maps = MapParams {
            pool: MAPS.iter().map(|m| m.to_string()).collect(),
            vetoes: 2,
            repeat_depth: 3,
        };
        add_map_choices(&mut pool, &MAPS, 1);
    }
    (pool, model)
}

fn bench_move(c: &mut Criterion) {
    for (name, maps) in [("move_300_3v3", false), ("move_300_3v3_maps", true)] {
        let (pool, model) = pool_300(maps);
        let ix = IndexedPool::build(&pool, &model).unwrap();
        let sc = Scorer::new(&ix, &model);
        let st = construct::cut(&sc, &construct::region_order(&sc));
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut scratch = Scratch::default();
        let mut mv = moves::Exchange::default();
        c.bench_function(name, |b| {
            b.iter(|| {
                if moves::random_exchange(&sc, &st, &mut rng, &mut mv) {
                    black_box(st.score_exchange(
                        &sc,
                        mv.a,
                        &mv.a_out,
                        mv.b,
                        &mv.b_out,
                        &mut scratch,
                    ));
                }
            })
        });
    }
}

/// A whole round of one restart of 20,000 moves on one thread: indexing, construction,
/// search and the outcome.
fn bench_round(c: &mut Criterion) {
    let options = SolveOptions {
        budget: Budget::Restarts(1),
        moves_per_restart: Some(20_000),
        threads: Some(1),
        ..SolveOptions::default()
    };
    for (name, maps) in [("round_300_3v3", false), ("round_300_3v3_maps", true)] {
        let (pool, model) = pool_300(maps);
        c.bench_function(name, |b| {
            b.iter(|| black_box(solve(black_box(&pool), &model, &options).unwrap()))
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = bench_split, bench_move, bench_round
}
criterion_main!(benches);
