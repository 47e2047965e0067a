//! Matches on real servers, as a game server's login drives them: servers announce
//! themselves with `server_ready`, a queue with `[queues.NAME.servers] required = true`
//! forms no more matches than it has ready servers, each match names its own server and
//! the server's login hears it; a server is used again only once it names its ended
//! match, and a server silent past the ttl is not used until it announces again.

use std::collections::BTreeSet;

use sqlx::PgPool;

use crate::support::*;

const QUEUES: &str = r#"
[queues.d]
network = "dedicated"
[queues.d.tickets]
regions = ["eu", "us"]
[queues.d.round]
every = "10s"
restarts = 2
seed = 5
[queues.d.servers]
required = true
ttl = "30s"
"#;

/// `server_ready` as a server login: its answer, or the refusal's (SQLSTATE, message).
async fn ready(
    server: &PgPool,
    id: &str,
    region: &str,
    address: &str,
    ended: Option<i64>,
) -> Result<String, (String, String)> {
    sqlx::query_scalar("SELECT server_ready($1, $2, $3, $4)")
        .bind(id)
        .bind(region)
        .bind(address)
        .bind(ended)
        .fetch_one(server)
        .await
        .map_err(|e| db_error(&e))
}

/// Six players close to eu and far from us: one match's worth.
async fn six_near_eu(client: &Client, prefix: &str) {
    for i in 0..6 {
        client
            .enqueue("d", &format!("{prefix}{i}"), 1400.0 + 30.0 * f64::from(i))
            .latencies(serde_json::json!({"eu": 20 + i, "us": 400}))
            .send()
            .await
            .unwrap();
    }
}

/// (match_id, server_id, server_address) of a round's matches.
async fn placed(db: &PgPool, round_id: i64) -> Vec<(i64, Option<String>, Option<String>)> {
    sqlx::query_as(
        "SELECT match_id, server_id, server_address FROM matches
          WHERE round_id = $1 ORDER BY match_id",
    )
    .bind(round_id)
    .fetch_all(db)
    .await
    .unwrap()
}

