//! Peer-to-peer matches always have a named host (the Awesomenauts post's "two
//! possible servers"): no strategy returns a match nobody in it can host, the match names
//! its host and backup host by the seed's host rule, players nobody can host with stay
//! queued with a `no_host` reason, and overdue players are matched with whoever can host
//! them.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::SubsecRound;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::Value;

use matchmaker::config::Config;
use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::round::RoundRunner;
use matchmaker::daemon::worker::{QueueWorker, StepOutcome};
use matchmaker_optimizer::index::IndexedPool;
use matchmaker_optimizer::{
    Budget, LeftOverKind, Pool, QueueModel, RoundOutcome, SolveOptions, Strategy,
    explain_left_over, solve,
};
use matchmaker_population::population::{Population, PopulationSpec};

use crate::client_contract::{contract_statements, run};
use crate::support::*;

/// Set the peer ping between players i and j of `pool`, both ways.
fn set_ping(pool: &mut Pool, i: usize, j: usize, ms: f64) {
    let (a, b) = (pool.players[i].id.clone(), pool.players[j].id.clone());
    pool.players[i].peer_pings.insert(b, ms);
    pool.players[j].peer_pings.insert(a, ms);
}

/// Check every match of `out` against the host rule, recomputed from the pings the core
/// uses (`IndexedPool::ping_ms`): someone can host; `hosts` is exactly the players who
/// can, best (lowest worst ping) first; `host` and `backup_host` are its first two.
/// Returns (matches, matches in which not everyone can host).
fn check_hosts(pool: &Pool, model: &QueueModel, out: &RoundOutcome) -> (usize, usize) {
    let ix = IndexedPool::build(pool, model).unwrap();
    let index: HashMap<&str, u32> = ix
        .ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i as u32))
        .collect();
    let limit = model.hosts.max_ping_ms;
    let ping = |a: u32, b: u32| {
        ix.ping_ms(a, b, model.ping.relay_overhead_ms, model.ping.unknown_ms) as f32 as f64
    };
    let mut constrained = 0;
    for m in &out.matches {
        let players: Vec<u32> = m
            .teams
            .iter()
            .flatten()
            .map(|p| index[p.as_str()])
            .collect();
        let worst: BTreeMap<&str, f64> = players
            .iter()
            .map(|&a| {
                let w = players
                    .iter()
                    .filter(|&&b| b != a)
                    .map(|&b| ping(a, b))
                    .fold(0.0, f64::max);
                (ix.ids[a as usize].as_str(), w)
            })
            .collect();
        let capable: HashSet<&str> = worst
            .iter()
            .filter(|(_, w)| **w <= limit)
            .map(|(p, _)| *p)
            .collect();
        assert!(!capable.is_empty(), "a hostless match: {m:?}");
        constrained += (capable.len() < players.len()) as usize;
        let hosts = m
            .hosts
            .as_ref()
            .expect("peer-to-peer matches list their hosts");
        assert_eq!(
            hosts.iter().map(String::as_str).collect::<HashSet<_>>(),
            capable,
            "{m:?}"
        );
        for pair in hosts.windows(2) {
            let (a, b) = (worst[pair[0].as_str()], worst[pair[1].as_str()]);
            assert!(
                a < b || (a == b && pair[0] < pair[1]),
                "hosts best first, ties by id: {m:?}"
            );
        }
        assert_eq!(m.host.as_ref(), hosts.first(), "{m:?}");
        assert_eq!(m.backup_host.as_ref(), hosts.get(1), "{m:?}");
        assert_eq!(
            m.factors.get("two_hosts").copied(),
            Some(if hosts.len() >= 2 {
                1.0
            } else {
                model.hosts.one_host_score
            }),
            "the two-hosts factor scores the backup: {m:?}"
        );
    }
    (out.matches.len(), constrained)
}

