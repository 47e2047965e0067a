//! Balanced leadership, the decision: from the live replicas (and the queues each may
//! lead) and the leases, what this replica should do with each of its queues: keep it,
//! hand it over, or take it. Plain data in, a [`Plan`] out; the loop that heartbeats,
//! renews and acts on the plan is [`super::leadership`].
//!
//! * **Shares.** With R live replicas and Q queues, each replica's share is Q/R rounded
//!   down or up, the shares summing to Q ([`shares`]). The queues left over by the
//!   division go to the replicas that lead the most already, so a settled fleet keeps its
//!   shares and nobody hands a queue over for nothing.
//! * **Sticky.** A replica keeps every queue it leads up to its share; only the excess is
//!   handed over, and only when some other replica that may lead that queue is below its
//!   share (someone will take it). A replica below its share takes free queues.
//! * **Deterministic tie-breaks** by rendezvous hashing of queue x replica ([`weight`]):
//!   a replica hands over the queues it weighs least and takes those it weighs most,
//!   and every replica computes the same shares from the same rows, so nothing flaps.
//! * **Availability first.** A queue free for longer than `orphan_after` (its designated
//!   taker never came: replicas that disagreed for a moment, or queues only some configs
//!   list) is taken by any replica that may lead it, whatever its share; the next plans
//!   even the shares out again.
//!
//! Safety is not decided here: a lease changes hands only once free or expired, and every
//! commit is fenced by its term (`db::lease`), whatever a plan says.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use crate::db::replicas::{LeaseState, Peer};

/// What this replica should do with its queues.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Live replicas counted (this one included).
    pub replicas: usize,
    /// How many queues this replica should lead.
    pub share: usize,
    /// Queues it leads and keeps.
    pub keep: Vec<String>,
    /// Queues it leads beyond its share: give them up between rounds.
    pub hand_over: Vec<String>,
    /// Free queues to take while it leads fewer than its share, best first.
    pub take: Vec<String>,
    /// Queues free for longer than `orphan_after`: take them whatever the share.
    pub orphans: Vec<String>,
}

/// The rendezvous weight of `queue` for `replica` (highest random weight hashing): a
/// stable pseudo-random order of the replicas per queue, the same in every process and
/// build (xxHash64, a specified hash; std's hasher may change between Rust releases).
pub fn weight(queue: &str, replica: &str) -> u64 {
    let mut key = Vec::with_capacity(queue.len() + replica.len() + 1);
    key.extend_from_slice(queue.as_bytes());
    // A separator no name contains: ("ab", "c") and ("a", "bc") weigh differently.
    key.push(0);
    key.extend_from_slice(replica.as_bytes());
    twox_hash::XxHash64::oneshot(0, &key)
}

/// Each live replica's share of the queues. Queues are dealt one at a time, the most
/// constrained first (fewest replicas may lead it), each to the replica that may lead it
/// and has been dealt the fewest so far; ties go to the replica that leads the most now
/// (`leading`), then by [`weight`]. With one config for all, the shares are Q/R rounded
/// down or up and sum to Q.
pub fn shares(peers: &[Peer], leading: &HashMap<&str, usize>) -> BTreeMap<String, usize> {
    let mut candidates: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for p in peers {
        for q in &p.queues {
            candidates.entry(q).or_default().insert(&p.replica);
        }
    }
    let mut order: Vec<(&str, BTreeSet<&str>)> = candidates.into_iter().collect();
    order.sort_by_key(|(q, c)| (c.len(), *q));
    let mut dealt: BTreeMap<String, usize> = peers.iter().map(|p| (p.replica.clone(), 0)).collect();
    for (queue, candidates) in order {
        let best = candidates.iter().copied().min_by_key(|r| {
            (
                dealt[*r],
                Reverse(leading.get(r).copied().unwrap_or(0)),
                Reverse(weight(queue, r)),
                *r,
            )
        });
        if let Some(best) = best {
            *dealt.get_mut(best).expect("every candidate is a peer") += 1;
        }
    }
    dealt
}

