//! The first-come matchmaker of a big format, what production matchmakers of these
//! genres do and what the lobby search is measured against: units in `enqueued_at`
//! order (longest wait first) fill one lobby at a time, first fit (a unit that does not
//! fit waits for the next lobby); a two-team lobby is split greedily (each party, by
//! skill total, to the team with the lower total that has room), a squad lobby's units
//! go first fit into its squads. The lobby's region is the one minimising its worst
//! latency.

use crate::deadline::{Deadline, StopReason};
use crate::error::PoolError;
use crate::index::IndexedPool;
use crate::model::QueueModel;
use crate::pool::Pool;
use crate::round::RoundOutcome;
use crate::solver::SolveOptions;

use super::lobbies::{self, Formation};
use super::score::Ctx;
use super::{RunStats, Split, finish_lobby, outcome};

/// The first-come round of a big format.
pub fn first_come(pool: &Pool, model: &QueueModel) -> Result<RoundOutcome, PoolError> {
    let deadline = Deadline::never();
    let ix = IndexedPool::build(pool, model)?;
    let ctx = Ctx::new(&ix, model);
    // longest wait first; ties in pool order
    let mut order: Vec<u32> = (0..ix.units.len() as u32).collect();
    let wait = |u: u32| ix.wait_minutes[ix.members_of(u)[0] as usize];
    order.sort_by(|&a, &b| wait(b).total_cmp(&wait(a)).then(a.cmp(&b)));
    let (l, mut bench) = lobbies::cut(&ctx, &order);
    let st = Formation::new(&ctx, l, Vec::new());
    let mut done = Vec::new();
    for (units, eval) in st.lobbies.iter().zip(&st.evals) {
        match finish_lobby(&ctx, units, eval, Split::Greedy) {
            Ok(f) => done.push(f),
            Err(_) => bench.extend(units),
        }
    }
    let run = RunStats {
        restarts: 1,
        moves: 0,
        found_at: deadline.elapsed(),
        stop: StopReason::Exhausted,
    };
    let options = SolveOptions::default();
    Ok(outcome(
        &ctx,
        done,
        &bench,
        "first_come",
        &run,
        &options,
        &deadline,
        1,
    ))
}
