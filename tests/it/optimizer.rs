//! The optimizer's input contract: validation errors name the player and field,
//! unusable players are rejected while the round is still solved, and the
//! `matchmaker optimize` command line.

use std::process::Command;

use matchmaker_optimizer::{
    Budget, Player, Pool, QueueModel, RoleMode, SolveOptions, Strategy, solve,
};

pub fn player(id: &str, skill: f64) -> Player {
    Player {
        id: id.into(),
        party: None,
        skill,
        skill_sigma: None,
        enqueued_at: None,
        latencies: Default::default(),
        peer_pings: Default::default(),
        roles: Vec::new(),
        side: None,
        ..Default::default()
    }
}

pub fn pool_of(players: Vec<Player>) -> Pool {
    Pool {
        players,
        ..Pool::default()
    }
}

pub fn quick() -> SolveOptions {
    SolveOptions {
        budget: Budget::Restarts(2),
        moves_per_restart: Some(3_000),
        threads: Some(1),
        ..SolveOptions::default()
    }
}

fn six() -> Vec<Player> {
    (1..=6)
        .map(|i| player(&format!("p{i}"), 1500.0 + i as f64))
        .collect()
}

fn error_of(players: Vec<Player>, model: &QueueModel) -> String {
    solve(&pool_of(players), model, &quick())
        .expect_err("malformed input must be refused")
        .to_string()
}

#[test]
fn nan_and_negative_values_name_player_and_field() {
    let m = QueueModel::default();
    let mut p = six();
    p[2].skill = f64::NAN;
    let e = error_of(p, &m);
    assert!(
        e.contains("\"p3\"") && e.contains("skill") && e.contains("NaN"),
        "{e}"
    );

    let mut p = six();
    p[1].skill = -5.0;
    let e = error_of(p, &m);
    assert!(
        e.contains("\"p2\"") && e.contains("`skill`") && e.contains("negative"),
        "{e}"
    );

    let mut p = six();
    p[4].latencies.insert("eu-west".into(), -1.0);
    let e = error_of(p, &m);
    assert!(
        e.contains("\"p5\"") && e.contains("latencies") && e.contains("eu-west"),
        "{e}"
    );

    let mut p = six();
    p[0].peer_pings.insert("p2".into(), f64::INFINITY);
    let e = error_of(p, &m);
    assert!(e.contains("\"p1\"") && e.contains("peer_pings"), "{e}");

    let mut p = six();
    p[0].side = Some(1.5);
    let e = error_of(p, &m);
    assert!(e.contains("\"p1\"") && e.contains("side"), "{e}");

    let mut p = six();
    p[3].skill_sigma = Some(-1.0);
    let e = error_of(p, &m);
    assert!(e.contains("\"p4\"") && e.contains("skill_sigma"), "{e}");
}

#[test]
fn duplicate_ids_and_unknown_roles_are_errors() {
    let mut p = six();
    p[5].id = "p1".into();
    let e = error_of(p, &QueueModel::default());
    assert!(e.contains("\"p1\"") && e.contains("duplicate"), "{e}");

    let model = QueueModel {
        roles: vec!["tank".into(), "healer".into()],
        ..QueueModel::default()
    };
    let mut p = six();
    p[2].roles = vec!["sniper".into()];
    let e = error_of(p, &model);
    assert!(
        e.contains("\"p3\"") && e.contains("roles") && e.contains("sniper"),
        "{e}"
    );

    let mut p = six();
    p[2].roles = vec!["tank".into()];
    let e = error_of(p, &QueueModel::default());
    assert!(e.contains("no roles"), "{e}");
}

