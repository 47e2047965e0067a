//! Big formats: lobbies of up to 100 players (16v16, 32v32, 25 squads of 4), where the
//! small path's exhaustive team split and its fixed 16-slot scorer do not reach.
//!
//! A queue whose match has more than 16 players or more than 20,000 team splits
//! (`QueueModel::is_big`) is solved here (`solver::solve_part` dispatches), with the
//! same hard rules, the same lexicographic round objective and the same output:
//! - `lobbies`: sort by region and skill, cut into full lobbies, then exchange units
//!   between lobbies and with the bench (overdue players placed first, then lobbies,
//!   then quality), restarts on rayon threads, one `Xoshiro256PlusPlus` stream each;
//! - `squads`: whole parties packed into squads (or teams) that are exactly full;
//! - `teams`: the two-team split of a lobby, a greedy construction and a swap search;
//! - `score`: what a lobby scores (`equal_players` as the skill spread, `enemy_ping` at
//!   the lobby's region, and for two teams `equal_teams`, `premades`), its meeting
//!   rules and floors;
//! - `baseline`: the first-come matchmaker of the same format, for comparison.
//!
//! Two teams (`teams = 2`) are split by `teams`; three or more (a battle royale's
//! squads) are packed by `squads`, and the lobby is judged by its spread and ping, not
//! by the differences of 25 squad means. Big formats are dedicated-server only (a
//! player cannot host 64), without roles or alliance ranges (`QueueModel::validate`).

pub mod baseline;
pub mod lobbies;
pub mod score;
pub mod squads;
pub mod teams;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use crate::deadline::{Budget, Deadline, StopReason};
use crate::index::IndexedPool;
use crate::left_over::{LeftOver, LeftOverKind};
use crate::model::{AvoidScope, QueueModel};
use crate::round::{MatchOutcome, RoundOutcome, SolveStats};
use crate::solver::{SolveOptions, Strategy, next_streams};

use lobbies::Formation;
use score::{Broken, Ctx, Eval};

/// Share of a time budget the search leaves for splitting its lobbies.
const FINISH_SHARE: f64 = 0.03;

/// Skill noise (points) of the restarts' orders after the first.
const RESTART_NOISE: f64 = 150.0;

/// How a lobby is split into teams or squads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// The swap search (`teams::split`) or squads by skill (`squads::form_squads`).
    Search,
    /// The greedy split (`teams::greedy_split`) or first-fit squads.
    Greedy,
}

/// Solve one round of a big format (the pool already cut by the `same` filter).
pub fn solve(
    ix: &IndexedPool,
    model: &QueueModel,
    options: &SolveOptions,
    deadline: &Deadline,
) -> RoundOutcome {
    let ctx = Ctx::new(ix, model);
    let threads = options
        .threads
        .unwrap_or_else(rayon::current_num_threads)
        .max(1);
    if ix.len() < ctx.size {
        let st = Formation::new(&ctx, Vec::new(), (0..ix.units.len() as u32).collect());
        let run = Run::single(st, deadline);
        return finish(&ctx, run, Split::Search, options, deadline, threads);
    }
    let (run, split) = match options.strategy {
        Strategy::Chunk | Strategy::Greedy => {
            let (l, b) = lobbies::cut(&ctx, &lobbies::region_order(&ctx, None));
            let split = if options.strategy == Strategy::Greedy {
                Split::Greedy
            } else {
                Split::Search
            };
            (Run::single(Formation::new(&ctx, l, b), deadline), split)
        }
        Strategy::Default | Strategy::Awesomenauts => {
            // splitting the lobbies after the search takes about 1% of a 2s budget on
            // 3,000 players: the search leaves it 3%, so the round ends within its budget
            let search_deadline = deadline.reserving(FINISH_SHARE);
            (
                search(&ctx, options, &search_deadline, threads),
                Split::Search,
            )
        }
    };
    finish(&ctx, run, split, options, deadline, threads)
}

/// The result of the formation search.
pub struct Run {
    pub state: Formation,
    pub restarts: u64,
    pub moves: u64,
    pub found_at: Duration,
    pub stop: StopReason,
}

impl Run {
    fn single(state: Formation, deadline: &Deadline) -> Run {
        Run {
            state,
            restarts: 1,
            moves: 0,
            found_at: deadline.elapsed(),
            stop: StopReason::Exhausted,
        }
    }
}

