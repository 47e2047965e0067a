//! The wait estimate a queued player reads in `player_status` (`estimated_wait_s`), and
//! the queue's recent median wait in `queue_catalog`.
//!
//! Computed by the queue's leader once per round, not per poll: it keeps the pooled
//! players of the queue's last rounds (skill, lowest-latency region, matched or not)
//! and writes a small model to `queue_state.wait_model`. In each cell (region x skill
//! quintile) the share `p` of pooled players a round matched makes the number of rounds
//! a player waits after the next one geometric, with mean `(1 - p) / p`; a player's
//! estimate is the countdown to the next round plus that many rounds at the recent
//! rounds' spacing, times the queue's learned `scale` (`matchmaker_estimate_wait` in the
//! migrations; a party reads its slowest member's). A cell with few players borrows its
//! skill bucket over every region. A new leader starts with no model until its first
//! round (the view reads NULL: unknown).
//!
//! The estimate learns from the waits that followed: the leader remembers the estimate
//! each entry read when it enqueued (the countdown to its first round, plus the model's
//! rounds after it) and, once the entry is matched, compares it with the wait it had.
//! The scale is learned per login (`scales`): the ratio of the waits after the first
//! round to the model's rounds over the login's latest matched entries, so that no
//! login's players, whatever they do, move the estimates another login's players read.
//! A login with too few matched entries of its own reads `scale`, the median of the
//! logins' scales (one vote per login). Each round's comparison is stored with the round
//! (`rounds.wait_estimates`) for the report.

use std::collections::{BTreeMap, HashMap, VecDeque};

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Rounds the model remembers.
const WINDOW: usize = 20;
/// Skill buckets (quantiles of the remembered players' skills).
const BUCKETS: usize = 5;
/// Fewer pooled players than this in a cell: use the all-regions cell.
const MIN_CELL: usize = 12;
/// Matched entries of a login its learned scale is taken over.
const FOLLOWED: usize = 500;
/// Fewer matched entries than this: the login has no scale of its own.
const MIN_FOLLOWED: usize = 20;
/// Logins followed at once (the least recently matched is forgotten first): the model
/// stays small however many logins there are.
const MAX_LOGINS: usize = 64;
/// How far the learned scale may move the model's rounds.
const SCALE_RANGE: (f64, f64) = (0.25, 4.0);
/// Most regions the model names (the most pooled first); the others read the
/// all-regions cells. Region names are the clients' to send: the model stays small
/// whatever they send.
const MAX_REGIONS: usize = 32;

/// One pooled player of a round.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitObservation {
    pub entry_id: i64,
    /// The login that queued the entry.
    pub owner: String,
    /// One `enqueue_party` call: a party's members read one estimate.
    pub party: Option<i64>,
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
    /// The model last published (what queued players read until the next one).
    published: Option<serde_json::Value>,
    /// Queued entries by id: the estimate they read when they enqueued (None: there was
    /// no model then).
    first_estimates: HashMap<i64, Option<FirstEstimate>>,
    /// Per login: (model's seconds after the first round, seconds waited after it) of
    /// its latest matched entries that had a first estimate, and the round count when
    /// one was last added.
    followed: HashMap<String, (VecDeque<(f64, f64)>, u64)>,
    /// Rounds observed.
    observed: u64,
}

/// The estimate an entry read when it enqueued.
#[derive(Debug, Clone, Copy, PartialEq)]
struct FirstEstimate {
    /// Enqueue to the first round that pooled it: the countdown it read.
    countdown_s: f64,
    /// The model's seconds after that round (the party's slowest member), unscaled.
    after_s: f64,
    /// The learned scale of the model it read.
    scale: f64,
}

impl FirstEstimate {
    fn seconds(&self) -> f64 {
        self.countdown_s + self.after_s * self.scale
    }
}

/// How the estimates that the entries a round matched read when they enqueued compare
/// with the waits they had (`rounds.wait_estimates`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct EstimateFollowUp {
    pub players: usize,
    /// Mean of |estimate - wait|, seconds.
    pub mean_abs_error_s: f64,
    /// Mean of estimate - wait (positive: the estimates were too long), seconds.
    pub mean_error_s: f64,
    /// Share whose estimate was within half the wait, or 15 s.
    pub within_share: f64,
}