#[test]
fn inconsistent_party_is_an_error() {
    let mut p = six();
    let t0 = "2026-11-21T19:58:00Z".parse().unwrap();
    let t1 = "2026-11-21T19:59:00Z".parse().unwrap();
    p[0].party = Some("g".into());
    p[0].enqueued_at = Some(t0);
    p[1].party = Some("g".into());
    p[1].enqueued_at = Some(t1);
    let e = error_of(p, &QueueModel::default());
    assert!(
        e.contains("\"p2\"") && e.contains("enqueued_at") && e.contains("party"),
        "{e}"
    );
}

#[test]
fn oversized_party_is_rejected_and_the_round_still_solved() {
    let mut p: Vec<Player> = (1..=10).map(|i| player(&format!("p{i}"), 1500.0)).collect();
    for x in &mut p[6..10] {
        x.party = Some("big".into());
    }
    let out = solve(&pool_of(p), &QueueModel::default(), &quick()).unwrap();
    assert_eq!(out.rejected.len(), 4);
    assert!(out.rejected[0].reason.contains("more than the team size 3"));
    assert_eq!(out.matches.len(), 1);
    assert!(out.unmatched.is_empty());
}

#[test]
fn strict_roles_reject_parties_that_cannot_fill_distinct_roles() {
    let model = QueueModel {
        roles: vec!["tank".into(), "healer".into(), "dps".into()],
        role_mode: RoleMode::Strict,
        ..QueueModel::default()
    };
    let mut p = six();
    for x in &mut p[..2] {
        x.party = Some("tanks".into());
        x.roles = vec!["tank".into()];
    }
    let out = solve(&pool_of(p), &model, &quick()).unwrap();
    assert_eq!(out.rejected.len(), 2);
    assert!(out.rejected[0].reason.contains("distinct roles"));
    assert_eq!(out.unmatched.len(), 4);
}

#[test]
fn bad_model_values_are_refused_with_the_key() {
    let mut model = QueueModel::default();
    model.ping.bad_ms = 10.0;
    let e = error_of(six(), &model);
    assert!(e.contains("ping.bad_ms"), "{e}");
}

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_matchmaker"))
}

/// Run the command and fail the test with its stderr unless it exits 0.
fn succeeded(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn optimize_prints_the_contract_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pool.json");
    std::fs::write(
        &path,
        r#"{ "queue": "ranked_3v3", "now": "2026-11-21T20:00:00Z",
  "players": [
    { "id": "p1", "party": "g1", "skill": 1500.0, "enqueued_at": "2026-11-21T19:58:00Z",
      "latencies": { "eu-west": 30, "us-east": 110 }, "peer_pings": { "p2": 45 },
      "side": 0.8 },
    { "id": "p2", "party": "g1", "skill": 1510.0, "enqueued_at": "2026-11-21T19:58:00Z",
      "latencies": { "eu-west": 35, "us-east": 100 } },
    { "id": "p3", "skill": 1490.0, "latencies": { "eu-west": 20 } },
    { "id": "p4", "skill": 1505.0, "latencies": { "eu-west": 25 } },
    { "id": "p5", "skill": 1495.0 },
    { "id": "p6", "skill": 1502.0 },
    { "id": "p7", "skill": 1400.0 }
  ],
  "history": [ { "teams": [["p1","p2","p3"],["p4","p5","p6"]], "at": "2026-11-21T19:40:00Z" } ] }"#,
    )
    .unwrap();
    let out = succeeded(cli().args(["optimize", "--pool"]).arg(&path).args([
        "--restarts",
        "2",
        "--seed",
        "3",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &v["matches"][0];
    let teams: Vec<Vec<String>> = serde_json::from_value(m["teams"].clone()).unwrap();
    assert_eq!(teams.len(), 2);
    let team_of = |teams: &[Vec<String>], id: &str| {
        teams
            .iter()
            .position(|t| t.iter().any(|x| x == id))
            .unwrap_or_else(|| panic!("{id} not in {teams:?}"))
    };
    assert_eq!(
        team_of(&teams, "p1"),
        team_of(&teams, "p2"),
        "party g1 split"
    );
    // the only side preference (p1's 0.8) is met: p1's team plays on side 1
    assert_eq!(team_of(&teams, "p1"), 1, "{teams:?}");
    // All six met in the previous match: a pair costs 1 in the same relation again,
    // 0.7 in the swapped one; the factor is 1 - the mean cost of the 15 pairs (1 with
    // the history ignored).
    let before = [["p1", "p2", "p3"], ["p4", "p5", "p6"]].map(|t| t.map(String::from).to_vec());
    let ids = ["p1", "p2", "p3", "p4", "p5", "p6"];
    let mut cost = 0.0;
    for (i, a) in ids.iter().enumerate() {
        for b in &ids[i + 1..] {
            let was = team_of(&before, a) == team_of(&before, b);
            let is = team_of(&teams, a) == team_of(&teams, b);
            cost += if was == is { 1.0 } else { 0.7 };
        }
    }
    let variation = m["factors"]["opponent_variation"].as_f64().unwrap();
    assert!(
        (variation - (1.0 - cost / 15.0)).abs() < 1e-6,
        "opponent_variation {variation} for {teams:?} after {before:?}"
    );
    assert!(m["score"].as_f64().unwrap() > 0.0);
    for f in [
        "equal_teams",
        "equal_players",
        "premades",
        "enemy_ping",
        "opponent_variation",
        "two_hosts",
    ] {
        let x = m["factors"][f].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&x), "{f} = {x}");
    }
    assert!(m["hosts"].is_array());
    assert_eq!(v["unmatched"], serde_json::json!(["p7"]));
    assert_eq!(v["rejected"], serde_json::json!([]));
    assert_eq!(v["stats"]["strategy"], "default");
    assert_eq!(v["stats"]["stop_reason"], "restart_budget");
    // humantime durations
    assert!(v["stats"]["elapsed"].as_str().unwrap().ends_with('s'));
    assert!(v["stats"]["moves_evaluated"].as_u64().unwrap() > 0);
}

