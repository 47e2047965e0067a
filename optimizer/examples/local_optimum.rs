//! How deep is the local optimum the default strategy returns? Solves a pool file with
//! the default config's default queue under a time budget, then measures what two
//! larger neighbourhoods than the search's own exchanges could still gain:
//!
//! - every re-partition of the units of two matches into two valid matches (exact,
//!   all pairs of matches), and
//! - cyclic exchanges of one unit each (unit 1 into unit 2's match, unit 2 into unit
//!   3's, ..., the last into unit 1's) through 2 to 5 distinct matches, found by a
//!   depth-first search over each unit's cheapest moves whose running gain stays
//!   positive (Lin-Kernighan's gain criterion).
//!
//! Gains are summed over disjoint improvements and printed per match (the unit of the
//! round score). It shows that the gap between a 1 s and a 50 s run is not made of such
//! local improvements (docs/tuning.md, "Changing the search").
//!
//! ```text
//! cargo run --release -p matchmaker-optimizer --example local_optimum -- POOL.json [BUDGET_MS] [SEED]
//! ```

use std::time::Duration;

use matchmaker_optimizer::index::IndexedPool;
use matchmaker_optimizer::score::Scorer;
use matchmaker_optimizer::search::state::State;
use matchmaker_optimizer::solver::{SolveOptions, search};
use matchmaker_optimizer::{Budget, Deadline, Pool, QueueModel};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        anyhow::bail!("usage: local_optimum POOL.json [BUDGET_MS] [SEED]");
    };
    let ms: u64 = args.get(2).map_or(Ok(1000), |a| a.parse())?;
    let seed: u64 = args.get(3).map_or(Ok(1), |a| a.parse())?;
    let pool: Pool = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let model = &shipped_default_model()?;
    let ix = IndexedPool::build(&pool, model)?;
    let sc = Scorer::new(&ix, model);
    let budget = Duration::from_millis(ms);
    let options = SolveOptions {
        budget: Budget::Time(budget),
        seed,
        ..SolveOptions::default()
    };
    let run = search(&sc, &options, &Deadline::after(budget), 2);
    let st = &run.state;
    let n = st.matches.len().max(1) as f64;
    println!(
        "{path}: {} matches after {ms} ms (seed {seed}), mean match quality {:.6}",
        st.matches.len(),
        st.value.quality / n
    );
    let (pairs, gain) = two_match_repartitions(&sc, st);
    println!(
        "two-match re-partitions: {pairs} improvable pairs, disjoint gain {:.6}",
        gain / n
    );
    let cost = replacement_costs(&sc, st);
    for (len, branch) in [(2, usize::MAX), (3, 40), (4, 20), (5, 12)] {
        let (found, disjoint, gain) = cyclic_exchanges(st, &cost, len, branch);
        println!(
            "cyclic exchanges of up to {len} matches (each unit's {} cheapest moves): {found} improving, {disjoint} disjoint, gain {:.6}",
            if branch == usize::MAX {
                "all".to_string()
            } else {
                branch.to_string()
            },
            gain / n
        );
    }
    Ok(())
}

/// Units per match (in the state's matches), `usize::MAX` for the bench.
fn match_of(st: &State, units: usize) -> Vec<usize> {
    let mut loc = vec![usize::MAX; units];
    for (i, m) in st.matches.iter().enumerate() {
        for &u in m {
            loc[u as usize] = i;
        }
    }
    loc
}

/// The best re-partition of every pair of matches: (pairs that can improve, summed
/// gain of the best pair-disjoint improvements, greedily).
fn two_match_repartitions(sc: &Scorer, st: &State) -> (usize, f64) {
    let ix = sc.ix;
    let size = sc.players_per_match();
    let mut found = Vec::new();
    for i in 0..st.matches.len() {
        for j in i + 1..st.matches.len() {
            let all: Vec<u32> = st.matches[i]
                .iter()
                .chain(&st.matches[j])
                .copied()
                .collect();
            let old = st.evals[i].quality + st.evals[j].quality;
            let mut best = old;
            // the first unit stays in the first match (the other half is the mirror)
            for mask in (1u32..1 << all.len()).step_by(2) {
                let (mut x, mut y) = (Vec::new(), Vec::new());
                for (b, &u) in all.iter().enumerate() {
                    if mask >> b & 1 == 1 {
                        x.push(u)
                    } else {
                        y.push(u)
                    }
                }
                if x.iter()
                    .map(|&u| ix.unit_size[u as usize] as usize)
                    .sum::<usize>()
                    != size
                {
                    continue;
                }
                let (ex, ey) = (sc.evaluate(&x), sc.evaluate(&y));
                if ex.feasible && ey.feasible {
                    best = best.max(ex.quality + ey.quality);
                }
            }
            if best > old + 1e-12 {
                found.push((best - old, i, j));
            }
        }
    }
    found.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut used = vec![false; st.matches.len()];
    let mut gain = 0.0;
    for &(g, i, j) in &found {
        if !used[i] && !used[j] {
            used[i] = true;
            used[j] = true;
            gain += g;
        }
    }
    (found.len(), gain)
}

