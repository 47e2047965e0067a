//! The machine's solver cores, shared by the rounds of every queue of this replica.
//!
//! Without it each round's solve built a rayon pool as wide as the machine, so N queues
//! whose rounds overlap ran N x cores busy threads. Now the daemon holds one
//! [`SolverCores`] of `[daemon] solver_threads` cores (default: the machine's) and every
//! round asks it for a [`CoreGrant`] before its solve: the solve runs on as many threads
//! as the grant holds, and gives them back when it returns (small pools return early,
//! freeing their cores for the next round).
//!
//! Why a budget of cores and not one shared rayon pool: under a time budget every
//! restart of the default strategy is one annealing run that cools over the whole
//! budget and never yields, so in a shared pool a round started while another holds
//! every thread would wait for that round's deadline, and a 300 ms round queued behind
//! a 2 s one would blow its budget. A grant is taken once, never waited for: a round
//! gets `min(wanted, free)` cores at once, and when every core is taken it still runs
//! on one thread of its own (waiting would spend its budget). So the replica runs at
//! most `solver_threads` granted threads plus one per round that found no core free,
//! instead of `rounds x cores`, and each round's deadline holds. The count is a
//! `tokio::sync::Semaphore` (already a dependency; permits give themselves back on
//! drop, also when a solve panics).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

/// The replica's solver cores (cheap to clone: all clones share one budget).
#[derive(Debug, Clone)]
pub struct SolverCores {
    total: usize,
    free: Arc<Semaphore>,
}

/// Cores one round's solve may use; they go back to the budget when this is dropped.
#[derive(Debug)]
pub struct CoreGrant {
    threads: usize,
    /// None: no core was free and the round runs on one thread beyond the budget.
    permit: Option<OwnedSemaphorePermit>,
}

impl SolverCores {
    /// A budget of `total` cores (at least 1).
    pub fn new(total: usize) -> Self {
        let total = total.max(1);
        SolverCores {
            total,
            free: Arc::new(Semaphore::new(total)),
        }
    }

    /// As many cores as `std::thread::available_parallelism` reports (1 if unknown).
    pub fn of_this_machine() -> Self {
        SolverCores::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// The budget's size.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Cores granted to solves running now.
    pub fn busy(&self) -> usize {
        self.total - self.free.available_permits()
    }

    /// Cores for one solve that wants `wanted` threads (`None`: the whole budget).
    /// Never waits: `min(wanted, free)` cores, or one thread outside the budget when
    /// none is free.
    pub fn grant(&self, wanted: Option<usize>) -> CoreGrant {
        let wanted = wanted.unwrap_or(self.total).clamp(1, self.total);
        loop {
            let n = wanted.min(self.free.available_permits());
            if n == 0 {
                return CoreGrant {
                    threads: 1,
                    permit: None,
                };
            }
            match self.free.clone().try_acquire_many_owned(n as u32) {
                Ok(permit) => {
                    return CoreGrant {
                        threads: n,
                        permit: Some(permit),
                    };
                }
                // another round took some between the count and the take: count again
                Err(TryAcquireError::NoPermits) => continue,
                // never closed; a single thread is always safe
                Err(TryAcquireError::Closed) => {
                    return CoreGrant {
                        threads: 1,
                        permit: None,
                    };
                }
            }
        }
    }
}

impl CoreGrant {
    /// Solver threads of this round.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Whether the round runs on a thread beyond the budget (no core was free).
    pub fn beyond_budget(&self) -> bool {
        self.permit.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_never_exceed_the_budget_and_come_back_on_drop() {
        let cores = SolverCores::new(4);
        let a = cores.grant(None);
        assert_eq!((a.threads(), a.beyond_budget()), (4, false));
        assert_eq!(cores.busy(), 4);
        // nothing free: one thread of its own, outside the budget, without waiting
        let b = cores.grant(Some(2));
        assert_eq!((b.threads(), b.beyond_budget()), (1, true));
        assert_eq!(cores.busy(), 4);
        drop(a);
        assert_eq!(cores.busy(), 0);
        let c = cores.grant(Some(3));
        let d = cores.grant(None);
        assert_eq!((c.threads(), d.threads()), (3, 1));
        assert!(!d.beyond_budget());
        assert_eq!(cores.busy(), 4);
        drop((b, c, d));
        assert_eq!(cores.busy(), 0);
    }

    #[test]
    fn a_wish_beyond_the_budget_is_capped_and_zero_means_one() {
        let cores = SolverCores::new(2);
        assert_eq!(cores.grant(Some(16)).threads(), 2);
        assert_eq!(cores.grant(Some(0)).threads(), 1);
        assert_eq!(SolverCores::new(0).total(), 1);
    }
}
