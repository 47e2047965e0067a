//! The figures of a peak evening, pure: from the rounds the replicas committed, the
//! countdowns sampled while they ran and the players' waits, the table `matchmaker-lab peak`
//! prints and the targets it is held to: no round late by more than 1 s at p99,
//! nobody waiting past `max_wait` plus one round, countdown error p99 under 1 s.
//!
//! - **Lateness** of a scheduled round: its start against its tick, the previous round's
//!   commit time plus the queue's interval (the daemon's own rule, `countdown::next_tick`).
//!   A round whose queue waited for players in between (below `min_pool`: a countdown
//!   sample said so) is not late but counted apart; early starts (`max_wait`) are early.
//! - **Countdown error**, per matched player: the last countdown of their queue sampled
//!   while they waited (what they were last shown before their round) against the start
//!   of the round that placed them. The countdown names the next moment a round can run,
//!   the players it still misses and the latest moment it runs regardless; the round it
//!   names starts at that next moment once those players arrived, or at the latest moment
//!   ([`predicted_start`]). Counted apart: players placed by an early start at the target
//!   pool or a backfill round (a countdown names neither), players never sampled while
//!   they waited, and players whose countdown's condition was never met (it named no
//!   latest moment, or a round running that did not have them).
//! - **Players past `max_wait` plus one round** (the queue's interval): all of them are
//!   counted and shown. Four kinds are shown apart and do not fail the target (the
//!   table says how many of each): every round after they reached `max_wait` that left
//!   them over found no valid match with them (its own explanation: nobody could host
//!   them, or no match of the queue's rules), or, with game servers, no free server for
//!   the match it formed with them (some rounds' explanation `no_server`); their queue held fewer players than one
//!   match after they reached `max_wait`, and they were matched within one round of it
//!   holding one; or they were matched by the first round after they reached it, and
//!   that round started within 1 s of its tick (they reached `max_wait` while the round
//!   before it ran, and a tick is that round's commit plus the interval: its duration
//!   and the lateness are the excess). [`WaitRow::apart`] says which; the command reads
//!   it from the rounds and entries (`cli::peak`).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::sim::shown_countdown::{Shown, predicted_start};

/// One committed round, as `rounds` stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundRow {
    pub queue: String,
    pub round_id: i64,
    pub trigger: String,
    pub started_at: DateTime<Utc>,
    pub committed_at: DateTime<Utc>,
    pub snapshot_ms: f64,
    pub solve_ms: f64,
    pub commit_ms: f64,
}

/// One read of a queue's countdown (`queue_state`), with the newest round id of that
/// queue at the same moment.
#[derive(Debug, Clone, PartialEq)]
pub struct CountdownSample {
    pub queue: String,
    /// When it was read (the database's clock, as the rounds' times).
    pub sampled_at: DateTime<Utc>,
    pub next_round_at: Option<DateTime<Utc>>,
    pub waiting_for: String,
    pub last_round_id: Option<i64>,
    pub players_missing: i32,
    pub latest_round_at: Option<DateTime<Utc>>,
    pub round_started_at: Option<DateTime<Utc>>,
    /// When the leader counted the pool the countdown is made of.
    pub counted_at: Option<DateTime<Utc>>,
}

impl CountdownSample {
    /// What a player of the queue was shown.
    pub fn shown(&self) -> Shown {
        Shown {
            read_at: self.sampled_at,
            counted_at: self.counted_at,
            next_round_at: self.next_round_at,
            waiting_for: self.waiting_for.clone(),
            players_missing: self.players_missing,
            latest_round_at: self.latest_round_at,
            round_started_at: self.round_started_at,
        }
    }
}

/// One matched player: when they enqueued, and the round that placed them.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedPlayer {
    pub queue: String,
    pub enqueued_at: DateTime<Utc>,
    pub round_id: i64,
}

/// What the countdown error is measured on: the matched players and every queue's
/// arrivals (enqueue times, sorted).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Placements {
    pub players: Vec<PlacedPlayer>,
    pub arrivals: HashMap<String, Vec<DateTime<Utc>>>,
}

