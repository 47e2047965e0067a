//! Entry point of the core: one round in, one `RoundOutcome` out.
//!
//! `solve` validates the pool (`IndexedPool::build`), builds the scorer and runs the
//! chosen strategy. The restart strategies (`default`, `awesomenauts`) run restarts in
//! batches on rayon threads until the budget ends. Restart r draws its randomness from
//! its own `Xoshiro256PlusPlus` stream (the config seed's stream after r `jump()`s), and
//! the best round wins with ties going to the lowest restart index, so with
//! `Budget::Restarts` the result is identical on 1 or N threads. Under a time budget the
//! best round so far is returned when the deadline passes, with the reason the search
//! stopped.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::str::FromStr;
use std::time::Duration;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::deadline::{Budget, Deadline, StopReason};
use super::error::PoolError;
use super::index::IndexedPool;
use super::model::{Network, QueueModel};
use super::pool::Pool;
use super::round::{MatchOutcome, RoundOutcome, SolveStats};
use super::score::Scorer;
use super::search::anneal::{self, Outcome};
use super::search::neighbours::Neighbours;
use super::search::state::State;
use super::search::{awesomenauts, baselines, construct, short};

/// Pools of at most this many matches' worth of players stop early under a time
/// budget once a batch of restarts finds nothing better (see `search`).
pub const SMALL_POOL_MATCHES: usize = 10;

/// Search strategy (`--strategy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Our default: simulated annealing over random exchanges with delta scoring,
    /// parallel restarts from sorted and semi-random constructions.
    #[default]
    Default,
    /// The Awesomenauts matchmaker post, faithful: best-improvement swaps with re-split, random restarts.
    Awesomenauts,
    /// Alman and McKay: sort by skill, cut into windows, split each optimally.
    Chunk,
    /// AccelByte's rebalance guide: greedy rebalance inside sorted chunks.
    Greedy,
}

impl Strategy {
    pub const ALL: [Strategy; 4] = [
        Strategy::Default,
        Strategy::Awesomenauts,
        Strategy::Chunk,
        Strategy::Greedy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Default => "default",
            Strategy::Awesomenauts => "awesomenauts",
            Strategy::Chunk => "chunk",
            Strategy::Greedy => "greedy",
        }
    }
}

impl FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Strategy::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| format!("unknown strategy {s:?} (default, awesomenauts, chunk, greedy)"))
    }
}

#[derive(Debug, Clone)]
pub struct SolveOptions {
    pub strategy: Strategy,
    pub budget: Budget,
    /// The one seed everything random derives from.
    pub seed: u64,
    /// Worker threads; `None` uses rayon's default (one per core).
    pub threads: Option<usize>,
    /// Steps of one annealing restart; `None`: under a time budget the whole budget
    /// (one cooling run per thread), under a restart budget 2,000 per unit (at least
    /// 20,000).
    pub moves_per_restart: Option<u64>,
    /// Check after every applied move that the incrementally maintained objective
    /// equals the from-scratch score (slow; for tests and debugging). The CLI turns it
    /// on with `MATCHMAKER_CHECK_DELTA=1`.
    pub check_delta: bool,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            strategy: Strategy::Default,
            budget: Budget::Time(Duration::from_secs(2)),
            seed: 0,
            threads: None,
            moves_per_restart: None,
            check_delta: false,
        }
    }
}

/// The random streams of the next batch of restarts: one per thread (under a restart
/// budget, no more than the restarts left after `done`), each the config seed's stream
/// after as many `jump()`s as restarts before it. Empty when the budget is spent.
pub(crate) fn next_streams(
    stream: &mut Xoshiro256PlusPlus,
    budget: Budget,
    threads: usize,
    done: u64,
) -> Vec<Xoshiro256PlusPlus> {
    let batch = match budget {
        Budget::Restarts(n) => (threads as u64).min(n.max(1).saturating_sub(done)),
        Budget::Time(_) => threads as u64,
    };
    (0..batch)
        .map(|_| {
            let r = stream.clone();
            stream.jump();
            r
        })
        .collect()
}

