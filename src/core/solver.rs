//! Entry point of the core: one round in, one `RoundOutcome` out.
//!
//! PLACEHOLDER: sorts by skill and cuts into matches, ignoring parties and every factor.
//! The real optimizer (issue 2) replaces the body of `solve`; its signature is the
//! contract the daemon and the CLI build against.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::deadline::{Budget, Deadline, StopReason};
use super::error::PoolError;
use super::model::QueueModel;
use super::pool::Pool;
use super::round::{MatchOutcome, RoundOutcome, SolveStats};

/// Search strategy (`--strategy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Our default.
    #[default]
    Default,
    /// Seed 003, faithful: best-improvement swaps with re-split, random restarts.
    Awesomenauts,
    /// Seed 001: sort by skill, cut into windows, split each optimally.
    Chunk,
    /// Seed 002: greedy rebalance inside sorted chunks.
    Greedy,
}

#[derive(Debug, Clone)]
pub struct SolveOptions {
    pub strategy: Strategy,
    pub budget: Budget,
    /// The one seed everything random derives from.
    pub seed: u64,
    /// Worker threads; `None` uses rayon's global pool.
    pub threads: Option<usize>,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            strategy: Strategy::Default,
            budget: Budget::Time(Duration::from_secs(2)),
            seed: 0,
            threads: None,
        }
    }
}

/// Solve one round. Fails only on malformed input; unusable players are rejected in the
/// outcome while the rest of the round is solved.
pub fn solve(
    pool: &Pool,
    model: &QueueModel,
    options: &SolveOptions,
) -> Result<RoundOutcome, PoolError> {
    let deadline = match options.budget {
        Budget::Time(d) => Deadline::after(d),
        Budget::Restarts(_) => Deadline::never(),
    };
    let mut players: Vec<_> = pool.players.iter().collect();
    players.sort_by(|a, b| b.skill.total_cmp(&a.skill).then_with(|| a.id.cmp(&b.id)));
    let per_match = model.players_per_match();
    let mut matches = Vec::new();
    let mut chunks = players.chunks_exact(per_match);
    for chunk in &mut chunks {
        let mut teams = vec![Vec::new(); model.teams];
        for (i, p) in chunk.iter().enumerate() {
            teams[i % model.teams].push(p.id.clone());
        }
        matches.push(MatchOutcome {
            teams,
            score: 0.0,
            factors: BTreeMap::new(),
            roles: None,
            region: None,
            hosts: None,
        });
    }
    let unmatched = chunks.remainder().iter().map(|p| p.id.clone()).collect();
    let elapsed = deadline.elapsed();
    Ok(RoundOutcome {
        matches,
        unmatched,
        rejected: Vec::new(),
        score: 0.0,
        stats: SolveStats {
            strategy: "placeholder".into(),
            elapsed,
            restarts: 1,
            moves_evaluated: 0,
            moves_per_second: 0.0,
            time_to_best: elapsed,
            stop_reason: StopReason::Exhausted,
            threads: 1,
            seed: options.seed,
        },
    })
}