/// 500 generated peer-to-peer pools (6 to 120 players of the realistic world, parties
/// included), each with some players who cannot host: some with a ping above the host
/// limit to everyone (nobody can host a match with them), some to most others. Every
/// strategy in turn; no match is hostless, every player is accounted for, and the
/// players nobody can host with stay unmatched with a `no_host` reason.
#[test]
fn generated_pools_with_players_who_cannot_host_make_no_hostless_match() {
    let _load = crate::support::TIMING.blocking_read();
    let population = Population::realistic();
    let model = QueueModel::default();
    let strategies = Strategy::ALL;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(24);
    let (mut matches, mut constrained, mut unhostable_total) = (0, 0, 0);
    for k in 0..500u64 {
        let players = rng.random_range(6..=120);
        let mut pool = population.generate_pool(
            &PopulationSpec {
                players,
                hour_utc: (k % 24) as u32,
                ..PopulationSpec::default()
            },
            k,
        );
        let n = pool.players.len();
        // solos nobody can host with: over the limit to everyone
        let solos: Vec<usize> = (0..n)
            .filter(|&i| pool.players[i].party.is_none())
            .collect();
        let unhostable: Vec<usize> = solos
            .iter()
            .copied()
            .filter(|_| rng.random::<f64>() < 0.06)
            .collect();
        for &i in &unhostable {
            for j in 0..n {
                if j != i {
                    set_ping(&mut pool, i, j, rng.random_range(151.0..400.0));
                }
            }
        }
        // players who cannot host most matches: over the limit to two in three
        for i in 0..n {
            if unhostable.contains(&i) || rng.random::<f64>() >= 0.1 {
                continue;
            }
            for j in 0..n {
                if j != i && !unhostable.contains(&j) && rng.random::<f64>() < 0.66 {
                    set_ping(&mut pool, i, j, rng.random_range(160.0..300.0));
                }
            }
        }
        let strategy = strategies[k as usize % strategies.len()];
        let out = solve(
            &pool,
            &model,
            &SolveOptions {
                strategy,
                budget: Budget::Restarts(1),
                seed: k,
                threads: Some(1),
                moves_per_restart: Some(3_000),
                // every move's delta against a full re-score, on every tenth pool
                check_delta: k % 10 == 0,
            },
        )
        .unwrap();
        let (m, c) = check_hosts(&pool, &model, &out);
        matches += m;
        constrained += c;

        // everyone once: matched, unmatched or rejected
        let mut seen: Vec<&str> = out
            .matches
            .iter()
            .flat_map(|m| m.teams.iter().flatten())
            .chain(&out.unmatched)
            .chain(out.rejected.iter().map(|r| &r.id))
            .map(String::as_str)
            .collect();
        seen.sort();
        let mut all: Vec<&str> = pool.players.iter().map(|p| p.id.as_str()).collect();
        all.sort();
        assert_eq!(seen, all, "pool {k}");

        let left = explain_left_over(&pool, &model, &out).unwrap();
        let kind: HashMap<&str, LeftOverKind> =
            left.iter().map(|l| (l.player.as_str(), l.kind)).collect();
        for &i in &unhostable {
            let id = pool.players[i].id.as_str();
            assert!(
                out.unmatched.iter().any(|p| p == id),
                "pool {k}: {id} matched"
            );
            assert_eq!(kind[id], LeftOverKind::NoHost, "pool {k}: {left:?}");
        }
        unhostable_total += unhostable.len();
    }
    // the pools did put the rule to work
    assert!(matches > 2_000, "{matches} matches");
    assert!(
        constrained > 200,
        "{constrained} matches where not everyone can host"
    );
    assert!(
        unhostable_total > 100,
        "{unhostable_total} players nobody can host with"
    );
}

/// Seven players p0..p6 of skills 1500 + `step` * i, with no pings yet: p6 has waited an
/// hour (past max_wait), the others 10 s.
fn seven_one_overdue(step: f64) -> Pool {
    let now = t0();
    Pool {
        now: Some(now),
        players: (0..7)
            .map(|i| {
                let waited = if i == 6 { 3600 } else { 10 };
                player(
                    &format!("p{i}"),
                    1500.0 + step * i as f64,
                    now - chrono::Duration::seconds(waited),
                )
            })
            .collect(),
        ..Pool::default()
    }
}

/// A solve of two restarts on one thread with `strategy`, its hosts checked.
fn solve_checked(pool: &Pool, model: &QueueModel, strategy: Strategy) -> RoundOutcome {
    let out = solve(
        pool,
        model,
        &SolveOptions {
            strategy,
            budget: Budget::Restarts(2),
            threads: Some(1),
            ..SolveOptions::default()
        },
    )
    .unwrap();
    check_hosts(pool, model, &out);
    out
}

