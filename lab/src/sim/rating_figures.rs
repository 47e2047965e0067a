//! The ratings of a peak evening's rated queues, pure: how far the built-in ratings
//! learned the players' true skills (which the simulators draw results from and the
//! daemon never sees), how fair the matches were by those true skills as the evening went
//! on, and how the predictions at match time came true (the report's figures).
//!
//! The players enqueue with `skill => NULL`: everyone starts at the pool's initial
//! rating, and only the results the simulators report tell the ratings apart.

use matchmaker::db::report::{CalibrationBucket, ResultStats};

use crate::sim::simulator::SimReport;

/// A player's rating counts in the rank correlation after this many matches.
pub const MIN_MATCHES: i64 = 5;

/// The strong tail: players whose true skill is in the top this share of the rated ones.
const TOP_SHARE: f64 = 0.05;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RatingFigures {
    pub pool: Option<String>,
    /// Players with a rating, and their matches at the median and the most.
    pub players: usize,
    pub matches_p50: i64,
    pub matches_max: i64,
    /// Spearman's rank correlation of rating and true skill over the players with at
    /// least [`MIN_MATCHES`] matches (ties ranked by their mean rank), and how many.
    pub rank_correlation: Option<f64>,
    pub correlated: usize,
    /// The strongest [`TOP_SHARE`] of those by true skill: the median percentile of
    /// their ratings among all of them (1.0: the very top).
    pub top_rating_percentile: Option<f64>,
    /// Mean gap of a two-team match's true chance to win from 50%, over the first and the
    /// last fifth of the reported matches (by when they were reported).
    pub true_gap_first: Option<f64>,
    pub true_gap_last: Option<f64>,
    /// The report's results over the rated queues, summed.
    pub matches: i64,
    pub reported: i64,
    pub brier: Option<f64>,
    pub lopsided: i64,
    pub stomps: i64,
    /// The reliability curve: per tenth of predicted probability (of the first team).
    pub calibration: Vec<CalibrationBucket>,
}

impl RatingFigures {
    /// From the rated queues' simulator reports (merged) and their report rows.
    pub fn measure(sims: &SimReport, results: &[ResultStats]) -> RatingFigures {
        let mut f = RatingFigures {
            pool: sims.rating_pool.clone(),
            players: sims.ratings.len(),
            ..RatingFigures::default()
        };
        let mut matches: Vec<i64> = sims.ratings.iter().map(|r| r.matches).collect();
        matches.sort_unstable();
        f.matches_p50 = matches.get(matches.len() / 2).copied().unwrap_or(0);
        f.matches_max = matches.last().copied().unwrap_or(0);

        let settled: Vec<_> = sims
            .ratings
            .iter()
            .filter(|r| r.matches >= MIN_MATCHES)
            .collect();
        f.correlated = settled.len();
        let truth: Vec<f64> = settled.iter().map(|r| r.true_skill).collect();
        let rating: Vec<f64> = settled.iter().map(|r| r.rating).collect();
        f.rank_correlation = spearman(&truth, &rating);
        f.top_rating_percentile = top_percentile(&truth, &rating);

        let mut gaps = sims.true_gaps.clone();
        gaps.sort_by(|a, b| a.0.total_cmp(&b.0));
        let fifth = gaps.len() / 5;
        if fifth > 0 {
            let mean = |g: &[(f64, f64)]| g.iter().map(|x| x.1).sum::<f64>() / g.len() as f64;
            f.true_gap_first = Some(mean(&gaps[..fifth]));
            f.true_gap_last = Some(mean(&gaps[gaps.len() - fifth..]));
        }

        let mut brier_sum = 0.0;
        let mut brier_n = 0;
        let mut buckets: Vec<CalibrationBucket> = Vec::new();
        for r in results {
            f.matches += r.matches;
            f.reported += r.reported;
            f.lopsided += r.lopsided;
            f.stomps += r.stomps;
            let played: i64 = r.calibration.0.iter().map(|b| b.matches).sum();
            if let Some(b) = r.brier {
                brier_sum += b * played as f64;
                brier_n += played;
            }
            for b in r.calibration.0.iter() {
                add_bucket(&mut buckets, b);
            }
        }
        f.brier = (brier_n > 0).then(|| brier_sum / brier_n as f64);
        buckets.sort_by_key(|b| b.bucket);
        f.calibration = buckets;
        f
    }