impl EstimateFollowUp {
    fn of(pairs: &[(f64, f64)]) -> Option<EstimateFollowUp> {
        if pairs.is_empty() {
            return None;
        }
        let n = pairs.len() as f64;
        let round = |v: f64| (v * 10.0).round() / 10.0;
        Some(EstimateFollowUp {
            players: pairs.len(),
            mean_abs_error_s: round(pairs.iter().map(|(e, a)| (e - a).abs()).sum::<f64>() / n),
            mean_error_s: round(pairs.iter().map(|(e, a)| e - a).sum::<f64>() / n),
            within_share: (pairs
                .iter()
                .filter(|(e, a)| (e - a).abs() <= (0.5 * a).max(15.0))
                .count() as f64
                / n
                * 1000.0)
                .round()
                / 1000.0,
        })
    }
}

impl WaitModel {
    /// Remember a round committed at `at` (a backfill-only round is not a round of the
    /// schedule: leave it out), and how the estimates of the entries it matched came
    /// true (None: none of them had one).
    pub fn observe(
        &mut self,
        at: DateTime<Utc>,
        pooled: Vec<WaitObservation>,
    ) -> Option<EstimateFollowUp> {
        self.remember_first_estimates(&pooled);
        self.observed += 1;
        let mut pairs = Vec::new();
        for o in pooled.iter().filter(|o| o.matched) {
            if let Some(Some(first)) = self.first_estimates.remove(&o.entry_id) {
                pairs.push((first.seconds(), o.waited_s));
                let login = self.followed.entry(o.owner.clone()).or_default();
                login
                    .0
                    .push_back((first.after_s, (o.waited_s - first.countdown_s).max(0.0)));
                if login.0.len() > FOLLOWED {
                    login.0.pop_front();
                }
                login.1 = self.observed;
            }
        }
        while self.followed.len() > MAX_LOGINS {
            let stalest = self
                .followed
                .iter()
                .min_by(|a, b| a.1.1.cmp(&b.1.1).then_with(|| a.0.cmp(b.0)))
                .map(|(login, _)| login.clone());
            if let Some(login) = stalest {
                self.followed.remove(&login);
            }
        }
        // Entries that left the queue are not followed further.
        let pooled_ids: std::collections::HashSet<i64> =
            pooled.iter().map(|o| o.entry_id).collect();
        self.first_estimates.retain(|id, _| pooled_ids.contains(id));
        self.rounds.push_back((at, pooled));
        while self.rounds.len() > WINDOW {
            self.rounds.pop_front();
        }
        EstimateFollowUp::of(&pairs)
    }

    /// The estimate each newly pooled entry read when it enqueued, from the model then
    /// published: the time to this round, then the party's slowest member's rounds.
    fn remember_first_estimates(&mut self, pooled: &[WaitObservation]) {
        let mut party_after: HashMap<i64, f64> = HashMap::new();
        let after = |o: &WaitObservation| {
            self.published
                .as_ref()
                .and_then(|m| seconds_after_next_round(m, o.skill, o.region.as_deref()))
        };
        for o in pooled {
            if let (Some(party), Some(s)) = (o.party, after(o)) {
                let slowest = party_after.entry(party).or_insert(s);
                *slowest = slowest.max(s);
            }
        }
        let scales = self.scales();
        let fallback = median_scale(&scales);
        for o in pooled {
            if self.first_estimates.contains_key(&o.entry_id) {
                continue;
            }
            let scale = scales.get(&o.owner).copied().unwrap_or(fallback);
            let first = after(o).map(|own| FirstEstimate {
                countdown_s: o.waited_s,
                after_s: o
                    .party
                    .and_then(|p| party_after.get(&p).copied())
                    .unwrap_or(own),
                scale,
            });
            self.first_estimates.insert(o.entry_id, first);
        }
    }

    /// The learned scale of each login with enough matched entries of its own: what
    /// they waited after their first round against what the model said.
    pub fn scales(&self) -> BTreeMap<String, f64> {
        self.followed
            .iter()
            .filter_map(|(login, (followed, _))| {
                let predicted: f64 = followed.iter().map(|f| f.0).sum();
                let waited: f64 = followed.iter().map(|f| f.1).sum();
                if followed.len() < MIN_FOLLOWED || predicted < 1.0 {
                    return None;
                }
                let scale = (waited / predicted).clamp(SCALE_RANGE.0, SCALE_RANGE.1);
                Some((login.clone(), (scale * 100.0).round() / 100.0))
            })
            .collect()
    }

    /// The scale of a login's players: its own, else the logins' median.
    pub fn scale_of(&self, login: &str) -> f64 {
        let scales = self.scales();
        scales
            .get(login)
            .copied()
            .unwrap_or_else(|| median_scale(&scales))
    }