/// Solve one round. Fails only on malformed input; unusable players are rejected in the
/// outcome while the rest of the round is solved.
pub fn solve(
    pool: &Pool,
    model: &QueueModel,
    options: &SolveOptions,
) -> Result<RoundOutcome, PoolError> {
    let parts = same_parts(pool, model)?;
    if parts.len() <= 1 {
        return solve_part(pool, model, options);
    }
    // The `same` filter: players of different values never meet, so each value's
    // players are a pool of their own, solved in turn with all the threads and a
    // share of the time budget by their number of players (a restart budget applies
    // to each). The search itself then never meets the filter.
    let started = Deadline::never();
    let total = pool.players.len().max(1) as f64;
    let mut outs = Vec::with_capacity(parts.len());
    for part in &parts {
        let budget = match options.budget {
            Budget::Time(d) => Budget::Time(d.mul_f64(part.players.len() as f64 / total)),
            b => b,
        };
        let opts = SolveOptions {
            budget,
            ..options.clone()
        };
        outs.push(solve_part(part, model, &opts)?);
    }
    Ok(merge(pool, model, outs, started.elapsed()))
}

/// The pool cut by the queue's `same` values (a party goes with its first member: the
/// index rejects a party whose members differ). One part when there is no such filter
/// or every player shares the values.
fn same_parts(pool: &Pool, model: &QueueModel) -> Result<Vec<Pool>, PoolError> {
    let names = &model.filters.same;
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let mut part_of_key: HashMap<Vec<Option<Vec<String>>>, usize> = HashMap::new();
    let mut party_part: HashMap<&str, usize> = HashMap::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut parts: Vec<Pool> = Vec::new();
    for p in &pool.players {
        if !seen.insert(p.id.as_str()) {
            // the parts would not see it: the whole pool's check
            return Err(PoolError::Player {
                id: p.id.clone(),
                field: "id",
                problem: "duplicate player id".into(),
            });
        }
        let by_party = p.party.as_deref().and_then(|x| party_part.get(x)).copied();
        let k = by_party.unwrap_or_else(|| {
            let next = part_of_key.len();
            *part_of_key
                .entry(crate::index::same_values(p, names))
                .or_insert(next)
        });
        if let Some(x) = p.party.as_deref() {
            party_part.entry(x).or_insert(k);
        }
        if k == parts.len() {
            parts.push(Pool {
                queue: pool.queue.clone(),
                now: pool
                    .now
                    .or_else(|| pool.players.iter().filter_map(|p| p.enqueued_at).max()),
                players: Vec::new(),
                history: pool.history.clone(),
            });
        }
        parts[k].players.push(p.clone());
    }
    Ok(parts)
}

/// One round's outcome from its parts' (`same_parts`).
fn merge(
    pool: &Pool,
    model: &QueueModel,
    outs: Vec<RoundOutcome>,
    elapsed: Duration,
) -> RoundOutcome {
    let order: HashMap<&str, usize> = pool
        .players
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.as_str(), i))
        .collect();
    let skill: HashMap<&str, f64> = pool
        .players
        .iter()
        .map(|p| {
            let mut s = p.skill;
            if let Some(lo) = model.skill.cap_min {
                s = s.max(lo);
            }
            if let Some(hi) = model.skill.cap_max {
                s = s.min(hi);
            }
            (p.id.as_str(), s)
        })
        .collect();
    let largest = outs
        .iter()
        .enumerate()
        .max_by_key(|(_, o)| o.matches.len() * 1000 + o.unmatched.len())
        .map_or(0, |(i, _)| i);
    let mut stats = outs[largest].stats.clone();
    stats.restarts = outs.iter().map(|o| o.stats.restarts).sum();
    stats.moves_evaluated = outs.iter().map(|o| o.stats.moves_evaluated).sum();
    stats.moves_rejected_by_bound = outs.iter().map(|o| o.stats.moves_rejected_by_bound).sum();
    stats.delta_checks = outs.iter().map(|o| o.stats.delta_checks).sum();
    stats.elapsed = elapsed;
    stats.elapsed_ms = elapsed.as_secs_f64() * 1e3;
    stats.moves_per_second = stats.moves_evaluated as f64 / elapsed.as_secs_f64().max(1e-9);
    let mut matches = Vec::new();
    let mut unmatched = Vec::new();
    let mut rejected = Vec::new();
    for o in outs {
        matches.extend(o.matches);
        unmatched.extend(o.unmatched);
        rejected.extend(o.rejected);
    }
    let mean = |m: &MatchOutcome| {
        let ids: Vec<&String> = m.teams.iter().flatten().collect();
        ids.iter().map(|id| skill[id.as_str()]).sum::<f64>() / ids.len().max(1) as f64
    };
    matches.sort_by(|a, b| mean(b).total_cmp(&mean(a)));
    unmatched.sort_by_key(|id| order[id.as_str()]);
    let power = model.round_score_power;
    let score = if matches.is_empty() {
        0.0
    } else {
        let m = matches
            .iter()
            .map(|m| m.score.max(0.0).powf(power))
            .sum::<f64>()
            / matches.len() as f64;
        if power == 1.0 { m } else { m.powf(1.0 / power) }
    };
    RoundOutcome {
        matches,
        unmatched,
        rejected,
        score,
        stats,
    }
}

