//! enqueue()'s fast path (`matchmaker_member_ok`) against the rule-by-rule checks it
//! short-cuts (`matchmaker_check_member`): it may only accept what the checks accept, or
//! a bad player would be enqueued without a refusal. Every edge of every rule, and random
//! mutations of realistic players, go through both.

use matchmaker::config::Config;
use matchmaker_population::population::{Population, PopulationSpec};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::support::{fresh_db, publish};

/// One member as enqueue() takes it.
#[derive(Debug, Clone)]
struct Member {
    player_id: Option<String>,
    skill: Option<f64>,
    skill_sigma: Option<f64>,
    latencies: Option<Value>,
    peer_pings: Option<Value>,
    roles: Option<Vec<Option<String>>>,
    side: Option<f64>,
}

/// `SELECT function(q, <m's fields>)` over `queue`'s row.
fn member_call<'q>(
    function: &str,
    queue: &'q str,
    m: &'q Member,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    let sql = format!(
        "SELECT {function}(q, $2, $3, $4, $5, $6, $7, $8) FROM queues q WHERE q.queue = $1"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(queue)
        .bind(&m.player_id)
        .bind(m.skill)
        .bind(m.skill_sigma)
        .bind(&m.latencies)
        .bind(&m.peer_pings)
        .bind(&m.roles)
        .bind(m.side)
}

/// (fast path accepts, the checks accept; else the checks' message).
async fn judge(db: &PgPool, queue: &str, m: &Member) -> (bool, Result<(), String>) {
    let fast: Option<bool> = member_call("matchmaker_member_ok", queue, m)
        .fetch_one(db)
        .await
        .map(|row| sqlx::Row::get(&row, 0))
        .unwrap_or_else(|e| panic!("the fast path never raises: {e} for {m:?}"));
    let checks = member_call("matchmaker_check_member", queue, m)
        .execute(db)
        .await
        .map(|_| ())
        .map_err(|e| match &e {
            sqlx::Error::Database(d) => {
                assert_eq!(d.code().as_deref(), Some("22023"), "{e}");
                d.message().to_string()
            }
            _ => panic!("{e}"),
        });
    (fast.expect("the fast path is never NULL"), checks)
}

async fn setup() -> (crate::support::TestDb, Vec<String>) {
    let db = fresh_db().await;
    let population = Population::realistic();
    let regions = population.region_names();
    let config = Config::from_toml_str(&format!(
        "default_queue = \"open\"\n[queues.roles]\nroles = [\"tank\", \"healer\", \"damage\"]\n\
         [queues.roles.round]\nevery = \"1m\"\n\
         [queues.roles.tickets]\nregions = {regions:?}\n\
         [queues.open]\n[queues.open.round]\nevery = \"1m\"\n"
    ))
    .expect("test config is valid");
    publish(&db.pool, &config, "test").await;
    (db, regions)
}

fn base(regions: &[String]) -> Member {
    let latencies: serde_json::Map<String, Value> = regions
        .iter()
        .enumerate()
        .map(|(k, r)| (r.clone(), json!(20.5 + k as f64 * 30.0)))
        .collect();
    Member {
        player_id: Some("p1".into()),
        skill: Some(1500.0),
        skill_sigma: None,
        latencies: Some(Value::Object(latencies)),
        peer_pings: Some(json!({})),
        roles: Some(vec![]),
        side: None,
    }
}

fn map_of(n: usize, value: Value) -> Value {
    Value::Object((0..n).map(|k| (format!("k{k}"), value.clone())).collect())
}

