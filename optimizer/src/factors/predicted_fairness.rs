//! Factor 10, predicted fairness (beyond the seeds).
//!
//! Players carry a rating uncertainty (`skill_sigma`, default
//! `predicted_fairness.default_sigma`). The teams' win probabilities come from the
//! Weng-Lin (Bradley-Terry) model of the `skillratings` crate with
//! beta = `predicted_fairness.beta` skill points; the factor is 1 - (max P - min P) over
//! teams (1 for a coin flip). Uncertain players pull the prediction toward a draw, so
//! this is an alternative, uncertainty-aware equal-teams measure.

use skillratings::weng_lin::{
    WengLinConfig, WengLinRating, expected_score_multi_team, expected_score_two_teams,
};

pub fn score(teams: &[&[WengLinRating]], beta: f64) -> f64 {
    let config = WengLinConfig {
        beta,
        ..WengLinConfig::new()
    };
    if teams.len() == 2 {
        let (a, b) = expected_score_two_teams(teams[0], teams[1], &config);
        1.0 - (a - b).abs()
    } else {
        let p = expected_score_multi_team(teams, &config);
        let max = p.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = p.iter().copied().fold(f64::INFINITY, f64::min);
        1.0 - (max - min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(rating: f64, uncertainty: f64) -> WengLinRating {
        WengLinRating {
            rating,
            uncertainty,
        }
    }

    #[test]
    fn equal_teams_are_a_coin_flip() {
        let a = [r(1500.0, 50.0), r(1400.0, 50.0)];
        let b = [r(1450.0, 50.0), r(1450.0, 50.0)];
        assert!((score(&[&a, &b], 200.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn hand_computed_two_teams() {
        // sums 3000 vs 2800; c = sqrt(2 * 200^2 + 4 * 100^2) = sqrt(120000)
        let a = [r(1500.0, 100.0), r(1500.0, 100.0)];
        let b = [r(1400.0, 100.0), r(1400.0, 100.0)];
        let c = 120000f64.sqrt();
        let pa = (3000.0 / c).exp() / ((3000.0 / c).exp() + (2800.0 / c).exp());
        let expected = 1.0 - (pa - (1.0 - pa)).abs();
        assert!((score(&[&a, &b], 200.0) - expected).abs() < 1e-9);
    }
}
