//! Factor 8, side preference (the mutual-information balancing note).
//!
//! Each player may give a preference s in [0, 1] (0: the first side, 1: the second),
//! read as a Bernoulli variable. Over the players with a preference, t_i is the mean
//! preference in team i, t the mean over the match and n_i / n the team's share. The
//! mutual information between preference and team is
//! I = sum_i (n_i / n) [ t_i ln(t_i / t) + (1 - t_i) ln((1 - t_i) / (1 - t)) ]
//! (the mutual-information note's formula, weighted by team share), and the factor is I / H(t) with H the
//! binary entropy: 1 when preferences are fully separated by team, 0 when the teams
//! tell nothing. A match where nobody has a preference, or where all agree, scores 1.
//!
//! After the split, each two-team match is oriented so that the team with the lower
//! mean preference takes side 0 ("as many preferences as possible are met").

fn xlogy(x: f64, y: f64) -> f64 {
    if x <= 0.0 { 0.0 } else { x * (x / y).ln() }
}

/// Factor from per-team (sum of preferences, number of players with a preference).
pub fn score(teams: &[(f64, usize)]) -> f64 {
    let n: usize = teams.iter().map(|t| t.1).sum();
    if n == 0 {
        return 1.0;
    }
    let t = teams.iter().map(|t| t.0).sum::<f64>() / n as f64;
    let h = -(xlogy(t, 1.0) + xlogy(1.0 - t, 1.0));
    if h < 1e-12 {
        return 1.0;
    }
    let mut mi = 0.0;
    for &(sum, k) in teams {
        if k == 0 {
            continue;
        }
        let ti = sum / k as f64;
        mi += (k as f64 / n as f64) * (xlogy(ti, t) + xlogy(1.0 - ti, 1.0 - t));
    }
    (mi / h).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separated_preferences_score_one() {
        assert!((score(&[(0.0, 3), (3.0, 3)]) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn mixed_preferences_score_zero() {
        assert!(score(&[(1.0, 2), (1.0, 2)]).abs() < 1e-12);
    }

    #[test]
    fn no_preferences_score_one() {
        assert_eq!(score(&[(0.0, 0), (0.0, 0)]), 1.0);
    }

    #[test]
    fn hand_computed_partial() {
        // team 0: prefs {0, 1} -> t0 = 0.5, team 1: {1, 1} -> t1 = 1; t = 0.75
        let t: f64 = 0.75;
        let h = -(t * t.ln() + (1.0 - t) * (1.0 - t).ln());
        let mi = 0.5 * (0.5 * (0.5f64 / t).ln() + 0.5 * (0.5f64 / 0.25).ln())
            + 0.5 * (1.0 * (1.0 / t).ln());
        assert!((score(&[(1.0, 2), (2.0, 2)]) - mi / h).abs() < 1e-12);
    }
}
