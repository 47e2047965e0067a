//! The round report (`matchmaker report`): one self-contained HTML page with plots of the
//! rounds of a time window, for the people who tune the weights and the people on call.
//!
//! Pure: plain data in (what `db::report` read), an HTML string out. No database, no
//! files, no clock. The plots are SVG drawn by `plotters` (`plots.rs`), inlined in the
//! page (`html.rs`) so the file can be mailed, attached to a ticket or opened offline.
//!
//! Per queue the page has a summary table and seven plots, in this order: pool size per
//! round, rounds per interval by trigger, wait-time distribution, team skill difference,
//! enemy ping, per-factor scores over time, opponent repeats. The daemon's console draws
//! a queue's latest rounds with the same frame ([`recent_pool`], [`recent_waits`]).

mod html;
mod plots;

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

pub use html::render_html;
pub use plots::{PlotError, recent_pool, recent_waits};

/// How many plots each queue's section holds (one `<svg>` each).
pub const PLOTS_PER_QUEUE: usize = 7;

// The rows are the database layer's; the report only reads them.
pub use crate::db::report::{MatchRow, PingModel, PlacedPlayer, RepeatRow, ReportInput, RoundRow};

/// The summary table of one queue. Every figure is over the window's rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub rounds: usize,
    pub matches: i64,
    /// Sum of `rounds.matched`.
    pub players_matched: i64,
    /// Wait from enqueue to match of the placed players (s), `percentile_cont` style.
    pub wait_p50_s: Option<f64>,
    pub wait_p90_s: Option<f64>,
    /// Mean of the round scores (rounds without a score left out, as SQL's `avg`).
    pub mean_round_score: Option<f64>,
    /// Mean pool size at the rounds.
    pub mean_pool_size: Option<f64>,
    /// Share of opponent pairs that had met in a player's previous match (either way).
    pub repeat_share: Option<f64>,
    /// The wait estimates of the matched players who had one (`rounds.wait_estimates`).
    pub wait_estimates: Option<EstimateSummary>,
}

/// How the wait estimates players read when they enqueued came true, over the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EstimateSummary {
    pub players: i64,
    pub mean_abs_error_s: f64,
    /// Positive: the estimates were too long.
    pub mean_error_s: f64,
    /// Within half the wait, or 15 s.
    pub within_share: f64,
}

impl EstimateSummary {
    /// The rounds' figures, weighted by their players.
    fn of(rounds: &[RoundRow]) -> Option<EstimateSummary> {
        let all: Vec<_> = rounds.iter().filter_map(|r| r.wait_estimates).collect();
        let players: i64 = all.iter().map(|e| e.players).sum();
        let mean = |f: fn(&crate::db::report::WaitEstimates) -> f64| {
            all.iter().map(|e| e.players as f64 * f(e)).sum::<f64>() / players as f64
        };
        (players > 0).then(|| EstimateSummary {
            players,
            mean_abs_error_s: mean(|e| e.mean_abs_error_s),
            mean_error_s: mean(|e| e.mean_error_s),
            within_share: mean(|e| e.within_share),
        })
    }
}

/// The figures of one queue, derived from the input.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueReport {
    pub queue: String,
    pub summary: Summary,
    pub rounds: Vec<RoundRow>,
    /// Waits of the placed players (s).
    pub waits_s: Vec<f64>,
    /// Per match: max - min of the teams' mean skills.
    pub skill_differences: Vec<f64>,
    /// Per match: mean ping (ms) between opponents (peer-to-peer) or of the players to
    /// the match's region (dedicated servers).
    pub enemy_pings_ms: Vec<f64>,
    /// Per round with matches: (committed at, share of pairs opponents again, share of
    /// pairs teammates before).
    pub repeats: Vec<(DateTime<Utc>, f64, f64)>,
}

