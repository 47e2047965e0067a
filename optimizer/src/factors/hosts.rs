//! Factor 7, two possible hosts (the Awesomenauts matchmaker post; peer-to-peer queues only).
//!
//! A player can host when their ping (see `enemy_ping`) to every other player in the
//! match is at most `hosts.max_ping_ms` (150). Two or more such players score 1 (host
//! migration possible), exactly one scores `hosts.one_host_score` (0.5), none 0. The
//! output lists the possible hosts, best (lowest worst ping) first.

use crate::model::HostParams;

pub fn score(possible_hosts: usize, params: &HostParams) -> f64 {
    match possible_hosts {
        0 => 0.0,
        1 => params.one_host_score,
        _ => 1.0,
    }
}

/// The factor as the default strategy's search sees it on large pools: a match short of
/// two hosts also gets `credit` / 2 of the way to the next level for each of up to
/// (2 - hosts) near-hosts, players who reach everyone in the match but one. The factor
/// jumps from 0 to 1 only when the right players meet, often several exchanges away;
/// the credit rewards the exchanges on the way (docs/optimizer-tuning.md, "Near-host
/// credit"). Reports always use `score`.
pub fn search_score(
    possible_hosts: usize,
    near_hosts: usize,
    credit: f64,
    params: &HostParams,
) -> f64 {
    let h = score(possible_hosts, params);
    if possible_hosts >= 2 || credit == 0.0 {
        return h;
    }
    let near = near_hosts.min(2 - possible_hosts) as f64;
    h + credit * 0.5 * near * (1.0 - h)
}

/// Whether a player's mask of match-mates beyond the host limit has exactly one bit:
/// a near-host.
#[inline(always)]
pub fn misses_one(over: u32) -> bool {
    over != 0 && over & over.wrapping_sub(1) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_host_credit_moves_part_of_the_way_to_the_next_level() {
        let p = HostParams::default();
        // no credit, or two hosts already: the true factor
        for (hosts, near) in [(0, 0), (0, 3), (1, 2), (2, 4), (5, 0)] {
            assert_eq!(search_score(hosts, near, 0.0, &p), score(hosts, &p));
        }
        assert_eq!(search_score(2, 3, 0.3, &p), 1.0);
        // none: 0.3 / 2 per near-host, at most two count
        assert!((search_score(0, 1, 0.3, &p) - 0.15).abs() < 1e-12);
        assert!((search_score(0, 2, 0.3, &p) - 0.3).abs() < 1e-12);
        assert!((search_score(0, 5, 0.3, &p) - 0.3).abs() < 1e-12);
        // one: half of the credit's share of the way from 0.5 to 1, once
        assert!((search_score(1, 3, 0.3, &p) - 0.575).abs() < 1e-12);
    }

    #[test]
    fn a_near_host_misses_exactly_one_player() {
        assert!(!misses_one(0));
        assert!(misses_one(1 << 4));
        assert!(!misses_one(0b101));
    }
}
