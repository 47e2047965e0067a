//! The search budget. Running out of time is not an error: the solver checks the budget
//! between moves and returns its best round so far with the reason it stopped.

use std::time::{Duration, Instant};

use serde::Serialize;

/// How long a search may run. `Moves` makes results independent of machine speed and
/// thread count (the determinism contract); `Time` is what the daemon uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    Time(Duration),
    /// Total number of restarts (each restart runs its local search to a local optimum).
    Restarts(u64),
}

/// A wall-clock deadline handed to the core: the only clock the core ever reads.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    start: Instant,
    end: Option<Instant>,
}

impl Deadline {
    pub fn after(budget: Duration) -> Self {
        let start = Instant::now();
        Deadline {
            start,
            end: Some(start + budget),
        }
    }

    pub fn never() -> Self {
        Deadline {
            start: Instant::now(),
            end: None,
        }
    }

    pub fn expired(&self) -> bool {
        self.end.is_some_and(|end| Instant::now() >= end)
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
}

/// Why the search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The wall-clock budget ended.
    Deadline,
    /// The restart budget was used up.
    RestartBudget,
    /// The search proved there is nothing left to improve (e.g. pool too small).
    Exhausted,
}
