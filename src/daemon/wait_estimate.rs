//! The wait estimate a queued player reads in `player_status` (`estimated_wait_s`), and
//! the queue's recent median wait in `queue_catalog`.
//!
//! Computed by the queue's leader once per round, not per poll: it keeps the pooled
//! players of the queue's last rounds (skill, lowest-latency region, matched or not)
//! and writes a small model to `queue_state.wait_model`. In each cell (region x skill
//! quintile) the share `p` of pooled players a round matched makes the number of rounds
//! a player waits after the next one geometric, with mean `(1 - p) / p`; a player's
//! estimate is the countdown to the next round plus that many rounds at the recent
//! rounds' spacing (`matchmaker_estimate_wait` in the migration). A cell with few
//! players borrows its skill bucket over every region. A new leader starts with no
//! model until its first round (the view reads NULL: unknown).

use std::collections::{BTreeMap, VecDeque};

use chrono::{DateTime, Utc};

/// Rounds the model remembers.
const WINDOW: usize = 20;
/// Skill buckets (quantiles of the remembered players' skills).
const BUCKETS: usize = 5;
/// Fewer pooled players than this in a cell: use the all-regions cell.
const MIN_CELL: usize = 12;
/// Most regions the model names (the most pooled first); the others read the
/// all-regions cells. Region names are the clients' to send: the model stays small
/// whatever they send.
const MAX_REGIONS: usize = 32;

/// One pooled player of a round.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitObservation {
    pub skill: f64,
    /// The region of their lowest latency (None: no latencies).
    pub region: Option<String>,
    pub matched: bool,
    /// Enqueue to this round, seconds (matched players: their wait).
    pub waited_s: f64,
}

/// The remembered rounds of one queue.
#[derive(Debug, Clone, Default)]
pub struct WaitModel {
    rounds: VecDeque<(DateTime<Utc>, Vec<WaitObservation>)>,
}

impl WaitModel {
    /// Remember a round committed at `at` (a backfill-only round is not a round of the
    /// schedule: leave it out).
    pub fn observe(&mut self, at: DateTime<Utc>, pooled: Vec<WaitObservation>) {
        self.rounds.push_back((at, pooled));
        while self.rounds.len() > WINDOW {
            self.rounds.pop_front();
        }
    }