/// Splits the input by queue (alphabetical) and derives every figure the page shows.
pub fn queue_reports(input: &ReportInput) -> Vec<QueueReport> {
    let round_by_id: HashMap<i64, &RoundRow> =
        input.rounds.iter().map(|r| (r.round_id, r)).collect();
    let match_by_id: HashMap<i64, &MatchRow> =
        input.matches.iter().map(|m| (m.match_id, m)).collect();
    let mut players_by_match: BTreeMap<i64, Vec<&PlacedPlayer>> = BTreeMap::new();
    for p in &input.players {
        players_by_match.entry(p.match_id).or_default().push(p);
    }

    let mut queues: BTreeMap<&str, QueueReport> = BTreeMap::new();
    for r in &input.rounds {
        queues
            .entry(r.queue.as_str())
            .or_insert_with(|| QueueReport {
                queue: r.queue.clone(),
                summary: empty_summary(),
                rounds: Vec::new(),
                waits_s: Vec::new(),
                skill_differences: Vec::new(),
                enemy_pings_ms: Vec::new(),
                repeats: Vec::new(),
            })
            .rounds
            .push(r.clone());
    }
    for (match_id, players) in &players_by_match {
        let Some(m) = match_by_id.get(match_id) else {
            continue;
        };
        let Some(round) = round_by_id.get(&m.round_id) else {
            continue;
        };
        let q = queues
            .get_mut(round.queue.as_str())
            .expect("queue of a round");
        q.waits_s.extend(players.iter().map(|p| p.wait_s));
        if let Some(d) = team_skill_difference(players) {
            q.skill_differences.push(d);
        }
        if let Some(ms) = enemy_ping_ms(players, m.region.as_deref(), &round.ping) {
            q.enemy_pings_ms.push(ms);
        }
    }
    for rep in &input.repeats {
        let Some(round) = round_by_id.get(&rep.round_id) else {
            continue;
        };
        if rep.opponent_pairs > 0 {
            let pairs = rep.opponent_pairs as f64;
            queues
                .get_mut(round.queue.as_str())
                .expect("queue of a round")
                .repeats
                .push((
                    round.committed_at,
                    rep.opponents_again as f64 / pairs,
                    rep.teammates_before as f64 / pairs,
                ));
        }
    }
    let mut out: Vec<QueueReport> = queues.into_values().collect();
    for q in &mut out {
        q.rounds.sort_by_key(|r| (r.committed_at, r.round_id));
        q.repeats.sort_by_key(|r| r.0);
        let round_ids: Vec<i64> = q.rounds.iter().map(|r| r.round_id).collect();
        let repeats: Vec<&RepeatRow> = input
            .repeats
            .iter()
            .filter(|r| round_ids.contains(&r.round_id))
            .collect();
        q.summary = summarize(&q.rounds, &q.waits_s, &repeats);
    }
    out
}

fn empty_summary() -> Summary {
    Summary {
        rounds: 0,
        matches: 0,
        players_matched: 0,
        wait_p50_s: None,
        wait_p90_s: None,
        mean_round_score: None,
        mean_pool_size: None,
        repeat_share: None,
        wait_estimates: None,
    }
}

/// The summary table's figures.
pub fn summarize(rounds: &[RoundRow], waits_s: &[f64], repeats: &[&RepeatRow]) -> Summary {
    let mut sorted = waits_s.to_vec();
    sorted.sort_by(f64::total_cmp);
    let scores: Vec<f64> = rounds.iter().filter_map(|r| r.score).collect();
    let pairs: i64 = repeats.iter().map(|r| r.opponent_pairs).sum();
    let repeated: i64 = repeats
        .iter()
        .map(|r| r.opponents_again + r.teammates_before)
        .sum();
    Summary {
        rounds: rounds.len(),
        matches: rounds.iter().map(|r| r.match_count).sum(),
        players_matched: rounds.iter().map(|r| r.matched).sum(),
        wait_p50_s: percentile(&sorted, 0.5),
        wait_p90_s: percentile(&sorted, 0.9),
        mean_round_score: mean(&scores),
        mean_pool_size: mean(
            &rounds
                .iter()
                .map(|r| r.pool_size as f64)
                .collect::<Vec<_>>(),
        ),
        repeat_share: (pairs > 0).then(|| repeated as f64 / pairs as f64),
        wait_estimates: EstimateSummary::of(rounds),
    }
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The `p` quantile of ascending `sorted` values, interpolated linearly between the two
/// nearest ranks: PostgreSQL's `percentile_cont`, so the page and SQL agree.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = p.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

/// Max - min of the teams' mean skills (raw skills, before any cap); `None` for fewer
/// than two teams.
pub fn team_skill_difference(players: &[&PlacedPlayer]) -> Option<f64> {
    let mut teams: BTreeMap<i32, (f64, usize)> = BTreeMap::new();
    for p in players {
        let t = teams.entry(p.team).or_default();
        t.0 += p.skill;
        t.1 += 1;
    }
    if teams.len() < 2 {
        return None;
    }
    let means = teams.values().map(|(sum, n)| sum / *n as f64);
    let (lo, hi) = means.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), m| {
        (lo.min(m), hi.max(m))
    });
    Some(hi - lo)
}

/// The ping of a pair as the `enemy_ping` factor estimates it: the peer pings (the mean
/// of both directions when both are given), otherwise the best shared region's
/// lat(a, r) + lat(b, r) + relay overhead, otherwise the unknown ping.
pub fn pair_ping_ms(a: &PlacedPlayer, b: &PlacedPlayer, model: &PingModel) -> f64 {
    let given: Vec<f64> = [
        a.peer_pings.get(&b.player_id),
        b.peer_pings.get(&a.player_id),
    ]
    .into_iter()
    .flatten()
    .copied()
    .collect();
    if let Some(m) = mean(&given) {
        return m;
    }
    a.latencies
        .iter()
        .filter_map(|(region, la)| b.latencies.get(region).map(|lb| la + lb))
        .min_by(f64::total_cmp)
        .map_or(model.unknown_ms, |best| best + model.relay_overhead_ms)
}

