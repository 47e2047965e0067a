//! Factor 12, shared language (the Awesomenauts matchmaker post asks "Should players from
//! the same region or language play together?"): teammates who can talk to one another
//! play better together.
//!
//! Only queues with `filters.language` (the attribute holding a player's languages, one
//! or a list) have it in the average. The score is the share of teammate pairs that
//! have a language in common, over the pairs where both players gave their languages
//! (a pair with an unknown side is left out); 1 when there is no such pair. It depends
//! on the split, so a queue weighting it takes the general split loop.

/// The factor from each slot's language bits and team.
pub fn score(languages: &[u64], team: &[u8]) -> f64 {
    let (mut known, mut shared) = (0u32, 0u32);
    for i in 0..languages.len() {
        if languages[i] == 0 {
            continue;
        }
        for j in i + 1..languages.len() {
            if team[i] == team[j] && languages[j] != 0 {
                known += 1;
                shared += (languages[i] & languages[j] != 0) as u32;
            }
        }
    }
    if known == 0 {
        1.0
    } else {
        shared as f64 / known as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn teammates_sharing_a_language_score_higher() {
        // en, en | de, de: every teammate pair shares
        assert_eq!(score(&[1, 1, 2, 2], &[0, 0, 1, 1]), 1.0);
        // en, de | en, de: no teammate pair shares
        assert_eq!(score(&[1, 2, 1, 2], &[0, 0, 1, 1]), 0.0);
        // a bilingual player bridges, an unknown one is left out
        assert_eq!(score(&[3, 2, 0, 1], &[0, 0, 1, 1]), 1.0);
    }
}