#[tokio::test]
async fn fast_path_accepts_exactly_what_the_checks_accept_at_every_edge() {
    let (db, regions) = setup().await;
    let b = base(&regions);
    let long = |n: usize, c: char| Some(std::iter::repeat_n(c, n).collect::<String>());
    let mut cases: Vec<(&str, Member)> = vec![("base", b.clone())];
    let mut push = |label: &'static str, f: &dyn Fn(&mut Member)| {
        let mut m = b.clone();
        f(&mut m);
        cases.push((label, m));
    };
    push("id null", &|m| m.player_id = None);
    push("id empty", &|m| m.player_id = Some(String::new()));
    push("id 64", &|m| m.player_id = long(64, 'x'));
    push("id 65", &|m| m.player_id = long(65, 'x'));
    push("id 64 multibyte", &|m| m.player_id = long(64, 'é'));
    push("id 65 multibyte", &|m| m.player_id = long(65, 'é'));
    push("id newline", &|m| m.player_id = Some("a\nb".into()));
    push("id tab", &|m| m.player_id = Some("a\tb".into()));
    push("id del", &|m| m.player_id = Some("a\u{7f}".into()));
    push("id c1 control", &|m| m.player_id = Some("a\u{85}".into()));
    push("id space", &|m| m.player_id = Some("a b".into()));
    push("skill null", &|m| m.skill = None);
    push("skill nan", &|m| m.skill = Some(f64::NAN));
    push("skill inf", &|m| m.skill = Some(f64::INFINITY));
    push("skill -inf", &|m| m.skill = Some(f64::NEG_INFINITY));
    push("skill 1e6", &|m| m.skill = Some(1e6));
    push("skill -1e6", &|m| m.skill = Some(-1e6));
    push("skill above", &|m| m.skill = Some(1_000_000.001));
    push("sigma 0", &|m| m.skill_sigma = Some(0.0));
    push("sigma -0", &|m| m.skill_sigma = Some(-0.0));
    push("sigma negative", &|m| m.skill_sigma = Some(-0.001));
    push("sigma nan", &|m| m.skill_sigma = Some(f64::NAN));
    push("sigma 1e6", &|m| m.skill_sigma = Some(1e6));
    push("sigma above", &|m| m.skill_sigma = Some(1e6 + 1.0));
    push("side 0", &|m| m.side = Some(0.0));
    push("side 1", &|m| m.side = Some(1.0));
    push("side above", &|m| m.side = Some(1.0001));
    push("side below", &|m| m.side = Some(-0.0001));
    push("side nan", &|m| m.side = Some(f64::NAN));
    push("latencies null", &|m| m.latencies = None);
    push("latencies array", &|m| m.latencies = Some(json!([1, 2])));
    push("latencies number", &|m| m.latencies = Some(json!(3)));
    push("latencies empty", &|m| m.latencies = Some(json!({})));
    push("latency unknown region", &|m| {
        m.latencies = Some(json!({"eu-west": 20, "moon": 30}))
    });
    push("latency 0", &|m| m.latencies = Some(json!({"eu-west": 0})));
    push("latency 10000", &|m| {
        m.latencies = Some(json!({"eu-west": 10000}))
    });
    push("latency above", &|m| {
        m.latencies = Some(json!({"eu-west": 10000.0001}))
    });
    push("latency negative", &|m| {
        m.latencies = Some(json!({"eu-west": -0.5}))
    });
    push("latency string", &|m| {
        m.latencies = Some(json!({"eu-west": "20"}))
    });
    push("latency null", &|m| {
        m.latencies = Some(json!({"eu-west": null}))
    });
    push("latency object", &|m| {
        m.latencies = Some(json!({"eu-west": {"a": 1}}))
    });
    push("latency bool", &|m| {
        m.latencies = Some(json!({"eu-west": true}))
    });
    push("latency huge", &|m| {
        m.latencies = Some(json!({"eu-west": 1e300}))
    });
    push("peer_pings null", &|m| m.peer_pings = None);
    push("peer_pings array", &|m| m.peer_pings = Some(json!([])));
    push("peer_pings 100", &|m| {
        m.peer_pings = Some(map_of(100, json!(40)))
    });
    push("peer_pings 101", &|m| {
        m.peer_pings = Some(map_of(101, json!(40)))
    });
    push("peer key empty", &|m| m.peer_pings = Some(json!({"": 40})));
    push("peer key 64", &|m| {
        m.peer_pings = Some(json!({ "x".repeat(64): 40 }))
    });
    push("peer key 65", &|m| {
        m.peer_pings = Some(json!({ "x".repeat(65): 40 }))
    });
    push("peer key 65 multibyte", &|m| {
        m.peer_pings = Some(json!({ "é".repeat(65): 40 }))
    });
    push("peer key 70 with newline", &|m| {
        m.peer_pings = Some(json!({ format!("{}\n{}", "x".repeat(35), "y".repeat(34)): 40 }))
    });
    push("peer key newline", &|m| {
        m.peer_pings = Some(json!({"a\nb": 40}))
    });
    push("peer key control", &|m| {
        m.peer_pings = Some(json!({"a\u{1}": 40}))
    });
    // Keys the fast path leaves to the checks (a backslash in the map's text form); the
    // checks accept them.
    push("peer key with quote", &|m| {
        m.peer_pings = Some(json!({"a\"b": 40}))
    });
    push("peer key with backslash", &|m| {
        m.peer_pings = Some(json!({"a\\b": 40}))
    });
    push("peer key 64 with quotes", &|m| {
        m.peer_pings = Some(json!({ "\"".repeat(64): 40 }))
    });
    push("peer key 65 with quotes", &|m| {
        m.peer_pings = Some(json!({ "\"".repeat(65): 40 }))
    });
    push("peer key del", &|m| {
        m.peer_pings = Some(json!({"a\u{7f}": 40}))
    });
    push("peer key c1 control", &|m| {
        m.peer_pings = Some(json!({"a\u{85}": 40}))
    });
    push("peer ping negative", &|m| {
        m.peer_pings = Some(json!({"p2": -1}))
    });
    push("peer ping string", &|m| {
        m.peer_pings = Some(json!({"p2": "x"}))
    });
    push("roles null", &|m| m.roles = None);
    push("roles known", &|m| {
        m.roles = Some(vec![Some("tank".into()), Some("healer".into())])
    });
    push("roles all", &|m| {
        m.roles = Some(
            ["tank", "healer", "damage"]
                .map(|r| Some(r.into()))
                .to_vec(),
        )
    });
    push("role unknown", &|m| {
        m.roles = Some(vec![Some("mage".into())])
    });
    push("role null", &|m| m.roles = Some(vec![None]));
    push("role null among known", &|m| {
        m.roles = Some(vec![Some("tank".into()), None])
    });
    push("role twice", &|m| {
        m.roles = Some(vec![Some("tank".into()), Some("tank".into())])
    });
    push("17 roles", &|m| {
        m.roles = Some(vec![Some("tank".into()); 17])
    });

    // Valid, but left to the checks by the fast path (it may refuse more, never accept more).
    let slow_only = [
        "peer key with quote",
        "peer key with backslash",
        "peer key 64 with quotes",
    ];
    let mut accepted = 0;
    for (label, m) in &cases {
        for queue in ["roles", "open"] {
            let (fast, checks) = judge(&db.pool, queue, m).await;
            if slow_only.contains(label) {
                assert!(
                    !fast && checks.is_ok(),
                    "{label} in queue {queue}: fast path {fast}, checks {checks:?}"
                );
                continue;
            }
            assert_eq!(
                fast,
                checks.is_ok(),
                "{label} in queue {queue}: fast path {fast}, checks {checks:?}"
            );
            accepted += usize::from(fast);
        }
    }
    // The edges on both sides of each rule: plenty accepted, plenty refused.
    let refused = 2 * cases.len() - accepted;
    assert!(
        accepted >= 30 && refused >= 60,
        "{accepted} accepted, {refused} refused"
    );

    // The open queue takes any region name, at most 32.
    for (n, ok) in [(32, true), (33, false)] {
        let m = Member {
            latencies: Some(map_of(n, json!(50))),
            ..b.clone()
        };
        assert_eq!(judge(&db.pool, "open", &m).await.0, ok, "{n} latencies");
        assert_eq!(judge(&db.pool, "open", &m).await.1.is_ok(), ok);
    }
}

