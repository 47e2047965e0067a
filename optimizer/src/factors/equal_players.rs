//! Factor 2, equal players (the Awesomenauts matchmaker post; q-uniformity of Alman and McKay).
//!
//! Spread of all (capped) skills in the match, ignoring teams:
//! - `equal_players.measure = "pairwise"` (default): the mean absolute difference over
//!   all pairs (the Awesomenauts matchmaker post: "15 combinations" for 6 players).
//! - `"uniformity"`: Alman and McKay's v_q = (mean over players of |s - mean|^q)^(1/q),
//!   `equal_players.q` >= 1 (2: standard deviation) or "inf" (largest deviation).
//!
//! The factor is `equal_players.curve`(spread) (default linear, scale 600).

use crate::model::{EqualPlayersParams, SpreadMeasure};

pub fn spread(skills: &[f64], params: &EqualPlayersParams) -> f64 {
    let n = skills.len();
    match params.measure {
        SpreadMeasure::Pairwise => {
            if n < 2 {
                return 0.0;
            }
            let mut sum = 0.0;
            for i in 0..n {
                for j in i + 1..n {
                    sum += (skills[i] - skills[j]).abs();
                }
            }
            sum / (n * (n - 1) / 2) as f64
        }
        SpreadMeasure::Uniformity => {
            let mean = skills.iter().sum::<f64>() / n as f64;
            let q = params.q.0;
            if q.is_infinite() {
                skills.iter().map(|s| (s - mean).abs()).fold(0.0, f64::max)
            } else if q == 2.0 {
                (skills.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / n as f64).sqrt()
            } else {
                (skills.iter().map(|s| (s - mean).abs().powf(q)).sum::<f64>() / n as f64)
                    .powf(1.0 / q)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Exponent;

    #[test]
    fn pairwise_mean_over_fifteen_pairs() {
        let p = EqualPlayersParams::default();
        // 0,0,0,10,10,10: 9 pairs differ by 10, 6 pairs by 0 -> 90 / 15 = 6
        assert_eq!(spread(&[0., 0., 0., 10., 10., 10.], &p), 6.0);
    }

    #[test]
    fn q_uniformity() {
        let mut p = EqualPlayersParams {
            measure: SpreadMeasure::Uniformity,
            ..EqualPlayersParams::default()
        };
        // mean 5, deviations 5,3,3,5 -> std = sqrt((25+9+9+25)/4) = sqrt(17)
        let s = [0., 2., 8., 10.];
        assert!((spread(&s, &p) - 17f64.sqrt()).abs() < 1e-12);
        p.q = Exponent(1.0);
        assert_eq!(spread(&s, &p), 4.0);
        p.q = Exponent::INFINITE;
        assert_eq!(spread(&s, &p), 5.0);
        p.q = Exponent(3.0);
        assert!((spread(&s, &p) - ((125. + 27. + 27. + 125.) / 4f64).cbrt()).abs() < 1e-12);
    }
}
