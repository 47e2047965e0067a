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