    /// The model as `queue_state.wait_model` holds it, and the median wait of the
    /// matched players; None before any round. `interval_s`: the schedule's spacing,
    /// used until two rounds are remembered. `max_rounds` caps a cell nobody left (at
    /// the queue's max wait, in rounds).
    pub fn to_json(
        &mut self,
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
        let scales = self.scales();
        let model = serde_json::json!({
            "round_interval_s": (spacing.max(0.0) * 10.0).round() / 10.0,
            "scale": median_scale(&scales),
            "scales": scales,
            "regions": regions,
        });
        self.published = Some(model.clone());
        Some((model, median))
    }
}

/// The median of the logins' scales, one vote per login (1 when no login has one):
/// what a login without a scale of its own reads.
fn median_scale(scales: &BTreeMap<String, f64>) -> f64 {
    let mut values: Vec<f64> = scales.values().copied().collect();
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => 1.0,
        _ if n % 2 == 1 => values[n / 2],
        _ => ((values[n / 2 - 1] + values[n / 2]) * 50.0).round() / 100.0,
    }
}

/// The model's seconds after the next round for a player of this skill and region,
/// unscaled: as `matchmaker_estimate_wait` reads the model (None: the model has no cell).
fn seconds_after_next_round(
    model: &serde_json::Value,
    skill: f64,
    region: Option<&str>,
) -> Option<f64> {
    let regions = model.get("regions")?;
    let cell = region
        .and_then(|r| regions.get(r))
        .or_else(|| regions.get("*"))?;
    let bucket = cell
        .get("edges")?
        .as_array()?
        .iter()
        .filter(|e| e.as_f64().is_some_and(|e| e <= skill))
        .count();
    let rounds = cell.get("rounds")?.get(bucket)?.as_f64().unwrap_or(0.0);
    let interval = model.get("round_interval_s")?.as_f64().unwrap_or(0.0);
    Some(interval * rounds)
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

    fn obs(id: i64, skill: f64, region: &str, matched: bool) -> WaitObservation {
        WaitObservation {
            entry_id: id,
            owner: "backend".into(),
            party: None,
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
            let pooled = (0..20)
                .map(|k| obs(100 * i + k, 1500.0, "eu", k % 2 == 0))
                .collect();
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
            .map(|k| obs(k, 1500.0, &format!("r{k}"), k % 2 == 0))
            .chain((0..500).map(|k| obs(10_000 + k, 1500.0, &format!("big{}", k % 40), true)))
            .collect();
        m.observe(t0, pooled);
        let (json, _) = m.to_json(60.0, 20.0).unwrap();
        let regions = json["regions"].as_object().unwrap();
        assert_eq!(regions.len(), 1 + MAX_REGIONS, "{:?}", regions.keys());
        assert!(regions.contains_key("*"));
        assert!(!regions.keys().any(|r| r.starts_with("r")));
    }

    /// A model whose every cell says one round after the next, rounds 30 s apart.
    fn one_round_after_the_next(m: &mut WaitModel, t0: DateTime<Utc>) {
        for i in 0..2 {
            let pooled = (0..20)
                .map(|k| obs(1_000_000 + 100 * i + k, 1500.0, "eu", k % 2 == 0))
                .collect();
            m.observe(t0 + chrono::Duration::seconds(30 * i), pooled);
        }
        let (json, _) = m.to_json(30.0, 20.0).unwrap();
        assert_eq!(json["regions"]["*"]["rounds"][4], 1.0);
        assert_eq!(json["scale"], 1.0);
    }

    #[test]
    fn waits_longer_than_estimated_raise_the_scale_and_are_reported() {
        let mut m = WaitModel::default();
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
        one_round_after_the_next(&mut m, t0);
        // 30 entries enqueued 10 s before a round read 10 + 30 s; they are matched three
        // rounds later, after 10 + 90 s.
        let at = |r: i64| t0 + chrono::Duration::seconds(60 + 30 * r);
        let batch = |matched: bool, waited_s: f64| -> Vec<WaitObservation> {
            (0..30)
                .map(|k| WaitObservation {
                    waited_s,
                    ..obs(k, 1500.0, "eu", matched)
                })
                .collect()
        };
        assert_eq!(m.observe(at(0), batch(false, 10.0)), None);
        assert_eq!(m.observe(at(1), batch(false, 40.0)), None);
        assert_eq!(m.observe(at(2), batch(false, 70.0)), None);
        let follow_up = m.observe(at(3), batch(true, 100.0)).unwrap();
        assert_eq!(follow_up.players, 30);
        assert_eq!(follow_up.mean_error_s, -60.0);
        assert_eq!(follow_up.mean_abs_error_s, 60.0);
        assert_eq!(follow_up.within_share, 0.0);
        assert_eq!(m.scale_of("backend"), 3.0);
        let (json, _) = m.to_json(30.0, 20.0).unwrap();
        assert_eq!(json["scales"]["backend"], 3.0);
        assert_eq!(json["scale"], 3.0, "the only login's scale is the median");
    }

    /// A login whose players wait four times the model (or that claims to) moves its
    /// own players' estimates only: the other logins with matched players of their own
    /// keep theirs, and a new login reads the median of the logins.
    #[test]
    fn one_logins_waits_do_not_move_another_logins_estimates() {
        let mut m = WaitModel::default();
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
        one_round_after_the_next(&mut m, t0);
        let at = |r: i64| t0 + chrono::Duration::seconds(60 + 30 * r);
        // Each round pools the entries of three logins 10 s after they enqueued, then
        // matches them: "backend" and "studio" after one round as the model says (40 s),
        // "flood" (ten times as many) after four (130 s).
        let login = |owner: &str, base: i64, n: i64, matched: bool, waited_s: f64| {
            (0..n)
                .map(move |k| WaitObservation {
                    owner: owner.into(),
                    waited_s,
                    ..obs(base + k, 1500.0, "eu", matched)
                })
                .collect::<Vec<_>>()
        };
        for r in 0..4 {
            let id = 10_000 * (r + 1);
            let first: Vec<_> = [
                login("backend", id, 10, false, 10.0),
                login("studio", id + 100, 10, false, 10.0),
                login("flood", id + 1000, 100, false, 10.0),
            ]
            .concat();
            m.observe(at(5 * r), first);
            m.observe(
                at(5 * r + 1),
                [
                    login("backend", id, 10, true, 40.0),
                    login("studio", id + 100, 10, true, 40.0),
                    login("flood", id + 1000, 100, false, 40.0),
                ]
                .concat(),
            );
            m.observe(at(5 * r + 4), login("flood", id + 1000, 100, true, 130.0));
        }
        assert_eq!(m.scale_of("backend"), 1.0);
        assert_eq!(m.scale_of("studio"), 1.0);
        assert_eq!(m.scale_of("flood"), 4.0);
        assert_eq!(m.scale_of("new"), 1.0, "the median of 1, 1 and 4");
        let (json, _) = m.to_json(30.0, 20.0).unwrap();
        assert_eq!(json["scales"]["backend"], 1.0);
        assert_eq!(json["scales"]["flood"], 4.0);
        assert_eq!(json["scale"], 1.0);
    }

    #[test]
    fn a_party_reads_its_slowest_members_estimate() {
        let mut m = WaitModel::default();
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
        // Low skills are always matched, high skills half the time.
        let pooled = (0..40)
            .map(|k| obs(k, 1000.0 + 25.0 * k as f64, "eu", k < 20 || k % 2 == 0))
            .collect();
        m.observe(t0, pooled);
        m.observe(t0 + chrono::Duration::seconds(30), Vec::new());
        let (json, _) = m.to_json(30.0, 20.0).unwrap();
        let rounds = json["regions"]["*"]["rounds"].as_array().unwrap().clone();
        assert_eq!(rounds[0], 0.0);
        assert_eq!(rounds[4], 1.0);
        let member = |id: i64, skill: f64| WaitObservation {
            party: Some(7),
            waited_s: 5.0,
            ..obs(id, skill, "eu", false)
        };
        m.observe(
            t0 + chrono::Duration::seconds(60),
            vec![
                member(100, 1000.0),
                member(101, 2000.0),
                WaitObservation {
                    waited_s: 5.0,
                    ..obs(102, 1000.0, "eu", false)
                },
            ],
        );
        let first = |id: i64| m.first_estimates[&id].unwrap().seconds();
        assert_eq!(
            first(100),
            5.0 + 30.0,
            "the party waits for its slowest member"
        );
        assert_eq!(first(101), 5.0 + 30.0);
        assert_eq!(
            first(102),
            5.0,
            "a solo player of the same skill reads its own cell"
        );
    }

    #[test]
    fn best_region_is_the_lowest_latency() {
        assert_eq!(best_region(r#"{"eu": 40, "us": 20}"#), Some("us".into()));
        assert_eq!(best_region("{}"), None);
    }
}