/// One player's wait in a queue: to the start of the round that matched them, or to
/// when they left (cancelled, or still queued at the end).
#[derive(Debug, Clone, PartialEq)]
pub struct WaitRow {
    pub queue: String,
    pub waited_secs: f64,
    pub matched: bool,
    /// Past the bound for a reason no matchmaker could help (None: not past it, or no
    /// such reason: then it fails the target).
    pub apart: Option<PastBoundApart>,
}

/// Why a wait past `max_wait` plus one round is counted apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PastBoundApart {
    /// Every round that had them after they reached `max_wait` (at least one) left them
    /// over with no valid match: nobody could host them (peer-to-peer), or no match of
    /// the queue's rules (party shape, roles) included them.
    NoValidMatch,
    /// Their queue held fewer players than one match after they reached `max_wait`, and
    /// they were matched (or left) within one round of it first holding one.
    BelowOneMatch,
    /// Matched by the first round that started after they reached `max_wait`, and that
    /// round started within 1 s of its tick: they reached `max_wait` while the round
    /// before it ran (its duration and this round's lateness are the excess).
    NextRound,
    /// Every round that had them after they reached `max_wait` (at least one) left them
    /// over with no valid match or no game server for theirs, and at least one for want
    /// of a server (`no_server`: a queue that requires servers, its regions full).
    NoServer,
}

/// Per queue: its round interval and `max_wait`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueTiming {
    pub every: Duration,
    pub max_wait: Duration,
}

impl QueueTiming {
    /// `max_wait` plus one round: the longest wait the target allows.
    pub fn bound(&self) -> Duration {
        self.max_wait + self.every
    }
}

/// The measured evening.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PeakFigures {
    pub rounds: usize,
    pub rounds_by_trigger: BTreeMap<String, usize>,
    /// Lateness of scheduled rounds (seconds).
    pub lateness: Vec<f64>,
    /// Scheduled rounds whose queue waited for players after the tick (not late).
    pub waited_for_players: usize,
    /// Per matched player: |start of the round their last countdown named - start of
    /// the round that placed them| (seconds).
    pub countdown_errors: Vec<f64>,
    /// Players placed by an early start at the target pool or a backfill round.
    pub early_start_players: usize,
    /// Players whose last countdown's condition was never met (no latest moment named).
    pub players_condition_not_met: usize,
    /// Players no sample of their queue's countdown saw while they waited.
    pub players_never_sampled: usize,
    pub waits: usize,
    pub matched_waits: usize,
    /// Waits past max_wait plus one round interval that fail the target, per queue.
    pub past_bound: BTreeMap<String, usize>,
    /// The largest excess over that bound of those (seconds; 0 if none).
    pub worst_excess_secs: f64,
    /// Waits past the bound counted apart (no matchmaker could have placed them sooner),
    /// by why, and per queue.
    pub past_bound_apart: BTreeMap<PastBoundApart, usize>,
    pub past_bound_apart_by_queue: BTreeMap<String, usize>,
    /// The largest excess over the bound of those counted apart (seconds; 0 if none).
    pub worst_apart_excess_secs: f64,
    pub snapshot_ms: Vec<f64>,
    pub solve_ms: Vec<f64>,
    pub commit_ms: Vec<f64>,
}

/// Nearest-rank percentile `p` in [0, 1]; None for no values.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some(v[((v.len() - 1) as f64 * p.clamp(0.0, 1.0)).round() as usize])
}

fn secs(d: chrono::Duration) -> f64 {
    d.num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6
}