/// Solve one pool whose players may all meet as far as the `same` filter goes.
fn solve_part(
    pool: &Pool,
    model: &QueueModel,
    options: &SolveOptions,
) -> Result<RoundOutcome, PoolError> {
    let deadline = match options.budget {
        Budget::Time(d) => Deadline::after(d),
        Budget::Restarts(_) => Deadline::never(),
    };
    let ix = IndexedPool::build(pool, model)?;
    if model.is_big() {
        // no split tables for a lobby of 64: the lobby path
        return Ok(crate::lobby::solve(&ix, model, options, &deadline));
    }
    let sc = Scorer::new(&ix, model);
    let threads = options
        .threads
        .unwrap_or_else(rayon::current_num_threads)
        .max(1);
    let run = search(&sc, options, &deadline, threads);
    if options.check_delta && options.strategy != Strategy::Greedy {
        anneal::assert_delta(&sc, &run.state);
    }
    if !model.is_flexible() {
        return Ok(outcome(&sc, &run, None, options, &deadline, threads));
    }
    // The AccelByte guide's flexible formats: the full matches are scored with the member-count
    // difference in the average (1 for them), and smaller formats are formed from the
    // bench (`search::short`)
    let formats = model.formats();
    let full = Scorer::for_format(&ix, model, &formats[0]);
    let smaller: Vec<Scorer> = formats[1..]
        .iter()
        .map(|f| Scorer::for_format(&ix, model, f))
        .collect();
    let (short, bench) = short::form_short_matches(
        &smaller,
        model.alliance.short_match_min_score,
        &run.state.bench,
    );
    let flex = Flexible {
        full: &full,
        smaller: &smaller,
        short: &short,
        bench: &bench,
    };
    Ok(outcome(&sc, &run, Some(&flex), options, &deadline, threads))
}

/// A flexible queue's scorers and the smaller matches formed after the search.
struct Flexible<'s, 'a> {
    full: &'s Scorer<'a>,
    smaller: &'s [Scorer<'a>],
    short: &'s [short::ShortMatch],
    bench: &'s [u32],
}

/// At most `SMALL_POOL_MATCHES` matches' worth of players: fixed-length restarts until
/// they converge.
fn small_pool(sc: &Scorer) -> bool {
    sc.ix.len() <= SMALL_POOL_MATCHES * sc.players_per_match()
}

/// The result of a whole search.
pub struct SearchRun {
    pub state: State,
    pub restarts: u64,
    pub moves: u64,
    pub bounded: u64,
    pub found_at: Duration,
    pub stop: StopReason,
    pub delta_checks: u64,
}

/// Run the strategy on a prepared scorer (also used by benchmarks and tests). The
/// result never holds a match that breaks a hard rule (`enforce_hosts`).
pub fn search(
    sc: &Scorer,
    options: &SolveOptions,
    deadline: &Deadline,
    threads: usize,
) -> SearchRun {
    let mut run = run_strategy(sc, options, deadline, threads);
    enforce_hosts(sc, &mut run.state);
    run
}

/// The hard rules on a finished search (hosts on peer-to-peer, filters, avoids,
/// floors: `MatchEval::allowed`): dissolve every match that breaks one, then form what
/// matches the bench allows, each keeping them. The
/// search's objective already counts a hostless match for nothing, so this loses
/// nothing the search valued; its overdue players stay on the bench unless a match
/// with a host can take them (the Awesomenauts post's max-wait fallback, "matched with whoever can
/// host them").
pub fn enforce_hosts(sc: &Scorer, state: &mut State) {
    if state.evals.iter().all(|e| e.allowed) {
        return;
    }
    state.drop_hostless(sc);
    construct::fill_from_bench(sc, state);
}