    /// The model as `queue_state.wait_model` holds it, and the median wait of the
    /// matched players; None before any round. `interval_s`: the schedule's spacing,
    /// used until two rounds are remembered. `max_rounds` caps a cell nobody left (at
    /// the queue's max wait, in rounds).
    pub fn to_json(
        &self,
        interval_s: f64,
        max_rounds: f64,
    ) -> Option<(serde_json::Value, Option<f64>)> {
        if self.rounds.is_empty() {
            return None;
        }
        let spacing = if self.rounds.len() >= 2 {
            let first = self.rounds.front().map(|r| r.0)?;
            let last = self.rounds.back().map(|r| r.0)?;
            (last - first).num_milliseconds() as f64 / 1000.0 / (self.rounds.len() - 1) as f64
        } else {
            interval_s
        };
        let all: Vec<&WaitObservation> = self.rounds.iter().flat_map(|r| &r.1).collect();
        let mut skills: Vec<f64> = all.iter().map(|o| o.skill).collect();
        skills.sort_by(f64::total_cmp);
        let edges: Vec<f64> = if skills.is_empty() {
            Vec::new()
        } else {
            (1..BUCKETS)
                .map(|i| skills[i * skills.len() / BUCKETS])
                .collect()
        };
        let bucket = |skill: f64| edges.iter().filter(|e| **e <= skill).count();
        // (region, bucket) -> (pooled, matched); region "*" for all.
        let mut cells: BTreeMap<(String, usize), (usize, usize)> = BTreeMap::new();
        for o in &all {
            let b = bucket(o.skill);
            let regions = std::iter::once("*".to_string()).chain(o.region.clone());
            for r in regions {
                let cell = cells.entry((r, b)).or_default();
                cell.0 += 1;
                cell.1 += usize::from(o.matched);
            }
        }
        let rounds_more = |pooled: usize, matched: usize| -> f64 {
            if matched == 0 {
                max_rounds
            } else {
                let p = matched as f64 / pooled as f64;
                ((1.0 - p) / p).min(max_rounds)
            }
        };
        let mut regions = serde_json::Map::new();
        // A region with no cell of its own reads exactly as "*": left out, as are all
        // but the MAX_REGIONS most pooled.
        let names: Vec<String> = {
            let mut pooled: BTreeMap<&str, (usize, bool)> = BTreeMap::new();
            for ((r, _), (n, _)) in &cells {
                let e = pooled.entry(r.as_str()).or_default();
                e.0 += n;
                e.1 |= *n >= MIN_CELL;
            }
            let mut n: Vec<(&str, usize)> = pooled
                .into_iter()
                .filter(|(r, (_, own))| *own && *r != "*")
                .map(|(r, (n, _))| (r, n))
                .collect();
            n.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            std::iter::once("*".to_string())
                .chain(n.into_iter().take(MAX_REGIONS).map(|(r, _)| r.to_string()))
                .collect()
        };
        for name in names {
            let rounds: Vec<f64> = (0..=edges.len())
                .map(|b| {
                    let own = cells.get(&(name.clone(), b)).copied().unwrap_or((0, 0));
                    let (pooled, matched) = if own.0 >= MIN_CELL || name == "*" {
                        own
                    } else {
                        cells.get(&("*".to_string(), b)).copied().unwrap_or((0, 0))
                    };
                    if pooled == 0 {
                        0.0
                    } else {
                        (rounds_more(pooled, matched) * 100.0).round() / 100.0
                    }
                })
                .collect();
            regions.insert(
                name,
                serde_json::json!({ "edges": edges, "rounds": rounds }),
            );
        }
        let mut waits: Vec<f64> = all
            .iter()
            .filter(|o| o.matched)
            .map(|o| o.waited_s)
            .collect();
        waits.sort_by(f64::total_cmp);
        let median = (!waits.is_empty()).then(|| waits[waits.len() / 2]);
        Some((
            serde_json::json!({
                "round_interval_s": (spacing.max(0.0) * 10.0).round() / 10.0,
                "regions": regions,
            }),
            median,
        ))
    }
}

/// The region of a latency map's lowest latency (ties by name), as the view picks it.
pub fn best_region(latencies_json: &str) -> Option<String> {
    let map: BTreeMap<String, f64> = serde_json::from_str(latencies_json).ok()?;
    map.into_iter()
        .min_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)))
        .map(|(r, _)| r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn obs(skill: f64, region: &str, matched: bool) -> WaitObservation {
        WaitObservation {
            skill,
            region: Some(region.into()),
            matched,
            waited_s: 30.0,
        }
    }

    #[test]
    fn a_cell_matched_half_the_time_waits_one_more_round() {
        let mut m = WaitModel::default();
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
        for i in 0..4 {
            let pooled = (0..20).map(|k| obs(1500.0, "eu", k % 2 == 0)).collect();
            m.observe(t0 + chrono::Duration::seconds(30 * i), pooled);
        }
        let (json, median) = m.to_json(60.0, 20.0).unwrap();
        assert_eq!(json["round_interval_s"], 30.0);
        assert_eq!(json["regions"]["eu"]["rounds"][4], 1.0);
        assert_eq!(median, Some(30.0));
    }

    #[test]
    fn invented_regions_do_not_grow_the_model() {
        let mut m = WaitModel::default();
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
        let pooled: Vec<WaitObservation> = (0..4000)
            .map(|k| obs(1500.0, &format!("r{k}"), k % 2 == 0))
            .chain((0..500).map(|k| obs(1500.0, &format!("big{}", k % 40), true)))
            .collect();
        m.observe(t0, pooled);
        let (json, _) = m.to_json(60.0, 20.0).unwrap();
        let regions = json["regions"].as_object().unwrap();
        assert_eq!(regions.len(), 1 + MAX_REGIONS, "{:?}", regions.keys());
        assert!(regions.contains_key("*"));
        assert!(!regions.keys().any(|r| r.starts_with("r")));
    }

    #[test]
    fn best_region_is_the_lowest_latency() {
        assert_eq!(best_region(r#"{"eu": 40, "us": 20}"#), Some("us".into()));
        assert_eq!(best_region("{}"), None);
    }
}
