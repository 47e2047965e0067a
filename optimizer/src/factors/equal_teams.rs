//! Factor 1, equal teams (the Awesomenauts matchmaker post; p-fairness of Alman and McKay).
//!
//! Team skill s(X) (skills capped first, `skill.cap_min` / `skill.cap_max`):
//! - `equal_teams.team_skill = "mean"` (default): the power mean (mean of s^p)^(1/p);
//!   with the default p = 1 the plain average of the Awesomenauts matchmaker post.
//! - `"norm"`: Alman and McKay's p-norm (sum of s^p)^(1/p); p = 1 is the sum.
//! - p = "inf": the best player's skill (both modes).
//!
//! d = max over teams of s(X) - min over teams (for two teams Alman and McKay's d_p), and the
//! factor is `equal_teams.curve`(d) (default linear, scale 300: 1 - d/300, floored at 0).

use crate::model::{EqualTeamsParams, TeamSkill};

/// Skill of one team.
pub fn team_skill(skills: &[f64], params: &EqualTeamsParams) -> f64 {
    let p = params.p.0;
    if p.is_infinite() {
        return skills.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    }
    let n = skills.len() as f64;
    let sum_pow: f64 = if p == 1.0 {
        skills.iter().sum()
    } else if p == 2.0 {
        skills.iter().map(|s| s * s).sum()
    } else {
        skills.iter().map(|s| s.powf(p)).sum()
    };
    let base = match params.team_skill {
        TeamSkill::Mean => sum_pow / n,
        TeamSkill::Norm => sum_pow,
    };
    if p == 1.0 {
        base
    } else if p == 2.0 {
        base.sqrt()
    } else {
        base.powf(1.0 / p)
    }
}

/// Difference between the strongest and the weakest team.
pub fn difference(team_skills: &[f64]) -> f64 {
    let max = team_skills
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let min = team_skills.iter().copied().fold(f64::INFINITY, f64::min);
    max - min
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Exponent, TeamSkill};

    fn params(team_skill: TeamSkill, p: f64) -> EqualTeamsParams {
        EqualTeamsParams {
            team_skill,
            p: Exponent(p),
            ..EqualTeamsParams::default()
        }
    }

    #[test]
    fn mean_norm_and_infinity() {
        let t = [3.0, 4.0, 12.0];
        assert_eq!(team_skill(&t, &params(TeamSkill::Mean, 1.0)), 19.0 / 3.0);
        assert_eq!(team_skill(&t, &params(TeamSkill::Norm, 1.0)), 19.0);
        assert_eq!(team_skill(&t, &params(TeamSkill::Norm, 2.0)), 13.0);
        assert_eq!(
            team_skill(&t, &params(TeamSkill::Mean, f64::INFINITY)),
            12.0
        );
        // p = 3 norm of (1, 2): 9^(1/3)
        let v = team_skill(&[1.0, 2.0], &params(TeamSkill::Norm, 3.0));
        assert!((v - 9f64.powf(1.0 / 3.0)).abs() < 1e-12);
    }

    #[test]
    fn seed_002_combination_table_distances() {
        // AccelByte's rebalance guide, "Combination" example: A 70, {B, C} 60, D 40, E 40, F 10; the table's
        // "MMR Distance" is the difference of team means.
        let mean = params(TeamSkill::Mean, 1.0);
        let d = |a: &[f64], b: &[f64]| difference(&[team_skill(a, &mean), team_skill(b, &mean)]);
        let rows: [(&[f64], &[f64], f64); 8] = [
            (&[70., 60., 60.], &[40., 40., 10.], 33.34),
            (&[70., 40., 40.], &[60., 60., 10.], 6.66),
            (&[70., 40., 10.], &[60., 60., 40.], 13.34),
            (&[70., 40., 10.], &[60., 60., 40.], 13.34),
            (&[60., 60., 40.], &[70., 40., 10.], 13.34),
            (&[60., 60., 40.], &[70., 40., 10.], 13.34),
            (&[60., 60., 10.], &[70., 40., 40.], 6.66),
            (&[40., 40., 10.], &[70., 60., 60.], 33.34),
        ];
        for (a, b, expected) in rows {
            assert!((d(a, b) - expected).abs() < 0.01, "{a:?} vs {b:?}");
        }
    }
}
