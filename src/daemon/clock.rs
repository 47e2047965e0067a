//! The daemon's clock. Every time the daemon writes (round times, lease expiry, the
//! countdown) comes from here, so tests drive triggers and leases with a [`ManualClock`]
//! instead of sleeping.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;

    /// The time lease queries compare against. None: the database's own clock, so that
    /// replicas whose clocks disagree still agree on who holds a lease and when it ends.
    /// A manual clock returns its time, so tests drive lease expiry without sleeping.
    fn lease_now(&self) -> Option<DateTime<Utc>> {
        None
    }
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when told to (tests). Clones share the time.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<Mutex<DateTime<Utc>>>);

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        ManualClock(Arc::new(Mutex::new(start)))
    }

    pub fn set(&self, t: DateTime<Utc>) {
        *self.0.lock().expect("clock lock") = t;
    }

    pub fn advance(&self, by: std::time::Duration) {
        let mut t = self.0.lock().expect("clock lock");
        *t += chrono::Duration::from_std(by).expect("duration in range");
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().expect("clock lock")
    }

    fn lease_now(&self) -> Option<DateTime<Utc>> {
        Some(self.now())
    }
}

/// The wall clock shifted by a fixed offset: a replica whose clock runs ahead (or behind,
/// with a negative offset). A fault-injection aid (`matchmaker run --clock-skew`): its
/// round times, countdown and commit times are off by the offset, but its leases are not,
/// since lease queries use the database's clock ([`Clock::lease_now`] stays None).
#[derive(Debug, Clone, Copy)]
pub struct SkewedClock {
    pub offset: chrono::Duration,
}

impl Clock for SkewedClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skewed_clock_runs_ahead_but_leases_use_the_database_clock() {
        let clock = SkewedClock {
            offset: chrono::Duration::seconds(20),
        };
        let ahead = clock.now() - Utc::now();
        assert!(
            ahead > chrono::Duration::seconds(19) && ahead <= chrono::Duration::seconds(20),
            "{ahead}"
        );
        assert_eq!(clock.lease_now(), None);
    }
}
