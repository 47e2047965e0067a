//! Factor 7, two possible hosts (seed 003; peer-to-peer queues only).
//!
//! A player can host when their ping (see `enemy_ping`) to every other player in the
//! match is at most `hosts.max_ping_ms` (150). Two or more such players score 1 (host
//! migration possible), exactly one scores `hosts.one_host_score` (0.5), none 0. The
//! output lists the possible hosts, best (lowest worst ping) first.

use crate::core::model::HostParams;

pub fn score(possible_hosts: usize, params: &HostParams) -> f64 {
    match possible_hosts {
        0 => 0.0,
        1 => params.one_host_score,
        _ => 1.0,
    }
}