/// Seven players, one match: six who reach each other well, and a seventh with a ping
/// above the host limit to all of them. Nobody can host a match with the seventh, so the
/// round matches the six and leaves the seventh over with a `no_host` reason, even
/// though they waited past `max_wait`.
#[test]
fn a_player_nobody_can_host_with_is_left_over_even_when_overdue() {
    let mut pool = seven_one_overdue(1.0);
    for i in 0..6 {
        for j in i + 1..6 {
            set_ping(&mut pool, i, j, 40.0);
        }
        set_ping(&mut pool, i, 6, 300.0);
    }
    let model = QueueModel::default();
    for strategy in Strategy::ALL {
        let out = solve_checked(&pool, &model, strategy);
        assert_eq!(out.matches.len(), 1, "{strategy:?}: {out:?}");
        assert_eq!(out.unmatched, ["p6"], "{strategy:?}");
        let left = explain_left_over(&pool, &model, &out).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].kind, LeftOverKind::NoHost, "{left:?}");
        assert!(
            left[0].reason.contains("hosts.max_ping_ms (150 ms)")
                && left[0].reason.contains("0 of the 6 other players"),
            "{}",
            left[0].reason
        );
        assert!(left[0].reason.ends_with("(waited past max_wait)"));
    }
}

/// Seven players again, but the seventh (overdue) reaches one player, h, within the
/// limit, and h reaches everyone: the seventh must be placed (max-wait fallback), so the
/// match is the one h can host, h is its host, and someone else waits.
#[test]
fn an_overdue_player_is_matched_with_whoever_can_host_them() {
    let mut pool = seven_one_overdue(50.0);
    // p0 is h: 60 ms to everyone; the others 40 ms to each other, 300 ms to p6
    for i in 1..6 {
        set_ping(&mut pool, 0, i, 60.0);
        for j in i + 1..6 {
            set_ping(&mut pool, i, j, 40.0);
        }
        set_ping(&mut pool, i, 6, 300.0);
    }
    set_ping(&mut pool, 0, 6, 120.0);
    let model = QueueModel::default();
    // the strategies that search the objective (the baselines only cut and split)
    for strategy in [Strategy::Default, Strategy::Awesomenauts] {
        let out = solve_checked(&pool, &model, strategy);
        assert_eq!(out.matches.len(), 1, "{strategy:?}: {out:?}");
        let m = &out.matches[0];
        assert!(
            m.teams.iter().flatten().any(|p| p == "p6"),
            "{strategy:?}: the overdue player is placed: {out:?}"
        );
        assert_eq!(m.host.as_deref(), Some("p0"), "{strategy:?}: {m:?}");
        assert_eq!(m.backup_host, None, "only p0 reaches p6: {m:?}");
        assert_eq!(m.factors["two_hosts"], model.hosts.one_host_score);
    }
}

