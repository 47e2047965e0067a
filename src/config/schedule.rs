//! When a queue's scheduled rounds are due: every fixed interval after the previous round
//! (`every = "2m"`), or at the ticks of a cron expression (`cron = "0 */2 * * * *"`).
//!
//! Pure: "the next tick after this instant" is all the daemon asks, with its own (possibly
//! injected) clock. Cron expressions are parsed by `croner`, the cron engine that
//! tokio-cron-scheduler runs on, with the same syntax (seconds field optional here). We
//! use croner directly rather than tokio-cron-scheduler's job runner: the runner keeps
//! its own wall clock, while the countdown and the tests need "the next tick after t"
//! on the daemon's injectable clock.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds};

#[derive(Clone)]
pub enum Schedule {
    /// A round this long after the previous one (or after start-up).
    Every(Duration),
    /// A round at each tick of the expression (UTC).
    Cron { expression: String, cron: Box<Cron> },
}

impl Schedule {
    pub fn every(interval: Duration) -> Self {
        Schedule::Every(interval)
    }

    /// Parse a cron expression: 5 fields (minute precision) or 6 (with seconds first).
    pub fn cron(expression: &str) -> Result<Self, String> {
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .dom_and_dow(true)
            .build()
            .parse(expression)
            .map_err(|e| format!("invalid cron expression {expression:?}: {e}"))?;
        Ok(Schedule::Cron {
            expression: expression.to_string(),
            cron: Box::new(cron),
        })
    }

    /// The first round time strictly after `after` (for `Every`: `after + interval`).
    pub fn next_after(&self, after: DateTime<Utc>) -> DateTime<Utc> {
        match self {
            Schedule::Every(interval) => {
                after + chrono::Duration::from_std(*interval).unwrap_or(chrono::Duration::MAX)
            }
            Schedule::Cron { cron, .. } => cron
                .find_next_occurrence(&after, false)
                // An expression with no future tick (e.g. Feb 30) never fires.
                .unwrap_or(DateTime::<Utc>::MAX_UTC),
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Every(d) => write!(f, "every {}", humantime::format_duration(*d)),
            Schedule::Cron { expression, .. } => write!(f, "cron {expression}"),
        }
    }
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn every_adds_the_interval() {
        let t = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 30).unwrap();
        let s = Schedule::every(Duration::from_secs(120));
        assert_eq!(s.next_after(t), t + chrono::Duration::seconds(120));
    }

    #[test]
    fn cron_finds_the_next_tick_with_or_without_seconds() {
        let t = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 30).unwrap();
        let five = Schedule::cron("*/2 * * * *").unwrap();
        assert_eq!(
            five.next_after(t),
            Utc.with_ymd_and_hms(2026, 1, 1, 12, 2, 0).unwrap()
        );
        let six = Schedule::cron("15 * * * * *").unwrap();
        assert_eq!(
            six.next_after(t),
            Utc.with_ymd_and_hms(2026, 1, 1, 12, 1, 15).unwrap()
        );
        assert!(Schedule::cron("every tuesday-ish").is_err());
    }
}