#[test]
fn optimize_fails_on_malformed_input_naming_player_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pool.json");
    std::fs::write(&path, r#"{ "players": [ { "id": "a", "skill": -3 } ] }"#).unwrap();
    let out = cli()
        .args(["optimize", "--pool"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"a\"") && err.contains("skill"), "{err}");

    std::fs::write(&path, r#"{ "players": [ { "id": "a", "skill": 1 }, "#).unwrap();
    let out = cli()
        .args(["optimize", "--pool"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("parsing pool file"));
}

#[test]
fn optimize_reads_a_queue_from_a_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let pool = dir.path().join("pool.json");
    let players: Vec<_> = (1..=5)
        .map(|i| serde_json::json!({ "id": format!("p{i}"), "skill": 1500 + i }))
        .collect();
    std::fs::write(&pool, serde_json::json!({ "players": players }).to_string()).unwrap();
    let config = dir.path().join("mm.toml");
    std::fs::write(
        &config,
        "[queues.duel]\nteams = 2\nteam_size = 1\nnetwork = \"dedicated\"\n[queues.duel.round]\nevery = \"2m\"\n[queues.duel.weights]\nequal_teams = 1.0\n[queues.duel.tickets]\nregions = [\"eu\"]\n",
    )
    .unwrap();
    let out = succeeded(
        cli()
            .args([
                "optimize",
                "--queue",
                "duel",
                "--strategy",
                "chunk",
                "--pool",
            ])
            .arg(&pool)
            .arg("--config")
            .arg(&config),
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["matches"].as_array().unwrap().len(), 2);
    assert_eq!(v["unmatched"].as_array().unwrap().len(), 1);
    assert_eq!(v["stats"]["strategy"], "chunk");

    let out = cli()
        .args(["optimize", "--queue", "nope", "--pool"])
        .arg(&pool)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown queue"));
}

#[test]
fn every_strategy_solves_through_the_public_api() {
    let p: Vec<Player> = (1..=24)
        .map(|i| player(&format!("p{i}"), 1000.0 + 37.0 * i as f64))
        .collect();
    for s in Strategy::ALL {
        let out = solve(
            &pool_of(p.clone()),
            &QueueModel::default(),
            &SolveOptions {
                strategy: s,
                ..quick()
            },
        )
        .unwrap();
        assert_eq!(out.matches.len(), 4, "{s:?}");
        assert!(out.score > 0.0 && out.score <= 1.0);
        assert_eq!(out.stats.strategy, s.name());
    }
}

/// `bench` breaks the 1 s against long-run gap down by pool, and the per-pool scores
/// are the ones the mean line averages; with `--seeds`, the same over solver seeds.
#[test]
fn bench_prints_the_gap_per_pool() {
    let out = succeeded(
        Command::new(env!("CARGO_BIN_EXE_matchmaker-lab"))
            .args(["bench", "--players", "60", "--pools", "2"])
            .args([
                "--budgets",
                "10ms,20ms",
                "--baseline",
                "10ms",
                "--long-factor",
                "2",
                "--seeds",
                "2",
            ]),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let pair = |line: &str, after: &str| -> (f64, f64) {
        let rest = &line[line.find(after).unwrap_or_else(|| panic!("{line}")) + after.len()..];
        let mut it = rest.split([' ', ',', ';']).filter(|s| !s.is_empty());
        let a = it.next().unwrap().parse().unwrap();
        assert_eq!(it.next(), Some("vs"), "{line}");
        (a, it.next().unwrap().parse().unwrap())
    };
    let mean = text
        .lines()
        .find(|l| l.contains("default@20ms vs default@40ms:"))
        .unwrap_or_else(|| panic!("no gap line in:\n{text}"));
    let (short, long) = pair(mean, "default@40ms: ");
    let pools: Vec<&str> = text.lines().filter(|l| l.contains("pool seed ")).collect();
    assert_eq!(pools.len(), 2, "{text}");
    let (mut s, mut l) = (0.0, 0.0);
    for (k, line) in pools.iter().enumerate() {
        assert!(line.contains(&format!("pool seed {}:", k + 1)), "{line}");
        let (a, b) = pair(line, ": ");
        s += a / 2.0;
        l += b / 2.0;
        let (h_short, h_long) = pair(line, "matches without a host ");
        assert!(
            h_short >= 0.0 && h_long >= 0.0 && h_short.fract() == 0.0,
            "{line}"
        );
    }
    assert!(
        (s - short).abs() < 2e-5 && (l - long).abs() < 2e-5,
        "{text}"
    );

    // --seeds 2: per pool the mean of two seeds' runs inside their range, and the
    // means line their average
    let means = text
        .lines()
        .find(|l| l.trim_start().starts_with("means "))
        .unwrap_or_else(|| panic!("no means line in:\n{text}"));
    let (short, long) = pair(means, "means ");
    let pools: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("pool ") && !l.contains("pool seed"))
        .collect();
    assert_eq!(pools.len(), 2, "{text}");
    let (mut s, mut l) = (0.0, 0.0);
    for line in &pools {
        let nums: Vec<f64> = line
            .split([' ', '(', ')', '-', ','])
            .filter_map(|w| w.parse().ok())
            .filter(|&x: &f64| x > 0.0 && x < 1.0)
            .collect();
        // mean (lo-hi) vs mean (lo-hi)
        let [a, a_lo, a_hi, b, b_lo, b_hi, ..] = nums[..] else {
            panic!("{line}")
        };
        assert!(a_lo <= a + 1e-5 && a <= a_hi + 1e-5, "{line}");
        assert!(b_lo <= b + 1e-5 && b <= b_hi + 1e-5, "{line}");
        s += a / 2.0;
        l += b / 2.0;
    }
    assert!(
        (s - short).abs() < 2e-5 && (l - long).abs() < 2e-5,
        "{text}"
    );
}
