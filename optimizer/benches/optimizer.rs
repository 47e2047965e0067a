//! Hot paths of the optimizer: scoring one match over all its splits, and scoring one
//! random exchange (two matches re-split) in a 300-player 3v3 round.
//!
//! `cargo bench -p matchmaker-optimizer --bench optimizer`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use matchmaker_optimizer::QueueModel;
use matchmaker_optimizer::index::IndexedPool;
use matchmaker_optimizer::score::Scorer;
use matchmaker_optimizer::search::{construct, moves, state::Scratch};
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

fn bench_move(c: &mut Criterion) {
    let population = Population::realistic();
    let model = QueueModel::default();
    let spec = PopulationSpec {
        players: 300,
        ..PopulationSpec::default()
    };
    let pool = population.generate_pool(&spec, 1);
    let ix = IndexedPool::build(&pool, &model).unwrap();
    let sc = Scorer::new(&ix, &model);
    let st = construct::cut(&sc, &construct::region_order(&sc));
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let mut scratch = Scratch::default();
    let mut mv = moves::Exchange::default();
    c.bench_function("move_300_3v3", |b| {
        b.iter(|| {
            if moves::random_exchange(&sc, &st, &mut rng, &mut mv) {
                black_box(st.score_exchange(&sc, mv.a, &mv.a_out, mv.b, &mv.b_out, &mut scratch));
            }
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = bench_split, bench_move
}
criterion_main!(benches);