/// Restarts in batches of `threads`: restart 0 from the region-and-skill order, the
/// others from that order with noisy skills; the best round wins, ties to the lowest
/// restart. Under a time budget a batch that finds nothing better (after two) ends the
/// search: the pool has converged.
fn search(ctx: &Ctx, options: &SolveOptions, deadline: &Deadline, threads: usize) -> Run {
    let units = ctx.ix.units.len() as u64;
    let patience = 2_000 + 50 * units;
    let max_moves = options.moves_per_restart.unwrap_or(match options.budget {
        Budget::Time(_) => u64::MAX,
        Budget::Restarts(_) => 200 * units,
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("building the lobby search's thread pool");
    let one = |r: u64, mut rng: Xoshiro256PlusPlus| -> (Formation, u64, Duration) {
        let order = if r == 0 {
            lobbies::region_order(ctx, None)
        } else {
            lobbies::region_order(ctx, Some((&mut rng, RESTART_NOISE)))
        };
        let (l, b) = lobbies::cut(ctx, &order);
        let mut st = Formation::new(ctx, l, b);
        let moves = lobbies::improve(ctx, &mut st, &mut rng, patience, max_moves, deadline);
        (st, moves, deadline.elapsed())
    };
    pool.install(|| {
        let mut stream = Xoshiro256PlusPlus::seed_from_u64(options.seed);
        let mut best: Option<(Formation, Duration)> = None;
        let (mut next, mut moves) = (0u64, 0u64);
        let stop = loop {
            let streams = next_streams(&mut stream, options.budget, threads, next);
            if streams.is_empty() {
                break StopReason::RestartBudget;
            }
            let streams_len = streams.len() as u64;
            let outs: Vec<_> = streams
                .into_par_iter()
                .enumerate()
                .map(|(k, rng)| one(next + k as u64, rng))
                .collect();
            let mut improved = false;
            for (st, m, at) in outs {
                moves += m;
                if best
                    .as_ref()
                    .is_none_or(|(b, _)| st.value.better_than(&b.value))
                {
                    best = Some((st, at));
                    improved = true;
                }
            }
            next += streams_len;
            if deadline.expired() {
                break StopReason::Deadline;
            }
            if matches!(options.budget, Budget::Time(_)) && !improved && next >= 2 * threads as u64
            {
                break StopReason::Converged;
            }
        };
        let (state, found_at) = best.expect("at least one restart ran");
        Run {
            state,
            restarts: next,
            moves,
            found_at,
            stop,
        }
    })
}

/// One finished lobby: players per team or squad (side order), its factors and score.
pub struct Finished {
    pub teams: Vec<Vec<u32>>,
    pub eval: Eval,
    pub factors: score::Factors,
    pub score: f64,
}

/// Split a formed lobby and judge the rules only a split shows; Err: the rule broken.
pub fn finish_lobby(
    ctx: &Ctx,
    units: &[u32],
    eval: &Eval,
    split: Split,
) -> Result<Finished, Broken> {
    if let Some(b) = eval.broken {
        return Err(b);
    }
    let ix = ctx.ix;
    let members = |us: &[u32]| lobbies::players(ctx, us);
    let teams: Vec<Vec<u32>> = if ctx.two_teams {
        let side = match split {
            Split::Search => teams::split(ctx, units),
            Split::Greedy => teams::greedy_split(ctx, units),
        }
        .ok_or(Broken::Filter)?;
        (0..2u8)
            .map(|t| {
                let us: Vec<u32> = units
                    .iter()
                    .zip(&side)
                    .filter(|(_, s)| **s == t)
                    .map(|(&u, _)| u)
                    .collect();
                members(&us)
            })
            .collect()
    } else {
        let squads = match split {
            Split::Search => squads::form_squads(ctx, units),
            Split::Greedy => {
                squads::first_fit_squads(ctx, units).or_else(|| squads::form_squads(ctx, units))
            }
        }
        .ok_or(Broken::Filter)?;
        let mut teams: Vec<Vec<u32>> = squads.iter().map(|s| members(s)).collect();
        let mean = |t: &Vec<u32>| t.iter().map(|&p| ix.skill[p as usize]).sum::<f64>();
        teams.sort_by(|a, b| mean(b).total_cmp(&mean(a)));
        teams
    };
    judge(ctx, teams, eval)
}

/// Score a lobby on fixed teams and judge the rules only teams show (`eval`: the
/// lobby's evaluation, valid).
pub fn judge(ctx: &Ctx, teams: Vec<Vec<u32>>, eval: &Eval) -> Result<Finished, Broken> {
    let factors = ctx.factors(&teams, eval);
    let score = ctx.score(&factors);
    if let Some(b) = ctx.judge_split(&teams, score) {
        return Err(b);
    }
    Ok(Finished {
        teams,
        eval: *eval,
        factors,
        score,
    })
}

/// Split every lobby of the run, send the lobbies that break a rule to the bench, form
/// what full lobbies the bench still allows, and report.
pub fn finish(
    ctx: &Ctx,
    run: Run,
    split: Split,
    options: &SolveOptions,
    deadline: &Deadline,
    threads: usize,
) -> RoundOutcome {
    let stats = run_stats(&run);
    let st = run.state;
    let mut done: Vec<Finished> = Vec::new();
    let mut bench = st.bench;
    for (units, eval) in st.lobbies.iter().zip(&st.evals) {
        match finish_lobby(ctx, units, eval, split) {
            Ok(f) => done.push(f),
            Err(_) => bench.extend(units),
        }
    }
    let benched: usize = bench.iter().map(|&u| ctx.ix.units[u as usize].size()).sum();
    if benched >= ctx.size {
        let order = ordered(ctx, &bench);
        let (more, rest) = lobbies::cut(ctx, &order);
        bench = rest;
        for units in more {
            let eval = ctx.evaluate(&lobbies::players(ctx, &units));
            match finish_lobby(ctx, &units, &eval, split) {
                Ok(f) => done.push(f),
                Err(_) => bench.extend(units),
            }
        }
    }
    let strategy = match (options.strategy, split) {
        (Strategy::Greedy, _) => "lobby_greedy",
        (Strategy::Chunk, _) => "lobby_chunk",
        _ => "lobby",
    };
    outcome(
        ctx, done, &bench, strategy, &stats, options, deadline, threads,
    )
}

/// The search's figures for `SolveStats`.
pub struct RunStats {
    pub restarts: u64,
    pub moves: u64,
    pub found_at: Duration,
    pub stop: StopReason,
}

fn run_stats(run: &Run) -> RunStats {
    RunStats {
        restarts: run.restarts,
        moves: run.moves,
        found_at: run.found_at,
        stop: run.stop,
    }
}

/// Units in the region-and-skill order of `lobbies::region_order`.
fn ordered(ctx: &Ctx, units: &[u32]) -> Vec<u32> {
    let all = lobbies::region_order(ctx, None);
    let keep: std::collections::HashSet<u32> = units.iter().copied().collect();
    all.into_iter().filter(|u| keep.contains(u)).collect()
}

/// The round's outcome from finished lobbies and the bench.
#[allow(clippy::too_many_arguments)]
pub fn outcome(
    ctx: &Ctx,
    mut done: Vec<Finished>,
    bench: &[u32],
    strategy: &str,
    run: &RunStats,
    options: &SolveOptions,
    deadline: &Deadline,
    threads: usize,
) -> RoundOutcome {
    let ix = ctx.ix;
    let id = |p: u32| ix.ids[p as usize].clone();
    let mean = |f: &Finished| {
        let all: Vec<u32> = f.teams.iter().flatten().copied().collect();
        all.iter().map(|&p| ix.skill[p as usize]).sum::<f64>() / all.len() as f64
    };
    done.sort_by(|a, b| mean(b).total_cmp(&mean(a)));
    let power = ctx.model.round_score_power;
    let score = if done.is_empty() {
        0.0
    } else {
        let m = done
            .iter()
            .map(|f| f.score.max(0.0).powf(power))
            .sum::<f64>()
            / done.len() as f64;
        if power == 1.0 { m } else { m.powf(1.0 / power) }
    };
    let factor = |f: &score::Factors, i: usize| {
        [f.equal_teams, f.equal_players, f.premades, f.enemy_ping][i]
    };
    // A big lobby's players veto between them nearly every map: its map is the one the
    // fewest of them vetoed, then the one they like most (a veto is a strong preference
    // here, not a rule).
    let map = |f: &Finished| {
        let all: Vec<u32> = f.teams.iter().flatten().copied().collect();
        ix.maps.pick(&all, true)
    };
    let matches = done
        .iter()
        .map(|f| (f, map(f)))
        .map(|(f, map)| MatchOutcome {
            teams: f
                .teams
                .iter()
                .map(|t| t.iter().map(|&p| id(p)).collect())
                .collect(),
            score: f.score,
            factors: ctx
                .enabled()
                .map(|(i, name)| (name.to_string(), factor(&f.factors, i)))
                .collect(),
            roles: None,
            region: f.eval.region.map(|r| ix.regions[r].clone()),
            hosts: None,
            host: None,
            backup_host: None,
            relay: false,
            map: map.map(|m| ix.maps.names[m.map as usize].clone()),
            map_vetoed_by: map.map_or(0, |m| m.vetoed_by),
        })
        .collect();
    let mut unmatched: Vec<u32> = bench
        .iter()
        .flat_map(|&u| ix.members_of(u).iter().copied())
        .collect();
    unmatched.sort_by_key(|&p| ix.source[p as usize]);
    let elapsed = deadline.elapsed();
    RoundOutcome {
        matches,
        unmatched: unmatched.into_iter().map(id).collect(),
        rejected: ix.rejected.clone(),
        score,
        stats: SolveStats {
            strategy: strategy.to_string(),
            elapsed,
            elapsed_ms: elapsed.as_secs_f64() * 1e3,
            restarts: run.restarts,
            moves_evaluated: run.moves,
            moves_rejected_by_bound: 0,
            moves_per_second: run.moves as f64 / elapsed.as_secs_f64().max(1e-9),
            time_to_best: run.found_at,
            time_to_best_ms: run.found_at.as_secs_f64() * 1e3,
            stop_reason: run.stop,
            threads,
            seed: options.seed,
            delta_checks: 0,
        },
    }
}

/// Why each left-over player of a big format's round was not placed: too few players
/// (or too few they may meet) for a lobby, or the round's lobbies were full.
pub fn explain_left_over(
    ix: &IndexedPool,
    model: &QueueModel,
    outcome: &RoundOutcome,
) -> Vec<LeftOver> {
    let ctx = Ctx::new(ix, model);
    let size = ctx.size;
    let index: HashMap<&str, u32> = ix
        .ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i as u32))
        .collect();
    let m = &ix.meet;
    let count_by = |key: &[u32], k: u32| key.iter().filter(|&&x| x == k).count();
    let placed = outcome.matches.len();
    let left = outcome.unmatched.len();
    let lobbies: Vec<HashSet<u32>> = outcome
        .matches
        .iter()
        .map(|l| {
            l.teams
                .iter()
                .flatten()
                .filter_map(|id| index.get(id.as_str()).copied())
                .collect()
        })
        .collect();
    // Match scope: every lobby of the round holds someone the player may not meet.
    let avoided_everywhere = |p: usize| {
        model.avoids.scope == AvoidScope::Match
            && !m.avoids.is_empty()
            && !m.avoids[p].is_empty()
            && !lobbies.is_empty()
            && lobbies
                .iter()
                .all(|l| m.avoids[p].iter().any(|o| l.contains(o)))
    };
    outcome
        .unmatched
        .iter()
        .filter_map(|pid| {
            let &p = index.get(pid.as_str())?;
            let pi = p as usize;
            let (kind, reason) = if ix.len() < size {
                (
                    LeftOverKind::NoValidMatch,
                    format!(
                        "not enough players for a lobby of {size}: {} in the pool",
                        ix.len()
                    ),
                )
            } else if !m.same_key.is_empty() && count_by(&m.same_key, m.same_key[pi]) < size {
                let k = m.same_key[pi];
                (
                    LeftOverKind::Filtered,
                    format!(
                        "not enough compatible players for a lobby of {size}: {} with {}",
                        count_by(&m.same_key, k),
                        m.same_names[k as usize]
                    ),
                )
            } else if !m.platform.is_empty()
                && m.crossplay_off[pi]
                && count_by(&m.platform, m.platform[pi]) < size
            {
                let k = m.platform[pi];
                (
                    LeftOverKind::Filtered,
                    format!(
                        "crossplay off: not enough compatible players for a lobby of {size}: {} on {}",
                        count_by(&m.platform, k),
                        m.platform_names[k as usize]
                    ),
                )
            } else if avoided_everywhere(pi) {
                (
                    LeftOverKind::Avoided,
                    format!(
                        "each of the round's {placed} lobbies holds a player they avoid or who avoids them"
                    ),
                )
            } else if ctx.floor_in_force(&[p]).is_some() {
                (
                    LeftOverKind::Floor,
                    format!(
                        "no lobby of {size} with them kept the quality floor in force, or the round's {placed} lobbies were full ({left} players left over)"
                    ),
                )
            } else {
                (
                    LeftOverKind::Outscored,
                    format!(
                        "the round's {placed} lobbies of {size} were full: {left} players left over (fewer than a lobby, or parties that do not fill its teams)"
                    ),
                )
            };
            let mut reason = reason;
            if ix.overdue[pi] {
                reason.push_str(" (waited past max_wait)");
            }
            Some(LeftOver {
                player: pid.clone(),
                kind,
                reason,
            })
        })
        .collect()
}
