//! `matchmaker optimize`: the optimizer's contract on the command line, a pool file in,
//! JSON out, malformed input refused naming the player and field.

use std::process::Command;

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

/// Run the command, which must fail; its stderr.
fn failed(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
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
    let err = failed(cli().args(["optimize", "--pool"]).arg(&path));
    assert!(err.contains("\"a\"") && err.contains("skill"), "{err}");

    std::fs::write(&path, r#"{ "players": [ { "id": "a", "skill": 1 }, "#).unwrap();
    let err = failed(cli().args(["optimize", "--pool"]).arg(&path));
    assert!(err.contains("parsing pool file"), "{err}");
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

    let err = failed(
        cli()
            .args(["optimize", "--queue", "nope", "--pool"])
            .arg(&pool)
            .arg("--config")
            .arg(&config),
    );
    assert!(err.contains("unknown queue"), "{err}");
}

/// Big formats on the command line: a 16v16 queue and a battle royale of 25 squads of
/// 4, from one config, on a pool with parties of two.
#[test]
fn optimize_forms_big_lobbies_from_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("big.toml");
    std::fs::write(
        &config,
        "default_queue = \"conquest\"\n\
         [queues.conquest]\nteams = 2\nteam_size = 16\nnetwork = \"dedicated\"\n\
         [queues.conquest.tickets]\nregions = [\"eu\", \"us\"]\n\
         [queues.royale]\nteams = 25\nteam_size = 4\nnetwork = \"dedicated\"\n\
         [queues.royale.tickets]\nregions = [\"eu\", \"us\"]\n",
    )
    .unwrap();
    // 230 players, one in four in a party of two, every other one nearer "us"
    let players: Vec<serde_json::Value> = (0..230)
        .map(|i| {
            let mut p = serde_json::json!({
                "id": format!("p{i:03}"),
                "skill": 1000.0 + ((i * 37) % 1000) as f64,
                "latencies": { "eu": 20 + (i % 2) * 80, "us": 100 - (i % 2) * 80 },
            });
            if i % 8 < 2 {
                p["party"] = serde_json::json!(format!("g{}", i / 8));
            }
            p
        })
        .collect();
    let pool = dir.path().join("pool.json");
    std::fs::write(&pool, serde_json::json!({ "players": players }).to_string()).unwrap();
    for (queue, teams, size) in [("conquest", 2, 16), ("royale", 25, 4)] {
        let out = succeeded(
            cli()
                .args([
                    "optimize",
                    "--queue",
                    queue,
                    "--restarts",
                    "1",
                    "--seed",
                    "3",
                    "--pool",
                ])
                .arg(&pool)
                .arg("--config")
                .arg(&config),
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let matches = v["matches"].as_array().unwrap();
        assert_eq!(matches.len(), 230 / (teams * size), "{queue}");
        assert_eq!(v["stats"]["strategy"], "lobby");
        for m in matches {
            let t: Vec<Vec<String>> = serde_json::from_value(m["teams"].clone()).unwrap();
            assert_eq!(t.len(), teams);
            assert!(
                t.iter().all(|t| t.len() == size),
                "{queue}: a team is not full"
            );
            // parties of two (p..0 with p..1 of each group of eight) share a team
            for team in &t {
                for id in team {
                    let i: usize = id[1..].parse().unwrap();
                    if i.is_multiple_of(8) {
                        assert!(team.contains(&format!("p{:03}", i + 1)), "{queue}: {id}");
                    }
                }
            }
            assert!(m["region"].is_string());
        }
    }
}