/// A match's enemy ping in ms: peer-to-peer, the mean over pairs of opponents of their
/// ping; dedicated servers, the mean over players of their latency to the match's region.
/// `None` when there is nothing to average (one team).
pub fn enemy_ping_ms(
    players: &[&PlacedPlayer],
    region: Option<&str>,
    model: &PingModel,
) -> Option<f64> {
    if model.dedicated {
        let lat: Vec<f64> = players
            .iter()
            .map(|p| {
                region
                    .and_then(|r| p.latencies.get(r))
                    .copied()
                    .unwrap_or(model.unknown_ms)
            })
            .collect();
        return mean(&lat);
    }
    let mut pings = Vec::new();
    for (i, a) in players.iter().enumerate() {
        for b in &players[i + 1..] {
            if a.team != b.team {
                pings.push(pair_ping_ms(a, b, model));
            }
        }
    }
    mean(&pings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(id: &str, team: i32, skill: f64, lat: &[(&str, f64)]) -> PlacedPlayer {
        PlacedPlayer {
            match_id: 1,
            player_id: id.into(),
            team,
            skill,
            wait_s: 0.0,
            latencies: lat.iter().map(|(r, v)| (r.to_string(), *v)).collect(),
            peer_pings: BTreeMap::new(),
        }
    }

    #[test]
    fn percentile_interpolates_like_percentile_cont() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.5), Some(2.5));
        // 0.9 * 3 = 2.7: 3 + 0.7 * (4 - 3)
        assert!((percentile(&v, 0.9).unwrap() - 3.7).abs() < 1e-12);
        assert_eq!(percentile(&[7.0], 0.9), Some(7.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn team_skill_difference_is_the_spread_of_team_means() {
        let ps = [
            placed("a", 0, 1000.0, &[]),
            placed("b", 0, 1200.0, &[]),
            placed("c", 1, 1300.0, &[]),
            placed("d", 1, 1300.0, &[]),
        ];
        let refs: Vec<&PlacedPlayer> = ps.iter().collect();
        assert_eq!(team_skill_difference(&refs), Some(200.0));
        assert_eq!(team_skill_difference(&refs[..2]), None);
    }

    #[test]
    fn pair_ping_prefers_peer_pings_then_shared_regions_then_unknown() {
        let model = PingModel {
            dedicated: false,
            relay_overhead_ms: 5.0,
            unknown_ms: 150.0,
        };
        let mut a = placed("a", 0, 0.0, &[("eu", 20.0), ("us", 90.0)]);
        let b = placed("b", 1, 0.0, &[("eu", 30.0), ("us", 10.0)]);
        let c = placed("c", 1, 0.0, &[("asia", 30.0)]);
        // best shared region: eu 50 vs us 100, plus the overhead
        assert_eq!(pair_ping_ms(&a, &b, &model), 55.0);
        assert_eq!(pair_ping_ms(&a, &c, &model), 150.0);
        a.peer_pings.insert("b".into(), 40.0);
        assert_eq!(pair_ping_ms(&a, &b, &model), 40.0);
        assert_eq!(pair_ping_ms(&b, &a, &model), 40.0);
    }

    #[test]
    fn enemy_ping_averages_opponent_pairs_or_region_latency() {
        let ps = [
            placed("a", 0, 0.0, &[("eu", 10.0)]),
            placed("b", 0, 0.0, &[("eu", 20.0)]),
            placed("c", 1, 0.0, &[("eu", 30.0)]),
        ];
        let refs: Vec<&PlacedPlayer> = ps.iter().collect();
        let p2p = PingModel::default();
        // opponent pairs: a-c 40, b-c 50 (a-b are teammates)
        assert_eq!(enemy_ping_ms(&refs, None, &p2p), Some(45.0));
        let dedicated = PingModel {
            dedicated: true,
            ..PingModel::default()
        };
        assert_eq!(enemy_ping_ms(&refs, Some("eu"), &dedicated), Some(20.0));
        // no region known: the unknown ping for everyone
        assert_eq!(enemy_ping_ms(&refs, None, &dedicated), Some(150.0));
    }

    #[test]
    fn summary_counts_rounds_players_and_repeats() {
        let at = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 1, 12, 0, 0).unwrap();
        let round = |id: i64, score: Option<f64>, matched: i64| RoundRow {
            round_id: id,
            queue: "q".into(),
            trigger: "schedule".into(),
            committed_at: at,
            pool_size: 12,
            match_count: matched / 6,
            matched,
            left_over: 12 - matched,
            left_over_by_reason: BTreeMap::new(),
            rejected: 0,
            score,
            factor_averages: BTreeMap::new(),
            ping: PingModel::default(),
            wait_estimates: None,
        };
        let rounds = [
            round(1, Some(0.8), 12),
            round(2, None, 0),
            round(3, Some(0.6), 6),
        ];
        let rep = RepeatRow {
            round_id: 3,
            opponent_pairs: 18,
            opponents_again: 6,
            teammates_before: 3,
        };
        let s = summarize(&rounds, &[3.0, 1.0, 2.0], &[&rep]);
        assert_eq!(s.rounds, 3);
        assert_eq!(s.matches, 3);
        assert_eq!(s.players_matched, 18);
        assert_eq!(s.wait_p50_s, Some(2.0));
        assert!((s.mean_round_score.unwrap() - 0.7).abs() < 1e-12);
        assert_eq!(s.repeat_share, Some(0.5));
    }
}
