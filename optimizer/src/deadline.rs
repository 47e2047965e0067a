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

    /// The same start, ending `share` of the budget earlier (none without an end):
    /// a search that must leave time for work after it.
    pub fn reserving(&self, share: f64) -> Self {
        Deadline {
            start: self.start,
            end: self
                .end
                .map(|end| end - (end - self.start).mul_f64(share.clamp(0.0, 1.0))),
        }
    }

    /// The budget, if any.
    pub fn budget(&self) -> Option<Duration> {
        self.end.map(|end| end - self.start)
    }

    /// Share of the time from `since` (an earlier `elapsed()`) to the end that has
    /// passed, in [0, 1]; 0 without an end.
    pub fn progress_since(&self, since: Duration) -> f64 {
        let Some(total) = self.budget() else {
            return 0.0;
        };
        let span = total.saturating_sub(since).as_secs_f64();
        if span <= 0.0 {
            return 1.0;
        }
        ((self.elapsed().saturating_sub(since)).as_secs_f64() / span).min(1.0)
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
    /// A small pool's restarts stopped finding better rounds; the rest of the budget
    /// was left unused.
    Converged,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserving_ends_earlier_by_a_share_of_the_budget() {
        let d = Deadline::after(Duration::from_secs(2));
        assert_eq!(
            d.reserving(0.03).budget(),
            Some(Duration::from_millis(1940))
        );
        assert_eq!(Deadline::never().reserving(0.5).budget(), None);
    }
}