    /// The table's rows.
    pub fn rows(&self) -> Vec<(String, String)> {
        let opt = |v: Option<f64>, digits: usize| v.map_or("-".into(), |x| format!("{x:.digits$}"));
        let mut rows = vec![
            (
                format!(
                    "rated 3v3 (pool {}): players rated, matches p50 / max",
                    self.pool.as_deref().unwrap_or("-")
                ),
                format!(
                    "{}, {} / {}",
                    self.players, self.matches_p50, self.matches_max
                ),
            ),
            (
                format!("  rating vs true skill, rank correlation (>= {MIN_MATCHES} matches)"),
                format!(
                    "{} ({} players)",
                    opt(self.rank_correlation, 3),
                    self.correlated
                ),
            ),
            (
                "  true top 5%: median percentile of their ratings".into(),
                opt(self.top_rating_percentile.map(|p| 100.0 * p), 0),
            ),
            (
                "  true win chance's gap from 50%, first / last fifth".into(),
                format!(
                    "{} / {}",
                    opt(self.true_gap_first, 3),
                    opt(self.true_gap_last, 3)
                ),
            ),
            (
                "  matches / results reported, Brier score".into(),
                format!(
                    "{} / {}, {}",
                    self.matches,
                    self.reported,
                    opt(self.brier, 3)
                ),
            ),
            (
                "  predicted >= 70% for a team / stomps (it won)".into(),
                format!("{} / {}", self.lopsided, self.stomps),
            ),
        ];
        let curve: Vec<String> = self
            .calibration
            .iter()
            .filter(|b| b.matches >= 10)
            .map(|b| {
                format!(
                    "{:.0}->{:.0}% ({})",
                    100.0 * b.predicted,
                    100.0 * b.observed,
                    b.matches
                )
            })
            .collect();
        rows.push((
            "  predicted -> won, per tenth with >= 10 matches".into(),
            if curve.is_empty() {
                "-".into()
            } else {
                curve.join(", ")
            },
        ));
        rows
    }
}

/// Merge `b` into the bucket of the same tenth, weighting by matches.
fn add_bucket(buckets: &mut Vec<CalibrationBucket>, b: &CalibrationBucket) {
    let Some(into) = buckets.iter_mut().find(|x| x.bucket == b.bucket) else {
        buckets.push(b.clone());
        return;
    };
    let n = (into.matches + b.matches) as f64;
    if n > 0.0 {
        into.predicted =
            (into.predicted * into.matches as f64 + b.predicted * b.matches as f64) / n;
        into.observed = (into.observed * into.matches as f64 + b.observed * b.matches as f64) / n;
    }
    into.matches += b.matches;
}

/// Ranks from 0, ties sharing their mean rank.
fn ranks(x: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|&i, &j| x[i].total_cmp(&x[j]));
    let mut r = vec![0.0; x.len()];
    let mut start = 0;
    while start < idx.len() {
        let mut end = start + 1;
        while end < idx.len() && x[idx[end]] == x[idx[start]] {
            end += 1;
        }
        let mean = (start + end - 1) as f64 / 2.0;
        for &i in &idx[start..end] {
            r[i] = mean;
        }
        start = end;
    }
    r
}

/// Spearman's rank correlation (Pearson's over the ranks); None under three pairs or
/// when either side is constant.
pub fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 3 || a.len() != b.len() {
        return None;
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    (va > 0.0 && vb > 0.0).then(|| cov / (va * vb).sqrt())
}

