//! Factor 4, premades (the Awesomenauts matchmaker post).
//!
//! A team's premade "bonds" = team_size - number of parties (solos count as parties of
//! one): 3 solos have 0 bonds, a 2-player premade + a solo 1, a 3-player premade 2. The
//! relative difference x = (max bonds - min bonds over teams) / (team_size - 1) goes
//! through the piecewise-linear `premades.table` of [x, score] points. The default
//! table [[0, 1], [0.5, 0.6], [1, 0]] reproduces the Awesomenauts matchmaker post exactly for 3v3: same
//! structure 1, 3-premade vs 2-premade + solo 0.6 (a small difference), 3-premade vs 3
//! solos 0; and it scales to other sizes (5v5: a 2-premade vs 5 solos scores 0.8).

/// Premade score from the number of parties in each team.
pub fn score(parties_per_team: &[usize], team_size: usize, table: &[[f64; 2]]) -> f64 {
    if team_size < 2 {
        return 1.0;
    }
    let max = *parties_per_team.iter().max().unwrap_or(&0);
    let min = *parties_per_team.iter().min().unwrap_or(&0);
    let x = (max - min) as f64 / (team_size - 1) as f64;
    interpolate(table, x)
}

/// Piecewise-linear interpolation, constant beyond the ends.
pub fn interpolate(table: &[[f64; 2]], x: f64) -> f64 {
    if x <= table[0][0] {
        return table[0][1];
    }
    for w in table.windows(2) {
        let ([x0, y0], [x1, y1]) = (w[0], w[1]);
        if x <= x1 {
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
        }
    }
    table[table.len() - 1][1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PremadeParams;

    #[test]
    fn seed_003_premade_table_for_3v3() {
        let t = PremadeParams::default().table;
        // parties per team: premade of 3 -> 1, premade of 2 + solo -> 2, 3 solos -> 3
        assert_eq!(score(&[1, 1], 3, &t), 1.0);
        assert_eq!(score(&[2, 2], 3, &t), 1.0);
        assert_eq!(score(&[3, 3], 3, &t), 1.0);
        assert_eq!(score(&[1, 2], 3, &t), 0.6);
        assert_eq!(score(&[2, 3], 3, &t), 0.6);
        assert_eq!(score(&[1, 3], 3, &t), 0.0);
    }

    #[test]
    fn generalizes_to_5v5() {
        let t = PremadeParams::default().table;
        assert!((score(&[4, 5], 5, &t) - 0.8).abs() < 1e-12);
        assert_eq!(score(&[1, 5], 5, &t), 0.0);
        assert_eq!(score(&[1, 1], 1, &t), 1.0);
    }
}