/// The queued players' (left_over, reason) as their login reads them.
async fn left_over(client: &PgPool) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT left_over, reason FROM player_status
          WHERE status = 'queued' ORDER BY player_id",
    )
    .fetch_all(client)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_round_forms_no_more_matches_than_ready_servers_and_each_names_its_own() {
    let mut d = Daemon::start(QUEUES, "servers").await;
    let client = Client::login(&d.tdb, 2).await;
    let (_, fleet) = server_login(&d.tdb, 2).await;
    let (mut heard, _) = listen_to(&fleet, "d").await;
    for s in ["s1", "s2", "s3"] {
        assert_eq!(
            ready(&fleet, s, "eu", &format!("10.0.0.{}:7777", &s[1..]), None).await,
            Ok("ready".into())
        );
    }
    // Announcing again changes nothing but the time it was heard from.
    assert_eq!(
        ready(&fleet, "s1", "eu", "10.0.0.1:7777", None).await,
        Ok("ready".into())
    );
    for k in 0..4 {
        six_near_eu(&client, &format!("p{k}_")).await;
    }

    let round = d.round_after("d", secs(10)).await;
    assert_eq!(round.matches, 3, "three ready servers, three matches");
    let matches = placed(d.db(), round.round_id).await;
    let servers: BTreeSet<String> = matches.iter().filter_map(|m| m.1.clone()).collect();
    assert_eq!(servers.len(), 3, "each match its own server: {matches:?}");
    for (_, id, address) in &matches {
        let id = id.as_deref().unwrap();
        assert_eq!(
            address.as_deref(),
            Some(format!("10.0.0.{}:7777", &id[1..]).as_str())
        );
    }
    let no_server: i32 =
        sqlx::query_scalar("SELECT no_server_matches FROM rounds WHERE round_id = $1")
            .bind(round.round_id)
            .fetch_one(d.db())
            .await
            .unwrap();
    assert_eq!(no_server, 1);
    let waiting = left_over(&client.pool).await;
    assert_eq!(waiting.len(), 6);
    for (kind, reason) in &waiting {
        assert_eq!(kind, "no_server");
        assert!(
            reason.contains("no ready server in region eu: 3 ready, 4 matches"),
            "{reason}"
        );
    }
    // The players read where they play; the server's login hears each allocation with
    // its roster.
    let (server_id, address): (Option<String>, Option<String>) = sqlx::query_as(
        "SELECT server_id, server_address FROM match_details WHERE match_id = $1 LIMIT 1",
    )
    .bind(matches[0].0)
    .fetch_one(&client.pool)
    .await
    .unwrap();
    assert_eq!(
        (server_id, address),
        (matches[0].1.clone(), matches[0].2.clone())
    );
    let mut told = BTreeSet::new();
    for _ in 0..3 {
        let note = time_limit::within("the server's allocation", heard.recv())
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(note.payload()).unwrap();
        assert_eq!(v["event"], "match");
        assert_eq!(v["players"].as_array().unwrap().len(), 6);
        told.insert(v["server_id"].as_str().unwrap().to_string());
        assert!(v["server_address"].as_str().unwrap().starts_with("10.0.0."));
    }
    assert_eq!(told, servers);
    let roster: i64 = sqlx::query_scalar("SELECT count(*) FROM match_details")
        .fetch_one(&fleet)
        .await
        .unwrap();
    assert_eq!(
        roster, 18,
        "a server login reads the rosters of its matches"
    );

    // Every server hosts: the next round places nobody.
    let round = d.round_after("d", secs(10)).await;
    assert_eq!(round.matches, 0);
    assert_eq!(left_over(&client.pool).await.len(), 6);
    // A periodic announcement does not free a server that hosts a match...
    let (s1_match,): (i64,) = sqlx::query_as("SELECT match_id FROM matches WHERE server_id = 's1'")
        .fetch_one(d.db())
        .await
        .unwrap();
    assert_eq!(
        ready(&fleet, "s1", "eu", "10.0.0.1:7777", None).await,
        Ok("allocated".into())
    );
    assert_eq!(
        ready(&fleet, "s1", "eu", "10.0.0.1:7777", Some(s1_match + 1000)).await,
        Ok("allocated".into())
    );
    let round = d.round_after("d", secs(10)).await;
    assert_eq!(round.matches, 0);
    // ... naming its ended match does: the same server hosts the next one.
    assert_eq!(
        ready(&fleet, "s1", "eu", "10.0.0.1:7777", Some(s1_match)).await,
        Ok("ready".into())
    );
    let round = d.round_after("d", secs(10)).await;
    assert_eq!(round.matches, 1);
    let next = placed(d.db(), round.round_id).await;
    assert_eq!(next[0].1.as_deref(), Some("s1"));
    assert!(left_over(&client.pool).await.is_empty());
    let hosting: Option<i64> =
        sqlx::query_scalar("SELECT match_id FROM my_servers WHERE server_id = 's1'")
            .fetch_one(&fleet)
            .await
            .unwrap();
    assert_eq!(hosting, Some(next[0].0));

    // The result of a placed match is its server's login's to report, not another
    // server login's; a server withdrawn while hosting leaves its match as it was.
    let (_, stranger) = server_login(&d.tdb, 1).await;
    let report = |db: &PgPool, m: i64| {
        let db = db.clone();
        async move {
            sqlx::query_scalar::<_, String>("SELECT report_result($1, '{1,2}')")
                .bind(m)
                .fetch_one(&db)
                .await
                .map_err(|e| db_error(&e))
        }
    };
    assert_eq!(
        report(&stranger, s1_match).await,
        Err((
            "22023".into(),
            format!("match_id = {s1_match}: no such match")
        ))
    );
    assert_eq!(report(&fleet, s1_match).await, Ok("recorded".into()));
    let gone: bool = sqlx::query_scalar("SELECT server_gone('s2')")
        .fetch_one(&fleet)
        .await
        .unwrap();
    assert!(gone);
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM matches WHERE server_id = 's2'")
        .fetch_one(d.db())
        .await
        .unwrap();
    assert_eq!(kept, 1, "the match keeps its server's id and address");

    // The operators' view: the report counts the placed matches and those that waited.
    let window = matchmaker::db::report::ReportWindow {
        queue: Some("d".into()),
        from: chrono::Utc::now() - chrono::Duration::hours(1),
        to: chrono::Utc::now() + chrono::Duration::hours(1),
    };
    let report = matchmaker::db::report::read_report(d.db(), &window, chrono::Utc::now())
        .await
        .unwrap();
    let stats = &report.servers[0];
    assert_eq!((stats.placed, stats.servers), (4, 3));
    assert_eq!(
        stats.waited_for_server, 3,
        "one match waited in three rounds"
    );
    let fleet = matchmaker::db::servers::fleet(d.db()).await.unwrap();
    assert_eq!(fleet.len(), 1);
    assert_eq!((fleet[0].ready, fleet[0].allocated), (0, 2));
}