fn run_strategy(
    sc: &Scorer,
    options: &SolveOptions,
    deadline: &Deadline,
    threads: usize,
) -> SearchRun {
    let single = |state: State| SearchRun {
        state,
        restarts: 1,
        moves: 0,
        bounded: 0,
        found_at: deadline.elapsed(),
        stop: StopReason::Exhausted,
        delta_checks: 0,
    };
    if sc.ix.len() < sc.players_per_match() {
        return single(State::new(
            sc,
            Vec::new(),
            (0..sc.ix.units.len() as u32).collect(),
        ));
    }
    match options.strategy {
        Strategy::Chunk => return single(baselines::chunk(sc)),
        Strategy::Greedy => return single(baselines::greedy(sc)),
        Strategy::Default | Strategy::Awesomenauts => {}
    }
    // Under a time budget one annealing run per thread cools over the whole budget
    // (longer cooling beats more restarts); a restart budget needs a fixed length. A
    // small pool (a few matches) is solved long before any useful budget ends: its
    // restarts get the fixed length, and the search stops once a batch of restarts
    // finds nothing better.
    let fixed_length = (2_000 * sc.ix.units.len() as u64).max(20_000);
    let small = matches!(options.budget, Budget::Time(_)) && small_pool(sc);
    let length = options.moves_per_restart.unwrap_or(match options.budget {
        Budget::Time(_) if !small => u64::MAX,
        _ => fixed_length,
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("building the solver's thread pool");
    // Small pools converge without them; on larger ones a random partner match is
    // seldom a useful one once the matches have taken shape.
    let neighbours = if options.strategy == Strategy::Default && !small_pool(sc) {
        pool.install(|| Neighbours::build(sc))
    } else {
        None
    };
    let one = |r: u64, mut rng: Xoshiro256PlusPlus| -> Outcome {
        // restart 0: the Awesomenauts post's sorted start (awesomenauts) or sorted within regions
        // (default); later restarts: semi-random starts
        let start = if r == 0 && options.strategy == Strategy::Awesomenauts {
            construct::cut(sc, &construct::skill_order(sc))
        } else if r == 0 {
            construct::cut(sc, &construct::region_order(sc))
        } else {
            construct::cut(sc, &construct::random_order(sc, &mut rng))
        };
        let mut out = match options.strategy {
            Strategy::Awesomenauts => {
                awesomenauts::hill_climb(sc, start, deadline, options.check_delta)
            }
            _ => anneal::anneal(
                sc,
                neighbours.as_ref(),
                start,
                &mut rng,
                length,
                deadline,
                options.check_delta,
            ),
        };
        // exchanges with the bench may leave a new match formable there
        construct::fill_from_bench(sc, &mut out.state);
        out
    };
    pool.install(|| {
        let mut stream = Xoshiro256PlusPlus::seed_from_u64(options.seed);
        let mut best: Option<Outcome> = None;
        let mut next = 0u64;
        let mut moves = 0u64;
        let mut bounded = 0u64;
        let mut delta_checks = 0u64;
        let stop = loop {
            let streams = next_streams(&mut stream, options.budget, threads, next);
            if streams.is_empty() {
                break StopReason::RestartBudget;
            }
            let streams_len = streams.len() as u64;
            let outs: Vec<Outcome> = streams
                .into_par_iter()
                .enumerate()
                .map(|(k, rng)| one(next + k as u64, rng))
                .collect();
            // in restart order: a later restart must be strictly better to win
            let mut improved = false;
            for o in outs {
                moves += o.moves;
                bounded += o.bounded;
                delta_checks += o.delta_checks;
                if best
                    .as_ref()
                    .is_none_or(|b| o.state.value.better_than(&b.state.value))
                {
                    best = Some(o);
                    improved = true;
                }
            }
            next += streams_len;
            if deadline.expired() {
                break StopReason::Deadline;
            }
            if small && !improved && next >= 2 * threads as u64 {
                break StopReason::Converged;
            }
        };
        let best = best.expect("at least one restart ran");
        SearchRun {
            state: best.state,
            restarts: next,
            moves,
            bounded,
            found_at: best.found_at,
            stop,
            delta_checks,
        }
    })
}

fn outcome(
    search_sc: &Scorer,
    run: &SearchRun,
    flex: Option<&Flexible>,
    options: &SolveOptions,
    deadline: &Deadline,
    threads: usize,
) -> RoundOutcome {
    // a flexible queue reports with the member-count difference in the average
    let sc = flex.map_or(search_sc, |f| f.full);
    let ix = sc.ix;
    let id = |p: u32| ix.ids[p as usize].clone();
    // (detail, its evaluation's verdict: may form, by relay)
    let mut details: Vec<_> = run
        .state
        .matches
        .iter()
        .zip(&run.state.evals)
        .map(|(m, e)| {
            // The search's split index may refer to an incremental row's slot order;
            // the report re-splits in canonical order (greedy keeps its own split:
            // the full format's tables are the same for both scorers).
            let e = if options.strategy == Strategy::Greedy {
                *e
            } else {
                sc.evaluate(m)
            };
            (sc.describe(m, &e), e.valid(), e.relay)
        })
        .collect();
    if let Some(f) = flex {
        details.extend(f.short.iter().map(|m| {
            (
                f.smaller[m.format].describe(&m.units, &m.eval),
                m.eval.valid(),
                m.eval.relay,
            )
        }));
    }
    // strongest matches first, for people reading the output
    let mean = |d: &super::score::MatchDetail| {
        let all: Vec<u32> = d.teams.iter().flatten().copied().collect();
        all.iter().map(|&p| ix.skill[p as usize]).sum::<f64>() / all.len() as f64
    };
    details.sort_by(|a, b| mean(&b.0).total_cmp(&mean(&a.0)));
    // The hard rules' last line: `search` returns no match that breaks one (hosts,
    // filters, avoids, floors); should one ever get here, its players stay unmatched.
    let p2p = sc.model.network == Network::PeerToPeer;
    let mut broken: Vec<u32> = Vec::new();
    details.retain(|(d, valid, _)| {
        if !valid {
            broken.extend(d.teams.iter().flatten().copied());
        }
        *valid
    });
    debug_assert!(
        broken.is_empty(),
        "the search returned a match breaking a rule"
    );
    let score = sc.round_score(details.iter().map(|d| d.0.score));
    let matches = details
        .iter()
        .map(|(d, _, relay)| MatchOutcome {
            teams: d
                .teams
                .iter()
                .map(|t| t.iter().map(|&p| id(p)).collect())
                .collect(),
            score: d.score,
            factors: sc
                .enabled()
                .map(|(i, name)| (name.to_string(), d.factors[i]))
                .collect(),
            roles: (!sc.model.roles.is_empty()).then(|| {
                d.roles
                    .iter()
                    .map(|&(p, r)| (id(p), sc.model.roles[r].clone()))
                    .collect::<BTreeMap<_, _>>()
            }),
            region: match sc.model.network {
                Network::Dedicated => d.region.map(|r| ix.regions[r].clone()),
                Network::PeerToPeer => None,
            },
            hosts: p2p.then(|| d.hosts.iter().map(|&p| id(p)).collect()),
            host: d.hosts.first().filter(|_| p2p).map(|&p| id(p)),
            backup_host: d.hosts.get(1).filter(|_| p2p).map(|&p| id(p)),
            relay: *relay,
            map: d.map.map(|m| ix.maps.names[m.map as usize].clone()),
            map_vetoed_by: d.map.map_or(0, |m| m.vetoed_by),
        })
        .collect();
    let bench = flex.map_or(run.state.bench.as_slice(), |f| f.bench);
    let mut unmatched: Vec<u32> = bench
        .iter()
        .flat_map(|&u| ix.units[u as usize].members.iter().copied())
        .chain(broken)
        .collect();
    unmatched.sort_by_key(|&p| ix.source[p as usize]);
    let elapsed = deadline.elapsed();
    RoundOutcome {
        matches,
        unmatched: unmatched.into_iter().map(id).collect(),
        rejected: ix.rejected.clone(),
        score,
        stats: SolveStats {
            strategy: options.strategy.name().to_string(),
            elapsed,
            elapsed_ms: elapsed.as_secs_f64() * 1e3,
            restarts: run.restarts,
            moves_evaluated: run.moves,
            moves_rejected_by_bound: run.bounded,
            moves_per_second: run.moves as f64 / elapsed.as_secs_f64().max(1e-9),
            time_to_best: run.found_at,
            time_to_best_ms: run.found_at.as_secs_f64() * 1e3,
            stop_reason: run.stop,
            threads,
            seed: options.seed,
            delta_checks: run.delta_checks,
        },
    }
}
