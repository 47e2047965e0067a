//! Objective shaping: the default strategy's annealing run searches a different weighting
//! of the score in its first part, then the true one.
//!
//! Which matches can have a host is a structural decision: a match without any possible
//! host is fixed only by several exchanges at once (the right players of a small remote
//! region together with the right players of a neighbouring one), so a run settles it
//! while the walk is still free, early, and rarely revisits it when cold. Early in the
//! run, the two-hosts weight is multiplied by `HOSTS_EARLY_FACTOR`, falling in
//! `HOSTS_EARLY_STEPS` equal steps to the true weight at `HOSTS_EARLY_UNTIL` of the run;
//! from there on the run searches (and its result is valued by) the true objective.
//! Measured on the three 300-player bench pools at 1 s (docs/optimizer-tuning.md,
//! "Hosts first"): +0.00017 to +0.00021 of round score in three paired batches, from one
//! hostless match fewer where the pool's remote players could be grouped.

use crate::score::Scorer;

/// The two-hosts weight's multiplier at the start of the run.
pub const HOSTS_EARLY_FACTOR: f64 = 5.0;

/// Share of the run after which the true weights apply.
pub const HOSTS_EARLY_UNTIL: f64 = 0.6;

/// Steps in which the multiplier falls (each step rebuilds the run's state).
pub const HOSTS_EARLY_STEPS: usize = 6;

/// The early objectives of one run, in order, each with the progress where it ends.
pub struct Shaping<'a> {
    early: Vec<(f64, Scorer<'a>)>,
}

impl<'a> Shaping<'a> {
    /// No shaping: the run searches the true objective throughout.
    pub fn none() -> Shaping<'a> {
        Shaping { early: Vec::new() }
    }

    /// Hosts first, for a scorer whose two-hosts factor counts (peer-to-peer queues).
    pub fn hosts_first(sc: &Scorer<'a>) -> Shaping<'a> {
        if sc.weights[crate::factors::TWO_HOSTS] <= 0.0 {
            return Shaping::none();
        }
        let n = HOSTS_EARLY_STEPS;
        let early = (0..n)
            .map(|i| {
                let left = 1.0 - i as f64 / n as f64;
                let end = HOSTS_EARLY_UNTIL * (i + 1) as f64 / n as f64;
                (
                    end,
                    sc.with_hosts_weight_scaled(1.0 + (HOSTS_EARLY_FACTOR - 1.0) * left),
                )
            })
            .collect();
        Shaping { early }
    }

    /// The objective at `progress`: an early one, or `true_sc` once they have ended.
    pub fn at<'s>(&'s self, progress: f64, true_sc: &'s Scorer<'a>) -> &'s Scorer<'a> {
        self.early
            .iter()
            .find(|(end, _)| progress < *end)
            .map_or(true_sc, |(_, sc)| sc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexedPool;
    use crate::model::{Network, QueueModel};
    use crate::pool::Pool;

    #[test]
    fn the_multiplier_falls_in_steps_to_the_true_weight() {
        let pool = Pool::default();
        let model = QueueModel::default();
        let ix = IndexedPool::build(&pool, &model).unwrap();
        let sc = Scorer::new(&ix, &model);
        let sh = Shaping::hosts_first(&sc);
        let w = |p: f64| sh.at(p, &sc).weights[crate::factors::TWO_HOSTS];
        let base = sc.weights[crate::factors::TWO_HOSTS];
        assert_eq!(w(0.0), base * HOSTS_EARLY_FACTOR);
        // one step in: a sixth of the way down
        let step = HOSTS_EARLY_UNTIL / HOSTS_EARLY_STEPS as f64;
        let second = 1.0 + (HOSTS_EARLY_FACTOR - 1.0) * (1.0 - 1.0 / HOSTS_EARLY_STEPS as f64);
        assert!((w(step * 1.5) - base * second).abs() < 1e-12);
        // never below the true weight, never rising
        let mut last = f64::INFINITY;
        for k in 0..=100 {
            let v = w(k as f64 / 100.0);
            assert!(v >= base && v <= last);
            last = v;
        }
        assert_eq!(w(HOSTS_EARLY_UNTIL), base);
        assert!(std::ptr::eq(sh.at(0.99, &sc), &sc));
        // the other weights are untouched
        for (i, (a, b)) in sh.at(0.0, &sc).weights.iter().zip(&sc.weights).enumerate() {
            if i != crate::factors::TWO_HOSTS {
                assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn queues_without_hosts_are_not_shaped() {
        let pool = Pool::default();
        let model = QueueModel {
            network: Network::Dedicated,
            ..QueueModel::default()
        };
        let ix = IndexedPool::build(&pool, &model).unwrap();
        let sc = Scorer::new(&ix, &model);
        let sh = Shaping::hosts_first(&sc);
        assert!(std::ptr::eq(sh.at(0.0, &sc), &sc));
    }
}
