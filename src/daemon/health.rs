//! What `/readyz` reports: the daemon's own account of itself, kept up to date by the
//! supervisor and each queue's worker, and read by the endpoints (and tests).
//!
//! Ready means: the schema is current (checked by the caller at each request), the
//! supervisor loop runs, and every configured queue's worker has looked at its queue and
//! either leads it (holds the lease) or stands by (another replica holds it). A worker
//! whose last look failed (a missing table, a lost connection) makes the daemon not
//! ready until a look succeeds again. The running config is always valid (a reload
//! validates first and keeps the old config on a bad file); a refused reload is reported
//! in the body but does not make the daemon unready, since it keeps working as before.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

/// One queue's worker, as it last reported.
#[derive(Debug, Clone, PartialEq)]
pub enum QueueRole {
    /// No look at the queue yet.
    Starting,
    /// This replica holds the queue's lease.
    Leading { term: i64 },
    /// Another replica holds the lease; this one takes over if it lapses.
    Standby,
    /// The last look failed with this error.
    Failing(String),
}

#[derive(Debug, Clone)]
struct QueueHealth {
    role: QueueRole,
    /// The countdown's next round, with the daemon clock's `now` and the instant it was
    /// read (so that the seconds left do not depend on which clock the daemon runs).
    next_round: Option<(DateTime<Utc>, DateTime<Utc>, Instant)>,
}

#[derive(Debug)]
struct State {
    /// Set while the daemon waits for the schema (the schema line says why).
    waiting_for_schema: bool,
    /// The supervisor's last pass and its poll interval.
    supervisor_beat: Option<(Instant, Duration)>,
    queues: BTreeMap<String, QueueHealth>,
    /// The last reload that was refused, if the last reload was refused.
    reload_refused: Option<(DateTime<Utc>, String)>,
    stopping: bool,
}

/// Shared by the daemon's tasks and the HTTP endpoints.
#[derive(Debug)]
pub struct Health {
    state: Mutex<State>,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            state: Mutex::new(State {
                waiting_for_schema: false,
                supervisor_beat: None,
                queues: BTreeMap::new(),
                reload_refused: None,
                stopping: false,
            }),
        }
    }
}

/// The answer of `/readyz`.
#[derive(Debug, Clone, PartialEq)]
pub struct Readiness {
    pub ready: bool,
    /// One line per check, for people.
    pub lines: Vec<String>,
}