/// The median percentile of the ratings of the players whose true skill is in the top
/// [`TOP_SHARE`] (at least one player), among all ratings.
fn top_percentile(truth: &[f64], rating: &[f64]) -> Option<f64> {
    if truth.len() < 2 {
        return None;
    }
    let rating_ranks = ranks(rating);
    let mut by_truth: Vec<usize> = (0..truth.len()).collect();
    by_truth.sort_by(|&i, &j| truth[j].total_cmp(&truth[i]));
    let top = ((truth.len() as f64 * TOP_SHARE).ceil() as usize).max(1);
    let mut pct: Vec<f64> = by_truth[..top]
        .iter()
        .map(|&i| rating_ranks[i] / (truth.len() - 1) as f64)
        .collect();
    pct.sort_by(f64::total_cmp);
    Some(pct[pct.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::simulator::RatedPlayer;
    use sqlx::types::Json;

    #[test]
    fn ties_share_their_rank_and_a_perfect_order_correlates_fully() {
        assert_eq!(ranks(&[3.0, 1.0, 1.0, 2.0]), [3.0, 0.5, 0.5, 2.0]);
        let truth = [1500.0, 1500.0, 1600.0, 1900.0];
        assert_eq!(
            spearman(&truth, &[1480.0, 1480.0, 1550.0, 1800.0]),
            Some(1.0)
        );
        let reversed = spearman(&truth, &[1800.0, 1800.0, 1550.0, 1480.0]).unwrap();
        assert!((reversed + 1.0).abs() < 1e-12, "{reversed}");
        assert_eq!(spearman(&truth, &[1500.0; 4]), None, "constant ratings");
    }

    #[test]
    fn figures_count_settled_players_compare_fifths_and_merge_the_queues() {
        let rated = |true_skill: f64, rating: f64, matches: i64| RatedPlayer {
            true_skill,
            rating,
            matches,
        };
        let sims = SimReport {
            rating_pool: Some("ranked_3v3".into()),
            // The unsettled player (2 matches) is left out of the correlation.
            ratings: vec![
                rated(1500.0, 1490.0, 6),
                rated(1520.0, 1510.0, 8),
                rated(1700.0, 1650.0, 7),
                rated(2000.0, 1900.0, 9),
                rated(2100.0, 1400.0, 2),
            ],
            true_gaps: (0..10)
                .map(|k| (k as f64, if k < 2 { 0.3 } else { 0.1 }))
                .collect(),
            ..SimReport::default()
        };
        let bucket = |bucket, matches, predicted, observed| CalibrationBucket {
            bucket,
            matches,
            predicted,
            observed,
        };
        let results = [
            ResultStats {
                queue: "eu_3v3".into(),
                matches: 10,
                reported: 10,
                brier: Some(0.2),
                lopsided: 1,
                stomps: 1,
                calibration: Json(vec![bucket(5, 10, 0.55, 0.6)]),
                ..ResultStats::default()
            },
            ResultStats {
                queue: "us_3v3".into(),
                matches: 30,
                reported: 28,
                brier: Some(0.24),
                calibration: Json(vec![bucket(5, 20, 0.52, 0.45), bucket(7, 8, 0.72, 0.5)]),
                ..ResultStats::default()
            },
        ];
        let f = RatingFigures::measure(&sims, &results);
        assert_eq!((f.players, f.matches_p50, f.matches_max), (5, 7, 9));
        assert_eq!((f.correlated, f.rank_correlation), (4, Some(1.0)));
        assert_eq!(f.top_rating_percentile, Some(1.0));
        assert_eq!((f.true_gap_first, f.true_gap_last), (Some(0.3), Some(0.1)));
        assert_eq!(
            (f.matches, f.reported, f.lopsided, f.stomps),
            (40, 38, 1, 1)
        );
        // Weighted by the matches each queue's curve holds: (0.2 * 10 + 0.24 * 28) / 38.
        assert!((f.brier.unwrap() - (0.2 * 10.0 + 0.24 * 28.0) / 38.0).abs() < 1e-12);
        assert_eq!(f.calibration.len(), 2);
        let fifth = &f.calibration[0];
        assert_eq!((fifth.bucket, fifth.matches), (5, 30));
        assert!((fifth.observed - (0.6 * 10.0 + 0.45 * 20.0) / 30.0).abs() < 1e-12);
        let rows = f.rows();
        assert!(
            rows.iter()
                .any(|(k, v)| k.contains("rank correlation") && v.starts_with("1.000"))
        );
        assert!(rows.last().unwrap().1.contains("53->50% (30)"), "{rows:?}");
    }
}
