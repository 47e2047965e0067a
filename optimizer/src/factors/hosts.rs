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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_hosts_score_one_one_host_scores_the_parameter_none_zero() {
        let p = HostParams::default();
        assert_eq!(score(0, &p), 0.0);
        assert_eq!(score(1, &p), p.one_host_score);
        assert_eq!(score(2, &p), 1.0);
        assert_eq!(score(5, &p), 1.0);
    }
}
