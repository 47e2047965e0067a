//! The daemon's clock. Every time the daemon writes (round times, lease expiry, the
//! countdown) comes from here, so tests drive triggers and leases with a [`ManualClock`]
//! instead of sleeping.

use std::sync::atomic::{AtomicI64, Ordering};
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

/// A clock that reads the database's time: the inner clock shifted by the offset last
/// measured against the database (`clock_timestamp()`). The leader writes round times and
/// the countdown clients read against the database's `now()`; with this, a replica whose
/// own clock is off still writes a countdown that is right for them.
pub struct DatabaseAligned {
    inner: Arc<dyn Clock>,
    /// Database time minus inner time, in microseconds.
    offset_us: AtomicI64,
    /// The round trip of the sample the offset came from (microseconds): a later sample
    /// replaces it only when about as tight, so one slow query cannot skew the offset.
    sample_rtt_us: AtomicI64,
}

/// A sample whose round trip is longer than this says little about the offset.
const MAX_SAMPLE_RTT_US: i64 = 250_000;

impl DatabaseAligned {
    pub fn new(inner: Arc<dyn Clock>) -> Self {
        DatabaseAligned {
            inner,
            offset_us: AtomicI64::new(0),
            sample_rtt_us: AtomicI64::new(i64::MAX),
        }
    }

    /// The inner clock's time, unshifted (to time a sample).
    pub fn inner_now(&self) -> DateTime<Utc> {
        self.inner.now()
    }

    /// A sample: `database` was read between `sent` and `received` (inner clock).
    /// The database's time is taken to be at the midpoint of the round trip. Returns
    /// whether the offset was taken.
    pub fn observe(
        &self,
        sent: DateTime<Utc>,
        database: DateTime<Utc>,
        received: DateTime<Utc>,
    ) -> bool {
        let rtt = (received - sent).num_microseconds().unwrap_or(i64::MAX);
        if !(0..=MAX_SAMPLE_RTT_US).contains(&rtt) {
            return false;
        }
        // A sample much slower than the one in use is skipped; the bar rises slowly
        // (x2 per refusal) so that a network that got slower for good is followed.
        let kept = self.sample_rtt_us.load(Ordering::Relaxed);
        if kept != i64::MAX && rtt > kept.saturating_mul(2).max(5_000) {
            self.sample_rtt_us
                .store(kept.saturating_mul(2), Ordering::Relaxed);
            return false;
        }
        let midpoint = sent + (received - sent) / 2;
        let offset = (database - midpoint).num_microseconds().unwrap_or(0);
        self.offset_us.store(offset, Ordering::Relaxed);
        self.sample_rtt_us.store(rtt, Ordering::Relaxed);
        true
    }

    /// Database time minus the inner clock's.
    pub fn offset(&self) -> chrono::Duration {
        chrono::Duration::microseconds(self.offset_us.load(Ordering::Relaxed))
    }
}

impl Clock for DatabaseAligned {
    fn now(&self) -> DateTime<Utc> {
        self.inner.now() + self.offset()
    }

    fn lease_now(&self) -> Option<DateTime<Utc>> {
        self.inner.lease_now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_aligned_clock_reads_the_database_time_from_a_skewed_one() {
        let skewed = Arc::new(SkewedClock {
            offset: chrono::Duration::seconds(20),
        });
        let clock = DatabaseAligned::new(skewed);
        let sent = clock.inner_now();
        let received = sent + chrono::Duration::milliseconds(4);
        let database = Utc::now() + chrono::Duration::milliseconds(2);
        assert!(clock.observe(sent, database, received));
        let error = (clock.now() - Utc::now()).num_milliseconds().abs();
        assert!(error < 100, "{error} ms off the database clock");
        // A slow sample does not replace a tight one.
        let late = clock.inner_now();
        assert!(!clock.observe(
            late,
            Utc::now() + chrono::Duration::seconds(5),
            late + chrono::Duration::milliseconds(200)
        ));
        assert!((clock.now() - Utc::now()).num_milliseconds().abs() < 100);
        // Nor does a sample slower than any.
        assert!(!clock.observe(late, Utc::now(), late + chrono::Duration::seconds(1)));
    }

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