impl Readiness {
    pub fn body(&self) -> String {
        let mut text = String::from(if self.ready { "ready\n" } else { "not ready\n" });
        for line in &self.lines {
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}

impl Health {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves plain data: still readable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn waiting_for_schema(&self, waiting: bool) {
        self.lock().waiting_for_schema = waiting;
    }

    /// The supervisor's pass: the configured queues and its poll interval. Queues no
    /// longer configured are forgotten.
    pub fn supervisor_pass(&self, queues: &[String], poll: Duration) {
        let mut s = self.lock();
        s.supervisor_beat = Some((Instant::now(), poll));
        s.queues.retain(|name, _| queues.contains(name));
        for name in queues {
            s.queues.entry(name.clone()).or_insert(QueueHealth {
                role: QueueRole::Starting,
                next_round: None,
            });
        }
    }

    /// A worker's look at its queue.
    pub fn queue_role(&self, queue: &str, role: QueueRole) {
        if let Some(q) = self.lock().queues.get_mut(queue) {
            if !matches!(role, QueueRole::Leading { .. }) {
                q.next_round = None;
            }
            q.role = role;
        }
    }

    /// The countdown of a queue this replica leads (`None`: unknown).
    pub fn next_round(&self, queue: &str, at: Option<DateTime<Utc>>, now: DateTime<Utc>) {
        if let Some(q) = self.lock().queues.get_mut(queue) {
            q.next_round = at.map(|at| (at, now, Instant::now()));
        }
    }

    /// Seconds to each queue's next round (`None`: unknown or not leading).
    pub fn seconds_to_next_round(&self) -> Vec<(String, Option<f64>)> {
        self.lock()
            .queues
            .iter()
            .map(|(name, q)| {
                let seconds = q.next_round.map(|(at, now, read)| {
                    let left = (at - now).num_milliseconds() as f64 / 1000.0
                        - read.elapsed().as_secs_f64();
                    left.max(0.0)
                });
                (name.clone(), seconds)
            })
            .collect()
    }

    /// The configured queues and this replica's role in each, by name.
    pub fn queue_roles(&self) -> Vec<(String, QueueRole)> {
        self.lock()
            .queues
            .iter()
            .map(|(name, q)| (name.clone(), q.role.clone()))
            .collect()
    }

    pub fn config_reload(&self, refused: Option<String>) {
        self.lock().reload_refused = refused.map(|e| (Utc::now(), e));
    }

    pub fn stopping(&self) {
        self.lock().stopping = true;
    }

    /// Readiness, given the schema check's result (`Err`: why the schema is not usable).
    pub fn readiness(&self, schema: Result<i64, String>) -> Readiness {
        let s = self.lock();
        let mut ready = true;
        let mut lines = Vec::new();
        match schema {
            Ok(latest) => lines.push(format!("schema: current (migration {latest})")),
            Err(e) => {
                ready = false;
                lines.push(format!("schema: {e}"));
            }
        }
        match &s.reload_refused {
            None => lines.push("config: valid".into()),
            Some((at, e)) => lines.push(format!(
                "config: running the last valid config; the reload at {} was refused: {e}",
                at.format("%Y-%m-%d %H:%M:%S UTC")
            )),
        }
        if s.stopping {
            ready = false;
            lines.push("supervisor: shutting down".into());
        } else if s.waiting_for_schema {
            ready = false;
            lines.push("supervisor: waiting for the schema before starting the queues".into());
        } else {
            match s.supervisor_beat {
                None => {
                    ready = false;
                    lines.push("supervisor: starting".into());
                }
                Some((at, poll)) => {
                    // A pass at least every poll interval; allow a slow database.
                    let limit = poll * 2 + Duration::from_secs(30);
                    if at.elapsed() > limit {
                        ready = false;
                        lines.push(format!(
                            "supervisor: no pass for {:.0?} (expected every {poll:?})",
                            at.elapsed()
                        ));
                    } else {
                        lines.push("supervisor: running".into());
                    }
                }
            }
        }
        for (name, q) in &s.queues {
            let line = match &q.role {
                QueueRole::Starting => {
                    ready = false;
                    "starting (no look at the queue yet)".to_string()
                }
                QueueRole::Leading { term } => format!("leading (lease term {term})"),
                QueueRole::Standby => "standing by (another replica leads)".to_string(),
                QueueRole::Failing(e) => {
                    ready = false;
                    format!("failing: {e}")
                }
            };
            lines.push(format!("queue {name}: {line}"));
        }
        Readiness { ready, lines }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_when_every_queue_leads_or_stands_by_and_the_schema_is_current() {
        let h = Health::default();
        assert!(!h.readiness(Ok(9)).ready, "no supervisor pass yet");
        h.supervisor_pass(&["a".into(), "b".into()], Duration::from_secs(5));
        let r = h.readiness(Ok(9));
        assert!(!r.ready, "{r:?}");
        assert!(r.body().contains("queue a: starting"), "{}", r.body());
        h.queue_role("a", QueueRole::Leading { term: 3 });
        h.queue_role("b", QueueRole::Standby);
        assert!(h.readiness(Ok(9)).ready);
        let r = h.readiness(Err("database schema is not migrated".into()));
        assert!(!r.ready);
        assert!(
            r.body()
                .starts_with("not ready\nschema: database schema is not migrated")
        );
        h.queue_role(
            "b",
            QueueRole::Failing("relation \"leases\" does not exist".into()),
        );
        let r = h.readiness(Ok(9));
        assert!(!r.ready);
        assert!(
            r.body().contains("queue b: failing: relation"),
            "{}",
            r.body()
        );
        // A removed queue no longer counts.
        h.supervisor_pass(&["a".into()], Duration::from_secs(5));
        assert!(h.readiness(Ok(9)).ready);
        // A refused reload is reported, but the daemon keeps working: still ready.
        h.config_reload(Some("config key `daemon.poll_interval`: bad".into()));
        let r = h.readiness(Ok(9));
        assert!(r.ready && r.body().contains("was refused"), "{}", r.body());
        h.waiting_for_schema(true);
        assert!(!h.readiness(Ok(9)).ready);
    }

    #[test]
    fn seconds_to_next_round_only_while_leading() {
        let h = Health::default();
        h.supervisor_pass(&["a".into()], Duration::from_secs(5));
        let now = Utc::now();
        h.queue_role("a", QueueRole::Leading { term: 1 });
        h.next_round("a", Some(now + chrono::Duration::seconds(30)), now);
        let left = h.seconds_to_next_round()[0].1.unwrap();
        assert!(left > 25.0 && left <= 30.0, "{left}");
        h.queue_role("a", QueueRole::Standby);
        assert_eq!(h.seconds_to_next_round()[0].1, None);
    }
}