impl PeakFigures {
    pub fn measure(
        rounds: &[RoundRow],
        samples: &[CountdownSample],
        waits: &[WaitRow],
        placements: &Placements,
        timing: &HashMap<String, QueueTiming>,
    ) -> PeakFigures {
        let mut f = PeakFigures {
            rounds: rounds.len(),
            ..PeakFigures::default()
        };
        let mut by_queue: HashMap<&str, Vec<&RoundRow>> = HashMap::new();
        for r in rounds {
            *f.rounds_by_trigger.entry(r.trigger.clone()).or_default() += 1;
            by_queue.entry(&r.queue).or_default().push(r);
            f.snapshot_ms.push(r.snapshot_ms);
            f.solve_ms.push(r.solve_ms);
            f.commit_ms.push(r.commit_ms);
        }
        for list in by_queue.values_mut() {
            list.sort_by_key(|r| r.round_id);
        }
        // (queue, last round seen) pairs whose countdown said "waiting for players".
        let waited: std::collections::HashSet<(&str, Option<i64>)> = samples
            .iter()
            .filter(|s| matches!(s.waiting_for.as_str(), "min_pool" | "players"))
            .map(|s| (s.queue.as_str(), s.last_round_id))
            .collect();

        for (queue, list) in &by_queue {
            let Some(t) = timing.get(*queue) else {
                continue;
            };
            let every = chrono::Duration::from_std(t.every).unwrap_or(chrono::Duration::MAX);
            for pair in list.windows(2) {
                let (prev, round) = (pair[0], pair[1]);
                if round.trigger != "schedule" {
                    continue;
                }
                if waited.contains(&(*queue, Some(prev.round_id))) {
                    f.waited_for_players += 1;
                    continue;
                }
                f.lateness
                    .push(secs(round.started_at - (prev.committed_at + every)).max(0.0));
            }
        }

        let mut samples_of: HashMap<&str, Vec<&CountdownSample>> = HashMap::new();
        for s in samples {
            samples_of.entry(&s.queue).or_default().push(s);
        }
        for list in samples_of.values_mut() {
            list.sort_by_key(|s| s.sampled_at);
        }
        let round_of: HashMap<i64, &RoundRow> = rounds.iter().map(|r| (r.round_id, r)).collect();
        let no_arrivals = Vec::new();
        for p in &placements.players {
            let Some(round) = round_of.get(&p.round_id) else {
                continue;
            };
            if matches!(round.trigger.as_str(), "pool_size" | "backfill") {
                f.early_start_players += 1;
                continue;
            }
            // The last sample taken while they waited, before their round started.
            let list = samples_of
                .get(p.queue.as_str())
                .map_or(&[][..], |l| l.as_slice());
            let before = list.partition_point(|s| s.sampled_at < round.started_at);
            let Some(last) = list[..before]
                .last()
                .filter(|s| s.sampled_at >= p.enqueued_at)
            else {
                f.players_never_sampled += 1;
                continue;
            };
            let arrivals = placements.arrivals.get(&p.queue).unwrap_or(&no_arrivals);
            match predicted_start(&last.shown(), p.enqueued_at, arrivals) {
                Some(predicted) => f
                    .countdown_errors
                    .push(secs(round.started_at - predicted).abs()),
                None => f.players_condition_not_met += 1,
            }
        }

        for w in waits {
            f.waits += 1;
            f.matched_waits += usize::from(w.matched);
            let Some(t) = timing.get(&w.queue) else {
                continue;
            };
            let bound = t.bound().as_secs_f64();
            if w.waited_secs <= bound {
                continue;
            }
            let excess = w.waited_secs - bound;
            match w.apart {
                Some(why) => {
                    *f.past_bound_apart.entry(why).or_default() += 1;
                    *f.past_bound_apart_by_queue
                        .entry(w.queue.clone())
                        .or_default() += 1;
                    f.worst_apart_excess_secs = f.worst_apart_excess_secs.max(excess);
                }
                None => {
                    *f.past_bound.entry(w.queue.clone()).or_default() += 1;
                    f.worst_excess_secs = f.worst_excess_secs.max(excess);
                }
            }
        }
        f
    }

    /// Players past the bound that fail the target.
    pub fn past_bound_total(&self) -> usize {
        self.past_bound.values().sum()
    }

    /// Players past the bound counted apart (shown, not failing the target).
    pub fn past_bound_apart_total(&self) -> usize {
        self.past_bound_apart.values().sum()
    }