#[tokio::test]
async fn a_server_silent_past_the_ttl_or_gone_is_not_used_until_it_announces_again() {
    let mut d = Daemon::start(QUEUES, "servers-ttl").await;
    let client = Client::login(&d.tdb, 2).await;
    let (_, fleet) = server_login(&d.tdb, 2).await;
    assert_eq!(
        ready(&fleet, "old", "eu", "10.0.0.9:7777", None).await,
        Ok("ready".into())
    );
    assert_eq!(
        ready(&fleet, "bye", "eu", "10.0.0.8:7777", None).await,
        Ok("ready".into())
    );
    // Its last announcement is older than the queue's ttl (30s): a crashed server.
    sqlx::query(
        "UPDATE servers SET announced_at = now() - interval '31 seconds' WHERE server_id = 'old'",
    )
    .execute(d.db())
    .await
    .unwrap();
    let gone: bool = sqlx::query_scalar("SELECT server_gone('bye')")
        .fetch_one(&fleet)
        .await
        .unwrap();
    assert!(gone);
    let again: bool = sqlx::query_scalar("SELECT server_gone('bye')")
        .fetch_one(&fleet)
        .await
        .unwrap();
    assert!(!again, "a server withdrawn twice is known once");
    six_near_eu(&client, "t").await;
    let round = d.round_after("d", secs(10)).await;
    assert_eq!(round.matches, 0, "no live server, no match");
    let waiting = left_over(&client.pool).await;
    assert!(
        waiting
            .iter()
            .all(|(k, r)| k == "no_server" && r.contains("0 ready")),
        "{waiting:?}"
    );
    assert_eq!(
        ready(&fleet, "old", "eu", "10.0.0.9:7777", None).await,
        Ok("ready".into())
    );
    let round = d.round_after("d", secs(10)).await;
    assert_eq!(round.matches, 1);
    assert_eq!(
        placed(d.db(), round.round_id).await[0].1.as_deref(),
        Some("old")
    );
}

#[tokio::test]
async fn a_full_region_sends_a_match_to_a_neighbour_within_its_players_pings() {
    let mut d = Daemon::start(QUEUES, "servers-move").await;
    let client = Client::login(&d.tdb, 2).await;
    let (_, fleet) = server_login(&d.tdb, 2).await;
    ready(&fleet, "eu1", "eu", "10.0.1.1:7777", None)
        .await
        .unwrap();
    ready(&fleet, "us1", "us", "10.0.2.1:7777", None)
        .await
        .unwrap();
    // Twelve players best in eu, us within reach (90 ms).
    for i in 0..12 {
        client
            .enqueue("d", &format!("m{i:02}"), 1400.0 + 10.0 * f64::from(i))
            .latencies(serde_json::json!({"eu": 20, "us": 90}))
            .send()
            .await
            .unwrap();
    }
    let round = d.round_after("d", secs(10)).await;
    assert_eq!(round.matches, 2);
    let regions: Vec<(String, String)> =
        sqlx::query_as("SELECT region, server_id FROM matches WHERE round_id = $1 ORDER BY region")
            .bind(round.round_id)
            .fetch_all(d.db())
            .await
            .unwrap();
    assert_eq!(
        regions,
        vec![("eu".into(), "eu1".into()), ("us".into(), "us1".into())]
    );
}

#[tokio::test]
async fn a_cancelled_ready_check_gives_its_server_back() {
    let config = format!("{QUEUES}[queues.d.ready_check]\ntimeout = \"30s\"\n");
    let mut d = Daemon::start(&config, "servers-rc").await;
    let client = Client::login(&d.tdb, 2).await;
    let (_, fleet) = server_login(&d.tdb, 2).await;
    ready(&fleet, "s1", "eu", "10.0.0.1:7777", None)
        .await
        .unwrap();
    let (mut heard, _) = listen_to(&fleet, "d").await;
    six_near_eu(&client, "c").await;
    let round = d.round_after("d", secs(10)).await;
    assert_eq!(round.matches, 1);
    let m = placed(d.db(), round.round_id).await[0].0;
    let note = time_limit::within("the ready check", heard.recv())
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(note.payload()).unwrap();
    assert_eq!(
        (v["event"].as_str(), v["server_id"].as_str()),
        (Some("ready_check"), Some("s1"))
    );
    client.decline("c0", m).await.unwrap();
    d.step("d").await;
    let note = time_limit::within("the cancellation", heard.recv())
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(note.payload()).unwrap();
    assert_eq!(v["event"], "cancelled");
    assert_eq!(v["server_id"], "s1");
    assert_eq!(v["match_id"], m);
    let status: String = sqlx::query_scalar("SELECT status FROM my_servers WHERE server_id = 's1'")
        .fetch_one(&fleet)
        .await
        .unwrap();
    assert_eq!(status, "ready", "the server never hosted: it is free again");
}

