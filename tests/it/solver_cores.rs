//! Many queues on one machine: overlapping rounds share the daemon's budget of solver
//! cores (`daemon::cores`) and each solve still ends within its own time budget.
//!
//! The figures of README "Many queues on one machine" come from
//! `cargo test --release --test it solver_cores -- --nocapture`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use matchmaker::daemon::cores::SolverCores;
use matchmaker_optimizer::{Budget, QueueModel, SolveOptions, StopReason, solve};

use crate::support::TIMING;
use matchmaker_population::population::{Population, PopulationSpec};

/// What one of the overlapping solves did.
#[derive(Debug)]
struct Run {
    players: usize,
    budget: Duration,
    threads: usize,
    beyond_budget: bool,
    elapsed: Duration,
    stop: StopReason,
}

/// Six rounds of 300-1000 players with 1 s and 1.5 s budgets, started 150 ms apart on a
/// budget of 2 cores (the CI machine's): more rounds than cores overlap all the time.
#[test]
fn overlapping_rounds_share_the_cores_and_each_ends_within_its_budget() {
    let _timing = TIMING.blocking_write();
    let population = Arc::new(Population::realistic());
    let cores = SolverCores::new(2);
    let model = Arc::new(QueueModel::default());
    let sizes = [300usize, 1000, 500, 700, 300, 1000];
    let pools: Vec<_> = sizes
        .iter()
        .enumerate()
        .map(|(k, &players)| {
            population.generate_pool(
                &PopulationSpec {
                    players,
                    ..PopulationSpec::default()
                },
                40 + k as u64,
            )
        })
        .collect();
    // the most solver threads ever running at once: granted ones plus beyond-budget ones
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let peak_granted = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = pools
        .into_iter()
        .enumerate()
        .map(|(k, pool)| {
            let (cores, model) = (cores.clone(), model.clone());
            let (in_flight, peak, peak_granted) =
                (in_flight.clone(), peak.clone(), peak_granted.clone());
            let budget = if k % 2 == 0 {
                Duration::from_millis(1000)
            } else {
                Duration::from_millis(1500)
            };
            std::thread::sleep(Duration::from_millis(150));
            std::thread::spawn(move || {
                // as the daemon's round does: the clock runs from before the grant
                let started = Instant::now();
                let grant = cores.grant(None);
                let now = in_flight.fetch_add(grant.threads(), Ordering::SeqCst) + grant.threads();
                peak.fetch_max(now, Ordering::SeqCst);
                peak_granted.fetch_max(cores.busy(), Ordering::SeqCst);
                let out = solve(
                    &pool,
                    &model,
                    &SolveOptions {
                        budget: Budget::Time(budget),
                        seed: k as u64,
                        threads: Some(grant.threads()),
                        ..SolveOptions::default()
                    },
                )
                .expect("generated pools are valid");
                in_flight.fetch_sub(grant.threads(), Ordering::SeqCst);
                let run = Run {
                    players: pool.players.len(),
                    budget,
                    threads: grant.threads(),
                    beyond_budget: grant.beyond_budget(),
                    elapsed: started.elapsed(),
                    stop: out.stats.stop_reason,
                };
                drop(grant);
                assert_eq!(out.stats.threads, run.threads, "the solve used its grant");
                run
            })
        })
        .collect();
    let runs: Vec<Run> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for r in &runs {
        eprintln!(
            "{:>5} players, budget {:>5} ms: {} thread(s){}, returned after {:>7.1} ms \
             ({:+.1}% of the budget), stop {:?}",
            r.players,
            r.budget.as_millis(),
            r.threads,
            if r.beyond_budget {
                " beyond the core budget"
            } else {
                ""
            },
            r.elapsed.as_secs_f64() * 1e3,
            (r.elapsed.as_secs_f64() / r.budget.as_secs_f64() - 1.0) * 100.0,
            r.stop,
        );
    }
    let beyond = runs.iter().filter(|r| r.beyond_budget).count();
    eprintln!(
        "peak solver threads {} (granted cores at most {}), {beyond} solve(s) beyond the core budget",
        peak.load(Ordering::SeqCst),
        peak_granted.load(Ordering::SeqCst)
    );
    assert!(peak_granted.load(Ordering::SeqCst) <= 2);
    assert_eq!(cores.busy(), 0, "every grant came back");
    // six rounds each taking one core per thread would have run 12 threads; the budget
    // allows the 2 cores plus one thread per round that found none free
    assert!(peak.load(Ordering::SeqCst) <= 2 + beyond);
    assert!(peak.load(Ordering::SeqCst) < 12);
    for r in &runs {
        assert_eq!(r.stop, StopReason::Deadline, "{r:?}");
        // budget + 10%, plus 100 ms for a loaded 2-core CI machine (other tests run
        // alongside: the final restart's last moves and the result's assembly wait for
        // a core); a round that waited for a core would overrun by a whole budget
        assert!(
            r.elapsed <= r.budget.mul_f64(1.1) + Duration::from_millis(100),
            "{r:?}"
        );
    }
}