#[tokio::test]
async fn fast_path_agrees_with_the_checks_on_mutated_realistic_players() {
    let (db, _) = setup().await;
    let players = Population::realistic()
        .generate_pool(
            &PopulationSpec {
                players: 150,
                roles: vec!["tank".into(), "healer".into(), "damage".into()],
                side_share: 0.5,
                ..PopulationSpec::default()
            },
            3,
        )
        .players;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
    let mut agreed = [0usize; 2];
    for p in &players {
        let mut m = Member {
            player_id: Some(p.id.clone()),
            skill: Some(p.skill),
            skill_sigma: p.skill_sigma,
            latencies: Some(serde_json::to_value(&p.latencies).unwrap()),
            peer_pings: Some(serde_json::to_value(&p.peer_pings).unwrap()),
            roles: Some(p.roles.iter().cloned().map(Some).collect()),
            side: p.side,
        };
        // Half of them get one field pushed near or past a limit.
        match rng.random_range(0..12) {
            0 => m.skill = Some(rng.random_range(-1.2e6..1.2e6)),
            1 => m.skill_sigma = Some(rng.random_range(-10.0..10.0)),
            2 => m.side = Some(rng.random_range(-0.2..1.2)),
            3 => {
                if let Some(Value::Object(map)) = &mut m.latencies
                    && let Some(v) = map.values_mut().next()
                {
                    *v = json!(rng.random_range(-100.0..10_100.0));
                }
            }
            4 => {
                let n = rng.random_range(95..105);
                m.peer_pings = Some(map_of(n, json!(rng.random_range(0.0..20.0))));
            }
            5 => {
                let n = rng.random_range(60..70);
                m.player_id = Some("z".repeat(n));
            }
            _ => {}
        }
        for queue in ["roles", "open"] {
            let (fast, checks) = judge(&db.pool, queue, &m).await;
            assert_eq!(fast, checks.is_ok(), "{m:?} in {queue}: {checks:?}");
            agreed[usize::from(fast)] += 1;
        }
    }
    assert!(agreed[0] > 20 && agreed[1] > 100, "{agreed:?}");
}

/// A NULL among several roles, on fresh connections (whose first executions of a prepared
/// statement get custom plans, in which the planner folds the fast path's expressions for
/// the bound values): the fast path says no, and enqueue() refuses with the contract's
/// readable error, never "null value not allowed for object key" (whichever pooled
/// connection runs the call).
#[tokio::test]
async fn a_null_role_is_refused_readably_on_a_fresh_connection() {
    let (db, regions) = setup().await;
    let roles = vec![Some("tank".to_string()), None];
    for _ in 0..3 {
        let pool = db.new_pool(1).await;
        let m = Member {
            roles: Some(roles.clone()),
            ..base(&regions)
        };
        let (fast, checks) = judge(&pool, "roles", &m).await;
        assert!(!fast && checks.is_err(), "fast {fast}, checks {checks:?}");
        // As a game backend would send it: a client login, its own fresh connection.
        let (_, client) = crate::support::client_login(&db, 1).await;
        let err = sqlx::query("SELECT enqueue('roles', 'p9', 1500, '{}', '{}', $1)")
            .bind(&roles)
            .execute(&client)
            .await
            .expect_err("a NULL role is refused");
        client.close().await;
        let (code, message) = crate::support::db_error(&err);
        assert_eq!(code, "22023", "{message}");
        assert!(message.contains("roles"), "{message}");
        pool.close().await;
    }
}