/// Through the daemon and the database, read as a client: six players who reach each
/// other and one whom nobody can host. The round's match names its host and backup host
/// (the two lowest worst pings) in `matches`, `match_details` and `player_status`; the
/// seventh stays queued with `left_over = no_host` and the reason in `player_status`.
#[tokio::test]
async fn matches_name_their_host_and_a_player_nobody_can_host_stays_queued_with_the_reason() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let statements = contract_statements();
    let config = Config::from_toml_str(
        "[queues.q]\n[queues.q.round]\nevery = \"1s\"\nbudget = \"50ms\"\nseed = 3\n",
    )
    .expect("valid config");
    let clock = ManualClock::new(chrono::Utc::now().trunc_subsecs(6));
    let runner = RoundRunner::new(db.clone(), std::sync::Arc::new(clock.clone()));
    let mut worker = QueueWorker::new(
        "q",
        "hosts",
        runner,
        std::sync::Arc::new(config.queues["q"].clone()),
        secs(15),
    );
    let first = worker.step().await.unwrap();
    assert!(matches!(first, StepOutcome::Waiting { .. }), "{first:?}");
    let (_login, client) = client_login(&tdb, 2).await;

    // p0..p5: ping 20 + 10 (i + j) between pi and pj, so p0's worst ping (70 ms) is the
    // lowest and p1's (80 ms) the next; far: 300 ms to everyone
    let names: Vec<String> = (0..6).map(|i| format!("p{i}")).collect();
    let enqueue = &statements["enqueue"];
    for (i, name) in names.iter().enumerate() {
        let mut pings: BTreeMap<String, f64> = names
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(j, other)| (other.clone(), 20.0 + 10.0 * (i + j) as f64))
            .collect();
        pings.insert("far".into(), 300.0);
        let pings = serde_json::to_string(&pings).unwrap();
        let skill = (1500 + i).to_string();
        run(
            &client,
            enqueue,
            &["q", name, &skill, "{}", &pings, "{}", "0.5", "100"],
        )
        .await
        .unwrap();
    }
    let far: BTreeMap<&String, f64> = names.iter().map(|n| (n, 300.0)).collect();
    let far = serde_json::to_string(&far).unwrap();
    run(
        &client,
        enqueue,
        &["q", "far", "1503", "{}", &far, "{}", "0.5", "100"],
    )
    .await
    .unwrap();

    clock.advance(secs(1));
    let StepOutcome::Ran(report) = worker.step().await.unwrap() else {
        panic!("the tick runs a round");
    };
    assert_eq!((report.matches, report.matched), (1, 6), "{report:?}");

    // the table
    let (host, backup, hosts): (Option<String>, Option<String>, Vec<String>) =
        sqlx::query_as("SELECT host_player_id, backup_host_player_id, hosts FROM matches")
            .fetch_one(db)
            .await
            .unwrap();
    assert_eq!(
        (host.as_deref(), backup.as_deref()),
        (Some("p0"), Some("p1"))
    );
    assert_eq!(hosts[..2], ["p0", "p1"]);

    // the client's views
    let everyone = format!("{{{},far}}", names.join(","));
    let rows = run(&client, &statements["player_status"], &[&everyone])
        .await
        .unwrap();
    let status: BTreeMap<&str, &Value> = rows
        .iter()
        .map(|r| (r["player_id"].as_str().unwrap(), r))
        .collect();
    assert_eq!(status.len(), 7);
    for name in &names {
        let row = status[name.as_str()];
        assert_eq!(row["status"], "matched", "{row}");
        assert_eq!(row["host_player_id"], "p0", "{row}");
        assert_eq!(row["backup_host_player_id"], "p1", "{row}");
        assert!(row["left_over"].is_null(), "{row}");
    }
    let far = status["far"];
    assert_eq!(far["status"], "queued", "{far}");
    assert_eq!(far["left_over"], "no_host", "{far}");
    let reason = far["reason"].as_str().expect("a reason");
    assert!(
        reason.starts_with("nobody could host a match with them")
            && reason.contains("hosts.max_ping_ms (150 ms)"),
        "{reason}"
    );
    let mine = run(&client, &statements["my_match"], &["p3"])
        .await
        .unwrap();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["host_player_id"], "p0", "{}", mine[0]);
    assert_eq!(mine[0]["backup_host_player_id"], "p1", "{}", mine[0]);
}

/// The migration's checks: a backup host needs a host, and is another player.
#[tokio::test]
async fn a_backup_host_needs_a_host_and_is_another_player() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let round: i64 = sqlx::query_scalar(
        "INSERT INTO rounds (queue, trigger, leader, term, started_at, snapshot_at,
                             committed_at, pool_size, match_count, matched, left_over,
                             rejected, snapshot_ms, solve_ms, commit_ms, seed, config_hash,
                             config)
         VALUES ('q', 'manual', 'x', 1, now(), now(), now(), 0, 0, 0, 0, 0, 0, 0, 0, 0, '',
                 '{}')
         RETURNING round_id",
    )
    .fetch_one(db)
    .await
    .unwrap();
    let insert = |host: Option<&'static str>, backup: Option<&'static str>| {
        sqlx::query(
            "INSERT INTO matches (round_id, queue, created_at, score, host_player_id,
                                  backup_host_player_id)
             VALUES ($1, 'q', now(), 0.5, $2, $3)",
        )
        .bind(round)
        .bind(host)
        .bind(backup)
        .execute(db)
    };
    insert(Some("a"), Some("b")).await.unwrap();
    insert(Some("a"), None).await.unwrap();
    insert(None, None).await.unwrap();
    for (host, backup, constraint) in [
        (None, Some("b"), "backup_host_needs_a_host"),
        (Some("a"), Some("a"), "backup_host_is_another_player"),
    ] {
        let e = insert(host, backup).await.unwrap_err();
        let (code, message) = db_error(&e);
        assert_eq!(code, "23514", "{message}");
        assert!(message.contains(constraint), "{message}");
    }
}