#[tokio::test]
async fn server_calls_refuse_bad_input_and_belong_to_the_server_role() {
    let d = Daemon::start(QUEUES, "servers-refuse").await;
    let client = Client::login(&d.tdb, 2).await;
    let (_, fleet) = server_login(&d.tdb, 2).await;
    let refused = |field: &str, value: &str, rule: &str| {
        Err::<String, _>(("22023".to_string(), format!("{field} = {value}: {rule}")))
    };
    assert_eq!(
        ready(&fleet, "s1", "mars", "10.0.0.1:1", None).await,
        refused(
            "region",
            "'mars'",
            "is not a region of any active dedicated-server queue (eu, us)"
        )
    );
    assert_eq!(
        ready(&fleet, "", "eu", "10.0.0.1:1", None).await,
        refused("server_id", "''", "is required (1-64 characters)")
    );
    assert_eq!(
        ready(&fleet, "s1", "eu", "", None).await,
        refused(
            "address",
            "''",
            "is required: 1-255 characters, no control characters"
        )
    );
    let (code, message) = ready(&fleet, "s1", "eu", "a\nb", None).await.unwrap_err();
    assert_eq!(code, "22023");
    assert!(message.starts_with("address = ") && message.ends_with("no control characters"));
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM servers")
        .fetch_one(d.db())
        .await
        .unwrap();
    assert_eq!(rows, 0, "every refusal wrote nothing");
    // A client login may not announce servers, nor read the fleet.
    let (code, _) = ready(&client.pool, "s1", "eu", "10.0.0.1:1", None)
        .await
        .unwrap_err();
    assert_eq!(code, "42501");
    let read = sqlx::query("SELECT * FROM servers")
        .execute(&client.pool)
        .await;
    assert_eq!(db_error(&read.unwrap_err()).0, "42501");
    // Server ids belong to their login: another login's "s1" is another server.
    let (_, other) = server_login(&d.tdb, 1).await;
    ready(&fleet, "s1", "eu", "10.0.0.1:1", None).await.unwrap();
    ready(&other, "s1", "us", "10.0.0.2:1", None).await.unwrap();
    let gone: bool = sqlx::query_scalar("SELECT server_gone('s1')")
        .fetch_one(&other)
        .await
        .unwrap();
    assert!(gone);
    let mine: Vec<(String, String)> = sqlx::query_as("SELECT server_id, region FROM my_servers")
        .fetch_all(&fleet)
        .await
        .unwrap();
    assert_eq!(mine, vec![("s1".to_string(), "eu".to_string())]);
    let fleet_rows: i64 = sqlx::query_scalar("SELECT sum(ready)::bigint FROM server_fleet")
        .fetch_one(d.db())
        .await
        .unwrap();
    assert_eq!(fleet_rows, 1);
}

/// The fault: a leader killed inside its commit, after it allocated servers and before
/// COMMIT, has allocated nothing; the next round allocates each server to one match and
/// writes no match without a server.
#[tokio::test]
async fn a_leader_killed_between_allocation_and_commit_allocates_nothing() {
    let tdb = fresh_db().await;
    let config =
        matchmaker::config::Config::from_toml_str(&QUEUES.replace("queues.d", "queues.q")).unwrap();
    publish(&tdb.pool, &config, "fault").await;
    let q = std::sync::Arc::new(config.queues["q"].clone());
    let client = Client::login(&tdb, 2).await;
    let (_, fleet) = server_login(&tdb, 2).await;
    for s in ["s1", "s2"] {
        ready(&fleet, s, "eu", "10.0.0.1:7777", None).await.unwrap();
    }
    for i in 0..12 {
        client
            .enqueue("q", &format!("k{i:02}"), 1400.0 + 10.0 * f64::from(i))
            .latencies(serde_json::json!({"eu": 20, "us": 400}))
            .send()
            .await
            .unwrap();
    }
    // The leader stalls once its servers are allocated and its matches written: inside
    // its transaction, at the round's snapshot row.
    stall_inserts_into(&tdb.pool, "round_snapshots").await;
    let clock = clock_now();
    let doomed = tdb.new_pool(1).await;
    let (c, qc) = (clock.clone(), q.clone());
    let killed = tokio::spawn(async move { run_round(&doomed, &c, &qc).await });
    let pid = stalled_backend(&tdb.pool, "the leader to stall mid-commit").await;
    kill_backend(&tdb.pool, pid).await;
    assert!(
        time_limit::within("the killed round to end", killed)
            .await
            .is_err(),
        "the killed round failed"
    );
    let (allocated, matches, queued): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM servers WHERE status <> 'ready'),
                (SELECT count(*) FROM matches),
                (SELECT count(*) FROM queue_entries WHERE status = 'queued')",
    )
    .fetch_one(&tdb.pool)
    .await
    .unwrap();
    assert_eq!((allocated, matches, queued), (0, 0, 12));

    release_stall(&tdb.pool).await;
    clock.advance(secs(16)); // the killed leader's lease expires
    let round = run_round(&tdb.pool, &clock, &q).await;
    assert_eq!(round.matches, 2);
    let (without, shared, allocated): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM matches WHERE server_id IS NULL),
                (SELECT count(*) FROM (SELECT 1 FROM matches GROUP BY server_owner, server_id
                                        HAVING count(*) > 1) x),
                (SELECT count(*) FROM servers s JOIN matches m USING (match_id)
                  WHERE s.status = 'allocated' AND m.server_id = s.server_id)",
    )
    .fetch_one(&tdb.pool)
    .await
    .unwrap();
    assert_eq!((without, shared, allocated), (0, 0, 2));
}