/// The plan of replica `me`, which may lead `my_queues`. `peers`: the live replicas (`me`
/// is counted with `my_queues` whether listed or not); `leases`: every lease row.
pub fn plan(
    me: &str,
    my_queues: &[String],
    peers: &[Peer],
    leases: &[LeaseState],
    orphan_after: Duration,
) -> Plan {
    let mut peers: Vec<Peer> = peers.iter().filter(|p| p.replica != me).cloned().collect();
    peers.push(Peer {
        replica: me.to_string(),
        queues: my_queues.to_vec(),
    });
    let live_peers: BTreeSet<&str> = peers.iter().map(|p| p.replica.as_str()).collect();
    let lease_of: HashMap<&str, &LeaseState> =
        leases.iter().map(|l| (l.queue.as_str(), l)).collect();

    // Who leads what now: live leases of live replicas. A live lease of a replica that
    // is gone (dead, not yet expired; or an older binary that never registers) is
    // nobody's share and nobody's to take until it expires.
    let mut leading: HashMap<&str, usize> = HashMap::new();
    for l in leases {
        if l.live() && live_peers.contains(l.holder.as_str()) {
            *leading.entry(l.holder.as_str()).or_default() += 1;
        }
    }
    let shares = shares(&peers, &leading);
    let share = shares[me];

    let mine: BTreeSet<&str> = my_queues.iter().map(String::as_str).collect();
    let mut held: Vec<&str> = mine
        .iter()
        .copied()
        .filter(|q| lease_of.get(q).is_some_and(|l| l.live() && l.holder == me))
        .collect();
    let mut hand_over = Vec::new();
    if held.len() > share {
        // Only to someone below its share who may lead the queue: otherwise the queue
        // would lie free until it is an orphan, and come back to us.
        let below: Vec<&Peer> = peers
            .iter()
            .filter(|p| {
                p.replica != me
                    && leading.get(p.replica.as_str()).copied().unwrap_or(0) < shares[&p.replica]
            })
            .collect();
        let mut candidates: Vec<&str> = held
            .iter()
            .copied()
            .filter(|q| below.iter().any(|p| p.queues.iter().any(|pq| pq == q)))
            .collect();
        candidates.sort_by_key(|q| (weight(q, me), *q));
        candidates.truncate(held.len() - share);
        held.retain(|q| !candidates.contains(q));
        hand_over = candidates.into_iter().map(str::to_string).collect();
    }

    let free: Vec<&str> = mine
        .iter()
        .copied()
        .filter(|q| lease_of.get(q).is_none_or(|l| !l.live()))
        .collect();
    let mut take: Vec<&str> = free.clone();
    take.sort_by_key(|q| (Reverse(weight(q, me)), *q));
    let orphans: Vec<String> = free
        .iter()
        .filter(|q| {
            lease_of
                .get(*q)
                .is_some_and(|l| -l.expires_in >= orphan_after.as_secs_f64())
        })
        .map(|q| q.to_string())
        .collect();

    Plan {
        replicas: peers.len(),
        share,
        keep: held.into_iter().map(str::to_string).collect(),
        hand_over,
        take: take.into_iter().map(str::to_string).collect(),
        orphans,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("q{i}")).collect()
    }

    fn peer(name: &str, queues: &[String]) -> Peer {
        Peer {
            replica: name.into(),
            queues: queues.to_vec(),
        }
    }

    fn lease(queue: &str, holder: &str, expires_in: f64) -> LeaseState {
        LeaseState {
            queue: queue.into(),
            holder: holder.into(),
            term: 1,
            expires_in,
        }
    }

    const ORPHAN: Duration = Duration::from_secs(15);

    /// Every replica plans and acts (hand over, then take) on the same rows, one after
    /// the other, until a round of plans changes nothing: the leases the fleet settles on.
    /// Returns the rounds of plans that changed something, and the hand-overs.
    fn settle(names: &[&str], qs: &[String], leases: &mut Vec<LeaseState>) -> (usize, usize) {
        let peers: Vec<Peer> = names.iter().map(|n| peer(n, qs)).collect();
        let mut handed = 0;
        for pass in 0..20 {
            let mut changed = false;
            for me in names {
                let p = plan(me, qs, &peers, leases, ORPHAN);
                for q in &p.hand_over {
                    let l = leases.iter_mut().find(|l| &l.queue == q).unwrap();
                    l.expires_in = 0.0;
                    handed += 1;
                    changed = true;
                }
                let mut leading = p.keep.len();
                for q in p.orphans.iter().chain(&p.take) {
                    let orphan = p.orphans.contains(q);
                    if !orphan && leading >= p.share {
                        continue;
                    }
                    match leases.iter_mut().find(|l| &l.queue == q) {
                        Some(l) if l.live() => continue,
                        Some(l) => {
                            l.holder = me.to_string();
                            l.expires_in = 15.0;
                        }
                        None => leases.push(lease(q, me, 15.0)),
                    }
                    leading += 1;
                    changed = true;
                }
            }
            if !changed {
                return (pass, handed);
            }
        }
        panic!("no settled state after 20 passes: {leases:?}");
    }

    fn counts(leases: &[LeaseState]) -> BTreeMap<String, usize> {
        let mut c = BTreeMap::new();
        for l in leases.iter().filter(|l| l.live()) {
            *c.entry(l.holder.clone()).or_default() += 1;
        }
        c
    }

    #[test]
    fn shares_are_q_over_r_rounded_and_sum_to_q() {
        for r in 1..=7 {
            for q in 0..=23 {
                let names: Vec<String> = (0..r).map(|i| format!("r{i}")).collect();
                let peers: Vec<Peer> = names.iter().map(|n| peer(n, &queues(q))).collect();
                let s = shares(&peers, &HashMap::new());
                assert_eq!(s.values().sum::<usize>(), q, "{r} replicas, {q} queues");
                for v in s.values() {
                    assert!(*v == q / r || *v == q.div_ceil(r), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn the_extra_queue_goes_to_the_replica_that_leads_more() {
        let qs = queues(10);
        let peers: Vec<Peer> = ["a", "b", "c"].iter().map(|n| peer(n, &qs)).collect();
        for favourite in ["a", "b", "c"] {
            let leading: HashMap<&str, usize> = [(favourite, 4)].into_iter().collect();
            let s = shares(&peers, &leading);
            assert_eq!(s[favourite], 4, "{s:?}");
        }
    }

    #[test]
    fn a_fresh_fleet_settles_three_each_and_stays() {
        let qs = queues(9);
        let mut leases = Vec::new();
        settle(&["a", "b", "c"], &qs, &mut leases);
        assert_eq!(
            counts(&leases).values().copied().collect::<Vec<_>>(),
            vec![3, 3, 3]
        );
        // Settled: another round of plans hands nothing over and takes nothing.
        let before = leases.clone();
        assert_eq!(settle(&["a", "b", "c"], &qs, &mut leases), (0, 0));
        assert_eq!(leases, before);
    }

    #[test]
    fn joiners_get_their_share_from_a_replica_that_led_everything() {
        let qs = queues(9);
        let mut leases: Vec<LeaseState> = qs.iter().map(|q| lease(q, "a", 10.0)).collect();
        let (_, handed) = settle(&["a", "b"], &qs, &mut leases);
        let two = counts(&leases);
        assert_eq!(
            two.values().copied().collect::<BTreeSet<_>>(),
            [4, 5].into()
        );
        // Only the excess changes hands: 4 queues from 9/0 to 5/4 (or 5, to 4/5).
        assert_eq!(handed, 9 - two["a"], "{two:?}");
        let (_, handed) = settle(&["a", "b", "c"], &qs, &mut leases);
        assert_eq!(handed, 3, "from 5/4 to 3/3/3: 2 + 1");
        assert_eq!(
            counts(&leases).values().copied().collect::<Vec<_>>(),
            vec![3, 3, 3]
        );
    }

    #[test]
    fn survivors_take_a_dead_replicas_queues_without_moving_their_own() {
        let qs = queues(9);
        let holders = ["a", "a", "a", "b", "b", "b", "c", "c", "c"];
        let mut leases: Vec<LeaseState> = qs
            .iter()
            .zip(holders)
            .map(|(q, h)| lease(q, h, 10.0))
            .collect();
        // `c` died: its row expired first, its leases just after.
        for l in leases.iter_mut().filter(|l| l.holder == "c") {
            l.expires_in = -0.1;
        }
        let before: Vec<(String, String)> = leases
            .iter()
            .filter(|l| l.holder != "c")
            .map(|l| (l.queue.clone(), l.holder.clone()))
            .collect();
        settle(&["a", "b"], &qs, &mut leases);
        let after = counts(&leases);
        assert_eq!(after.values().sum::<usize>(), 9);
        assert_eq!(
            after.values().copied().collect::<BTreeSet<_>>(),
            [4, 5].into()
        );
        for (q, h) in before {
            let now = leases.iter().find(|l| l.queue == q).unwrap();
            assert_eq!(now.holder, h, "{q} moved between survivors");
        }
    }

    #[test]
    fn a_dead_replicas_live_lease_is_waited_for() {
        let qs = queues(3);
        let leases = vec![lease("q0", "ghost", 5.0), lease("q1", "a", 5.0)];
        let p = plan("a", &qs, &[peer("a", &qs)], &leases, ORPHAN);
        assert_eq!(p.share, 3);
        assert_eq!(p.keep, vec!["q1"]);
        assert_eq!(p.take, vec!["q2"], "q0's lease is live");
    }

    #[test]
    fn no_hand_over_to_replicas_that_cannot_lead_the_queue() {
        // `b` may lead only q0; `a` leads everything. b's share is 1 (q0 is dealt first:
        // it has two candidates, the others one), so `a` hands over q0 and nothing else.
        let qs = queues(4);
        let peers = vec![peer("a", &qs), peer("b", &qs[..1])];
        let leases: Vec<LeaseState> = qs.iter().map(|q| lease(q, "a", 10.0)).collect();
        let p = plan("a", &qs, &peers, &leases, ORPHAN);
        assert_eq!(p.share, 3);
        assert_eq!(p.hand_over, vec!["q0"]);
        // b is at its share: a keeps everything.
        let mut leases = leases;
        leases[0].holder = "b".into();
        let p = plan("a", &qs, &peers, &leases, ORPHAN);
        assert!(p.hand_over.is_empty(), "{p:?}");
    }

    #[test]
    fn a_queue_free_too_long_is_an_orphan_whatever_the_share() {
        let qs = queues(2);
        let leases = vec![lease("q0", "a", 10.0), lease("q1", "b", -20.0)];
        let peers = vec![peer("a", &qs), peer("b", &qs)];
        let p = plan("a", &qs, &peers, &leases, ORPHAN);
        assert_eq!(p.share, 1);
        assert_eq!(p.orphans, vec!["q1"]);
        let leases = vec![lease("q0", "a", 10.0), lease("q1", "b", -2.0)];
        let p = plan("a", &qs, &peers, &leases, ORPHAN);
        assert!(p.orphans.is_empty(), "freed 2 s ago: b's to take");
    }

    #[test]
    fn weights_are_stable_across_builds() {
        // Pinned (xxHash64, seed 0, of "ranked_3v3\0host-a-17"): replicas of different
        // builds must order queues the same way.
        assert_ne!(weight("ab", "c"), weight("a", "bc"));
        assert_eq!(
            weight("ranked_3v3", "host-a-17"),
            17_834_751_529_379_798_610
        );
    }
}
