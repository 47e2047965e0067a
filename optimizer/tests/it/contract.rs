//! The optimizer's input contract: validation errors name the player and field, and
//! unusable players are rejected while the round is still solved. (The `matchmaker
//! optimize` command line is tested with the daemon's binary, in the root crate.)

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