    /// The targets that failed, in words (empty: all held). A run with no scheduled
    /// round or no countdown sample fails too: nothing was measured.
    pub fn failed_targets(&self) -> Vec<String> {
        let mut failed = Vec::new();
        match percentile(&self.lateness, 0.99) {
            None => failed.push("no scheduled round was measured".to_string()),
            Some(p99) if p99 > 1.0 => {
                failed.push(format!("rounds late by {p99:.3} s at p99 (target: <= 1 s)"))
            }
            Some(_) => {}
        }
        match percentile(&self.countdown_errors, 0.99) {
            None => failed.push("no countdown was measured".to_string()),
            Some(p99) if p99 >= 1.0 => {
                failed.push(format!("countdown error {p99:.3} s at p99 (target: < 1 s)"))
            }
            Some(_) => {}
        }
        if self.past_bound_total() > 0 {
            failed.push(format!(
                "{} players waited past max_wait plus one round, not counting those no \
                 matchmaker could have placed sooner (worst by {:.1} s; per queue: {})",
                self.past_bound_total(),
                self.worst_excess_secs,
                self.past_bound
                    .iter()
                    .map(|(q, n)| format!("{q} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        failed
    }

    /// The players past the bound counted apart, per queue (None: none).
    pub fn apart_note(&self) -> Option<String> {
        (!self.past_bound_apart_by_queue.is_empty()).then(|| {
            format!(
                "players past max_wait + one round counted apart, per queue: {} (worst by {:.1} s)",
                self.past_bound_apart_by_queue
                    .iter()
                    .map(|(q, n)| format!("{q} {n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.worst_apart_excess_secs
            )
        })
    }

    /// The table's rows: (what, value).
    pub fn rows(&self) -> Vec<(String, String)> {
        let p = |v: &[f64], scale: f64, unit: &str, digits: usize| match (
            percentile(v, 0.5),
            percentile(v, 0.99),
            percentile(v, 1.0),
        ) {
            (Some(a), Some(b), Some(c)) => format!(
                "{:.digits$} / {:.digits$} / {:.digits$} {unit}",
                a * scale,
                b * scale,
                c * scale
            ),
            _ => "-".into(),
        };
        let triggers = self
            .rounds_by_trigger
            .iter()
            .map(|(t, n)| format!("{t} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        vec![
            (
                "rounds committed (by trigger)".into(),
                format!("{} ({triggers})", self.rounds),
            ),
            (
                "scheduled rounds late, p50 / p99 / max".into(),
                p(&self.lateness, 1.0, "s", 3),
            ),
            (
                "  of them over 1 s late".into(),
                format!(
                    "{} of {}",
                    self.lateness.iter().filter(|l| **l > 1.0).count(),
                    self.lateness.len()
                ),
            ),
            (
                "  scheduled rounds that waited for players".into(),
                self.waited_for_players.to_string(),
            ),
            (
                "countdown error per player (last shown vs start), p50 / p99 / max".into(),
                p(&self.countdown_errors, 1.0, "s", 3),
            ),
            (
                "  players measured (apart: early start / never sampled / condition not met)"
                    .into(),
                format!(
                    "{} ({} / {} / {})",
                    self.countdown_errors.len(),
                    self.early_start_players,
                    self.players_never_sampled,
                    self.players_condition_not_met
                ),
            ),
            (
                "waits measured (matched)".into(),
                format!("{} ({})", self.waits, self.matched_waits),
            ),
            ("players past max_wait + one round (all)".into(), {
                let all = self.past_bound_total() + self.past_bound_apart_total();
                if all == 0 {
                    "0".into()
                } else {
                    format!(
                        "{all} (worst by {:.1} s)",
                        self.worst_excess_secs.max(self.worst_apart_excess_secs)
                    )
                }
            }),
            (
                "  apart: no valid match in any round after max_wait".into(),
                format!(
                    "{} (nobody could host them, or no match of the rules)",
                    self.past_bound_apart
                        .get(&PastBoundApart::NoValidMatch)
                        .copied()
                        .unwrap_or(0)
                ),
            ),
            (
                "  apart: queue held under one match after max_wait".into(),
                format!(
                    "{} (matched within one round of it holding one)",
                    self.past_bound_apart
                        .get(&PastBoundApart::BelowOneMatch)
                        .copied()
                        .unwrap_or(0)
                ),
            ),
            (
                "  apart: matched by the next round, on time".into(),
                format!(
                    "{} (reached max_wait while the round before ran)",
                    self.past_bound_apart
                        .get(&PastBoundApart::NextRound)
                        .copied()
                        .unwrap_or(0)
                ),
            ),
            (
                "  apart: no game server free after max_wait".into(),
                format!(
                    "{} (every round after it had no server for their match)",
                    self.past_bound_apart
                        .get(&PastBoundApart::NoServer)
                        .copied()
                        .unwrap_or(0)
                ),
            ),
            (
                "  the others (the target: 0)".into(),
                if self.past_bound_total() == 0 {
                    "0".into()
                } else {
                    format!(
                        "{} (worst by {:.1} s)",
                        self.past_bound_total(),
                        self.worst_excess_secs
                    )
                },
            ),
            (
                "snapshot ms, p50 / p99 / max".into(),
                p(&self.snapshot_ms, 1.0, "ms", 1),
            ),
            (
                "solve ms, p50 / p99 / max".into(),
                p(&self.solve_ms, 1.0, "ms", 1),
            ),
            (
                "commit ms, p50 / p99 / max".into(),
                p(&self.commit_ms, 1.0, "ms", 1),
            ),
        ]
    }
}

impl fmt::Display for PeakFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, value) in self.rows() {
            writeln!(f, "  {name:<50} {value}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(s: f64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000, 0).unwrap()
            + chrono::Duration::microseconds((s * 1e6) as i64)
    }

    fn round(id: i64, trigger: &str, started: f64, committed: f64) -> RoundRow {
        RoundRow {
            queue: "q".into(),
            round_id: id,
            trigger: trigger.into(),
            started_at: at(started),
            committed_at: at(committed),
            snapshot_ms: 10.0,
            solve_ms: 500.0,
            commit_ms: 20.0,
        }
    }

    fn sample(next: Option<f64>, waiting_for: &str, last: Option<i64>) -> CountdownSample {
        CountdownSample {
            queue: "q".into(),
            sampled_at: at(0.0),
            next_round_at: next.map(at),
            waiting_for: waiting_for.into(),
            last_round_id: last,
            players_missing: 0,
            latest_round_at: None,
            round_started_at: None,
            counted_at: None,
        }
    }

    fn placed(enqueued: f64, round_id: i64) -> PlacedPlayer {
        PlacedPlayer {
            queue: "q".into(),
            enqueued_at: at(enqueued),
            round_id,
        }
    }

    fn nobody() -> Placements {
        Placements::default()
    }

    fn timing() -> HashMap<String, QueueTiming> {
        [(
            "q".to_string(),
            QueueTiming {
                every: Duration::from_secs(30),
                max_wait: Duration::from_secs(90),
            },
        )]
        .into()
    }

    #[test]
    fn lateness_counts_from_the_previous_commit_plus_the_interval() {
        // Round 2 due at 0.6 + 30 = 30.6, started 31.0: 0.4 s late. Round 3 started 2.5 s
        // after its tick: late. Round 4 came after a wait for players: not counted late.
        let rounds = [
            round(1, "schedule", 0.0, 0.6),
            round(2, "schedule", 31.0, 31.5),
            round(3, "schedule", 64.0, 64.5),
            round(4, "schedule", 120.0, 120.5),
        ];
        let samples = [
            sample(Some(93.0), "schedule", Some(3)),
            sample(None, "min_pool", Some(3)),
        ];
        let f = PeakFigures::measure(&rounds, &samples, &[], &nobody(), &timing());
        assert!(f.countdown_errors.is_empty());
        assert_eq!(f.lateness.len(), 2);
        assert!((f.lateness[0] - 0.4).abs() < 1e-6, "{:?}", f.lateness);
        assert!((f.lateness[1] - 2.5).abs() < 1e-6, "{:?}", f.lateness);
        assert_eq!(f.waited_for_players, 1);
        let failed = f.failed_targets();
        assert!(
            failed.iter().any(|t| t.contains("late by 2.500 s")),
            "{failed:?}"
        );
    }

    #[test]
    fn each_player_is_measured_on_the_last_countdown_they_were_shown() {
        let rounds = [
            round(1, "schedule", 0.0, 0.6),
            round(2, "schedule", 30.8, 31.5),
            round(3, "pool_size", 40.0, 40.5),
            round(4, "schedule", 80.0, 80.5),
        ];
        let sampled = |t: f64, mut s: CountdownSample| {
            s.sampled_at = at(t);
            s
        };
        let mut waiting = sample(Some(42.0), "min_pool", Some(3));
        waiting.players_missing = 1;
        waiting.latest_round_at = Some(at(100.0));
        waiting.counted_at = Some(at(44.9));
        let samples = [
            sampled(1.0, sample(Some(30.0), "schedule", Some(1))),
            // Their last before round 2: the tick 30.6, round 2 started 30.8.
            sampled(10.0, sample(Some(30.6), "schedule", Some(1))),
            // The tick passed, one player short: one arrives at 79.5, the round 80.0.
            sampled(45.0, waiting),
        ];
        let placements = Placements {
            players: vec![
                placed(5.0, 2),
                // Placed by the early start.
                placed(35.0, 3),
                placed(41.0, 4),
                // Enqueued after the last sample.
                placed(79.9, 4),
            ],
            arrivals: [("q".to_string(), vec![at(5.0), at(35.0), at(41.0), at(79.5)])].into(),
        };
        let f = PeakFigures::measure(&rounds, &samples, &[], &placements, &timing());
        assert_eq!(f.countdown_errors.len(), 2, "{f:?}");
        assert!((f.countdown_errors[0] - 0.2).abs() < 1e-6);
        assert!((f.countdown_errors[1] - 0.5).abs() < 1e-6);
        assert_eq!(f.early_start_players, 1);
        assert_eq!(f.players_never_sampled, 1);
        assert!(f.failed_targets().is_empty(), "{:?}", f.failed_targets());
    }

    #[test]
    fn waits_past_max_wait_plus_one_round_fail_the_evening() {
        let waits = [
            WaitRow {
                queue: "q".into(),
                waited_secs: 119.0,
                matched: true,
                apart: None,
            },
            WaitRow {
                queue: "q".into(),
                waited_secs: 125.0,
                matched: false,
                apart: None,
            },
            // Past the bound, but no round after max_wait had a valid match with them, or
            // their queue held under one match: shown apart, not failing the target.
            WaitRow {
                queue: "q".into(),
                waited_secs: 300.0,
                matched: false,
                apart: Some(PastBoundApart::NoValidMatch),
            },
            WaitRow {
                queue: "q".into(),
                waited_secs: 150.0,
                matched: true,
                apart: Some(PastBoundApart::BelowOneMatch),
            },
            WaitRow {
                queue: "q".into(),
                waited_secs: 120.4,
                matched: true,
                apart: Some(PastBoundApart::NextRound),
            },
        ];
        let rounds = [
            round(1, "schedule", 0.0, 0.6),
            round(2, "schedule", 30.8, 31.5),
        ];
        let samples = [sample(Some(30.6), "schedule", Some(1))];
        let placements = Placements {
            players: vec![placed(0.0, 2)],
            ..Placements::default()
        };
        let f = PeakFigures::measure(&rounds, &samples, &waits, &placements, &timing());
        assert_eq!(f.past_bound_total(), 1);
        assert!((f.worst_excess_secs - 5.0).abs() < 1e-9);
        assert_eq!(f.past_bound_apart_total(), 3);
        assert!((f.worst_apart_excess_secs - 180.0).abs() < 1e-9);
        let rows = f.rows();
        let row = |name: &str| {
            rows.iter()
                .find(|(k, _)| k.contains(name))
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(row("(all)"), "4 (worst by 180.0 s)");
        assert!(row("no valid match").starts_with("1 "));
        assert!(row("under one match").starts_with("1 "));
        assert!(row("next round").starts_with("1 "));
        assert_eq!(row("the others"), "1 (worst by 5.0 s)");
        assert!(f.apart_note().unwrap().contains("q 3"));
        let failed = f.failed_targets();
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert!(failed[0].contains("q 1"), "{failed:?}");
    }

    #[test]
    fn nothing_measured_is_a_failure() {
        let f = PeakFigures::measure(&[], &[], &[], &nobody(), &timing());
        assert_eq!(f.failed_targets().len(), 2);
    }
}
