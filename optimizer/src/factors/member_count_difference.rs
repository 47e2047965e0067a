//! Factor 11, member-count difference (AccelByte's rebalance guide: "the member count difference between
//! teams" is a rebalance criterion).
//!
//! Only queues with an alliance range (`[queues.NAME.alliance]`) have this factor in
//! the average: every team of a fixed format is the same size, and leaving it out keeps
//! their scores exactly as they were. In a flexible queue it is
//! 1 - (largest team - smallest team) / largest team: 1 for 5v5 and 4v4, 0.8 for 5v4,
//! 0.6 for 5v3. It depends only on the format, so every split of a match shares it.

/// The factor of a format (players per team, largest first).
pub fn score(format: &[usize]) -> f64 {
    let (Some(&hi), Some(&lo)) = (format.iter().max(), format.iter().min()) else {
        return 1.0;
    };
    if hi == 0 {
        return 1.0;
    }
    1.0 - (hi - lo) as f64 / hi as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_teams_score_one_and_uneven_teams_less() {
        assert_eq!(score(&[5, 5]), 1.0);
        assert_eq!(score(&[4, 4]), 1.0);
        assert_eq!(score(&[5, 4]), 0.8);
        assert!((score(&[5, 3]) - 0.6).abs() < 1e-12);
        assert!((score(&[3, 3, 2]) - 2.0 / 3.0).abs() < 1e-12);
    }
}