/// cost[u][v]: what v's match loses when unit u takes v's place (infinite when they
/// share a match, differ in size or the result is invalid).
struct Costs {
    units: usize,
    cost: Vec<f64>,
    loc: Vec<usize>,
}

fn replacement_costs(sc: &Scorer, st: &State) -> Costs {
    let ix = sc.ix;
    let units = ix.units.len();
    let loc = match_of(st, units);
    let mut cost = vec![f64::INFINITY; units * units];
    for u in 0..units {
        for v in 0..units {
            if loc[u] == usize::MAX
                || loc[v] == usize::MAX
                || loc[u] == loc[v]
                || ix.unit_size[u] != ix.unit_size[v]
            {
                continue;
            }
            let m = &st.matches[loc[v]];
            let x: Vec<u32> = m
                .iter()
                .map(|&w| if w as usize == v { u as u32 } else { w })
                .collect();
            let e = sc.evaluate(&x);
            if e.feasible {
                cost[u * units + v] = st.evals[loc[v]].quality - e.quality;
            }
        }
    }
    Costs { units, cost, loc }
}

/// Improving cyclic exchanges through at most `len` distinct matches, each step among
/// the unit's `branch` cheapest: (found, disjoint ones taken greedily, their gain).
fn cyclic_exchanges(st: &State, c: &Costs, len: usize, branch: usize) -> (usize, usize, f64) {
    let n = c.units;
    let next: Vec<Vec<usize>> = (0..n)
        .map(|u| {
            let mut vs: Vec<usize> = (0..n).filter(|&v| c.cost[u * n + v].is_finite()).collect();
            vs.sort_by(|&a, &b| c.cost[u * n + a].total_cmp(&c.cost[u * n + b]));
            vs.truncate(branch);
            vs
        })
        .collect();
    let mut found: Vec<(f64, Vec<usize>)> = Vec::new();
    for start in (0..n).filter(|&u| c.loc[u] != usize::MAX) {
        extend(c, &next, len, &mut vec![start], 0.0, &mut found);
    }
    found.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut used = vec![false; st.matches.len()];
    let (mut disjoint, mut gain) = (0, 0.0);
    for (cost, cycle) in &found {
        if cycle.iter().any(|&u| used[c.loc[u]]) {
            continue;
        }
        for &u in cycle {
            used[c.loc[u]] = true;
        }
        disjoint += 1;
        gain -= cost;
    }
    (found.len(), disjoint, gain)
}

/// Depth-first: extend `path` while its running cost stays negative; record every
/// closing that makes the whole cycle improve.
fn extend(
    c: &Costs,
    next: &[Vec<usize>],
    len: usize,
    path: &mut Vec<usize>,
    cost: f64,
    found: &mut Vec<(f64, Vec<usize>)>,
) {
    let (n, last, first) = (c.units, *path.last().expect("a start"), path[0]);
    if path.len() >= 2 && cost + c.cost[last * n + first] < -1e-9 {
        found.push((cost + c.cost[last * n + first], path.clone()));
    }
    if path.len() == len {
        return;
    }
    for &v in &next[last] {
        let step = cost + c.cost[last * n + v];
        if step >= -1e-12 {
            break;
        }
        if path.iter().any(|&w| c.loc[w] == c.loc[v]) {
            continue;
        }
        path.push(v);
        extend(c, next, len, path, step, found);
        path.pop();
    }
}

/// The default queue's model in the shipped config (`config/matchmaker.toml`): its
/// `[queues.NAME]` table without the daemon's sub-tables.
fn shipped_default_model() -> anyhow::Result<QueueModel> {
    let config: toml::Table = include_str!("../../config/matchmaker.toml").parse()?;
    let name = config["default_queue"].as_str().unwrap_or("ranked_3v3");
    let mut table = config["queues"][name]
        .as_table()
        .cloned()
        .unwrap_or_default();
    for key in [
        "round",
        "tickets",
        "backfill",
        "limits",
        "ready_check",
        "rating",
    ] {
        table.remove(key);
    }
    Ok(table.try_into()?)
}