/// The example fleet adapter (`examples/fleet.rs`) against a running daemon: it turns
/// Agones-style states into server_ready / server_gone, prints the allocation with its
/// roster, frees the server when the fleet says Ready after the match, and withdraws it
/// at Shutdown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_fleet_adapter_announces_servers_and_hears_their_matches() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let bin = tokio::task::spawn_blocking(|| crate::notify::example_binary("fleet"))
        .await
        .unwrap();
    let tdb = fresh_db().await;
    let config = matchmaker::config::Config::from_toml_str(&format!(
        "[daemon]\npoll_interval = \"200ms\"\nlease_ttl = \"3s\"\nlease_renew = \"1s\"\n{}",
        QUEUES.replace("every = \"10s\"", "every = \"1s\"")
    ))
    .unwrap();
    let daemon = spawn_daemon(tdb.new_pool(4).await, config, "fleet");
    wait_for_count(
        &tdb.pool,
        "SELECT count(*) FROM queues WHERE active",
        1,
        secs(30),
    )
    .await;
    let (login, _) = server_login(&tdb, 1).await;
    let mut child = tokio::process::Command::new(&bin)
        .args(["--queue", "d", "--announce-every", "1s"])
        .env("DATABASE_URL", tdb.url_as(&login))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut say = async |line: &str| {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    };
    say(r#"{"name":"gs-1","state":"Scheduled"}"#).await;
    say(r#"{"name":"gs-1","state":"Ready","region":"eu","address":"10.0.0.1","port":7777}"#).await;
    let status = "SELECT count(*) FROM servers WHERE server_id = 'gs-1' AND status = 'ready'";
    wait_for_count(&tdb.pool, status, 1, secs(30)).await;

    let client = Client::login(&tdb, 2).await;
    six_near_eu(&client, "f").await;
    let line = time_limit::within("the allocation", stdout.next_line())
        .await
        .unwrap()
        .expect("a line");
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["allocate"], "gs-1", "{line}");
    assert_eq!(v["address"], "10.0.0.1:7777");
    assert_eq!(v["teams"].as_array().unwrap().len(), 2);
    let match_id = v["match_id"].as_i64().unwrap();
    let on: Option<String> =
        sqlx::query_scalar("SELECT server_id FROM matches WHERE match_id = $1")
            .bind(match_id)
            .fetch_one(&tdb.pool)
            .await
            .unwrap();
    assert_eq!(on.as_deref(), Some("gs-1"));

    // The fleet allocates it, plays, and says Ready again: free for the next match.
    say(r#"{"name":"gs-1","state":"Allocated"}"#).await;
    say(r#"{"name":"gs-1","state":"Ready","region":"eu","address":"10.0.0.1","port":7777}"#).await;
    wait_for_count(&tdb.pool, status, 1, secs(30)).await;
    say(r#"{"name":"gs-1","state":"Shutdown"}"#).await;
    wait_for_count(&tdb.pool, "SELECT count(*) FROM servers", 0, secs(30)).await;
    drop(stdin); // the end of the fleet's events
    let out = time_limit::within("the adapter to exit at the end of its input", child.wait())
        .await
        .unwrap();
    assert!(out.success());
    daemon.stop().await;
}
