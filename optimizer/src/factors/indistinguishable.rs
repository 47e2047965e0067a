//! Factor 3, indistinguishable teams (the mutual-information balancing note).
//!
//! Each team's skills and the whole match's skills are approximated by normals; with
//! mu_i, sigma_i^2 the team's mean and variance and mu, sigma^2 the match's (population
//! variances, each plus `indistinguishable_teams.sigma_prior`^2 so that equal skills do
//! not give log 0):
//!
//! D = sum over teams of 1/2 [ (mu_i - mu)^2 / sigma^2 + sigma_i^2 / sigma^2
//!                              - ln(sigma_i^2 / sigma^2) - 1 ]
//!
//! the summed KL divergence of the mutual-information balancing note. Factor = exp(-D / `indistinguishable_teams.scale`)
//! (D = 0, identical distributions, scores 1).

/// Mean and population variance.
pub fn moments(skills: &[f64]) -> (f64, f64) {
    let n = skills.len() as f64;
    let mean = skills.iter().sum::<f64>() / n;
    let var = skills.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / n;
    (mean, var)
}

/// D from per-team (mean, variance) and the match's (mean, variance).
pub fn divergence(teams: &[(f64, f64)], whole: (f64, f64), sigma_prior: f64) -> f64 {
    let prior2 = sigma_prior * sigma_prior;
    let (mu, var) = whole;
    let s2 = var + prior2;
    teams
        .iter()
        .map(|&(mi, vi)| {
            let si2 = vi + prior2;
            0.5 * ((mi - mu) * (mi - mu) / s2 + si2 / s2 - (si2 / s2).ln() - 1.0)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_teams_score_zero_divergence() {
        let a = moments(&[1.0, 3.0]);
        let whole = moments(&[1.0, 3.0, 1.0, 3.0]);
        assert!(divergence(&[a, a], whole, 1.0).abs() < 1e-12);
    }

    #[test]
    fn hand_computed_divergence() {
        // teams {0, 0} and {2, 2}: team means 0 and 2, variances 0; match mean 1, var 1.
        // prior 1: s2 = 2, si2 = 1; each team: 0.5 * (1/2 + 1/2 - ln(1/2) - 1) = 0.5 ln 2
        let d = divergence(&[(0.0, 0.0), (2.0, 0.0)], (1.0, 1.0), 1.0);
        assert!((d - 2f64.ln()).abs() < 1e-12);
    }
}
