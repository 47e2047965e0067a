//! `maps`: how much a match's players like the map it is played on, chosen with them in
//! the round (`crate::maps::MapChoices::pick`).
//!
//! Each player gives a map half a point for being one they prefer (every map, when they
//! named none) and half a point for being fresh: not among the maps of their last
//! `repeat_depth` matches, or long enough ago. A map played k matches ago (0: the last)
//! is stale by (depth - k) / depth; plays add up to at most 1. A map the player vetoed
//! is worth nothing to them.
//!
//! factor = mean over the match's players of (prefer + (1 - staleness)) / 2, in [0, 1]:
//! 1 when everyone likes the map and nobody played it lately. The map is the one with
//! the highest factor among those nobody in the match vetoed, so the factor depends on
//! the players, not on the team split.

/// The factor from the summed points (prefer + freshness per player) of `players`.
#[inline]
pub fn score(points: f64, players: usize) -> f64 {
    if players == 0 {
        return 1.0;
    }
    (points / (2.0 * players as f64)).clamp(0.0, 1.0)
}

/// Staleness of a map played `rank` matches ago (0: the last) with `depth` matches
/// counted: 1 for the last match, falling linearly to 1 / depth for the oldest.
#[inline]
pub fn staleness(rank: usize, depth: usize) -> f32 {
    if rank >= depth {
        0.0
    } else {
        (depth - rank) as f32 / depth as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_map_is_the_stalest() {
        assert_eq!(staleness(0, 3), 1.0);
        assert!(staleness(1, 3) < staleness(0, 3));
        assert!(staleness(2, 3) > 0.0);
        assert_eq!(staleness(3, 3), 0.0);
    }

    #[test]
    fn everyone_liking_a_fresh_map_scores_one() {
        assert_eq!(score(2.0 * 6.0, 6), 1.0);
        assert_eq!(score(6.0, 6), 0.5);
    }
}
