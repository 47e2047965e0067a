//! `matchmaker run --metrics-addr`, as deployed (a child process, wall clock): `/metrics`
//! after two real rounds agrees with the `rounds` table; `/healthz` answers; `/readyz` is
//! 503 on an unmigrated database under `--no-migrate` and 200 once it is migrated; and
//! `matchmaker health`, the probe of the deploy files, exits accordingly.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use matchmaker::ops::health::{Answer, get};

use crate::support::*;

/// Rounds only when 6 players are queued (the hourly tick never comes within a test); the
/// workers look every second, so a round follows an enqueue without relying on NOTIFY.
const CONFIG: &str = "[daemon]\npoll_interval = \"1s\"\nlease_ttl = \"10s\"\nlease_renew = \"1s\"\n\
                      [queues.q.round]\nevery = \"1h\"\nbudget = \"50ms\"\ntarget_pool = 6\n";

/// Generous bound on a loaded machine for the daemon to start, run a round, or notice
/// a migration; far below anything the test waits for otherwise.
const WITHIN: Duration = Duration::from_secs(30);

/// A `matchmaker run` child with its endpoints on a free port (read from its log); the
/// console's tests start theirs with this too.
pub(crate) struct Daemon {
    child: Child,
    pub(crate) addr: SocketAddr,
    log: Arc<Mutex<String>>,
    /// The config file it runs (and reloads).
    config: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Daemon {
    fn start(url: &str, holder: &str, extra: &[&str]) -> Daemon {
        Daemon::start_with(url, holder, CONFIG, extra)
    }

    /// `matchmaker run` on `url` with the config file `toml`, and `extra` arguments.
    pub(crate) fn start_with(url: &str, holder: &str, toml: &str, extra: &[&str]) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("matchmaker.toml");
        std::fs::write(&config, toml).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_matchmaker"))
            .args(["run", "--database-url", url, "--log-format", "json"])
            .arg("--config")
            .arg(&config)
            .args(["--metrics-addr", "127.0.0.1:0", "--holder", holder])
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start matchmaker run");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                        && v["fields"]["message"] == "serving /metrics, /healthz and /readyz"
                        && let Some(addr) = v["fields"]["addr"].as_str()
                    {
                        let _ = tx.send(addr.parse::<SocketAddr>().expect("a socket address"));
                    }
                    log.lock().unwrap().push_str(&(line + "\n"));
                }
            });
        }
        let addr = match rx.recv_timeout(WITHIN) {
            Ok(addr) => addr,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "no bound address logged within {WITHIN:?}:\n{}",
                    log.lock().unwrap()
                );
            }
        };
        Daemon {
            child,
            addr,
            log,
            config,
            _dir: dir,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub(crate) fn get(&self, path: &str) -> Answer {
        get(&self.url(path), Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("GET {path}: {e:#}\nlog:\n{}", self.log()))
    }

    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// GET `path` until `done` holds, for at most [`WITHIN`].
    pub(crate) async fn wait_for(
        &self,
        path: &str,
        what: &str,
        done: impl Fn(&Answer) -> bool,
    ) -> Answer {
        let start = Instant::now();
        loop {
            let answer = self.get(path);
            if done(&answer) {
                return answer;
            }
            if start.elapsed() > WITHIN {
                panic!(
                    "waited {WITHIN:?} for {what}; last {path}: {} {}\n{}\nlog:\n{}",
                    answer.status,
                    answer.reason,
                    answer.body,
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One sample of the Prometheus text format.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// The samples of a scrape, and the `# TYPE` of each family. Panics on a line that is
/// not valid exposition format (that is part of what the test checks).
fn parse_exposition(text: &str) -> (Vec<Sample>, BTreeMap<String, String>) {
    let mut samples = Vec::new();
    let mut types = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            types.insert(name.to_string(), kind.to_string());
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (name, rest) = match line.find(['{', ' ']) {
            Some(i) => line.split_at(i),
            None => panic!("no value: {line:?}"),
        };
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "metric name {name:?} in {line:?}"
        );
        let mut labels = BTreeMap::new();
        let mut rest = rest;
        if let Some(inner) = rest.strip_prefix('{') {
            let mut chars = inner.char_indices().peekable();
            let mut end = None;
            loop {
                // key
                let Some(&(start, c)) = chars.peek() else {
                    panic!("unclosed labels: {line:?}")
                };
                if c == '}' {
                    end = Some(start);
                    break;
                }
                if c == ',' {
                    chars.next();
                    continue;
                }
                let mut key = String::new();
                for (_, c) in chars.by_ref() {
                    if c == '=' {
                        break;
                    }
                    key.push(c);
                }
                assert_eq!(chars.next().map(|(_, c)| c), Some('"'), "{line:?}");
                let mut value = String::new();
                while let Some((_, c)) = chars.next() {
                    match c {
                        '\\' => match chars.next().map(|(_, c)| c) {
                            Some('n') => value.push('\n'),
                            Some(c) => value.push(c),
                            None => panic!("dangling escape: {line:?}"),
                        },
                        '"' => break,
                        c => value.push(c),
                    }
                }
                labels.insert(key, value);
                if end.is_some() {
                    break;
                }
            }
            let end = end.expect("labels closed");
            rest = &inner[end + 1..];
        }
        let value_text = rest.split_whitespace().next().expect("a value");
        let value = match value_text {
            "NaN" => f64::NAN,
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|_| panic!("value {v:?} in {line:?}")),
        };
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    (samples, types)
}

/// Sum of the samples named `name` whose labels include `labels`.
fn total(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s.name == name)
        .filter(|s| {
            labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
        .sum()
}

fn scrape(daemon: &Daemon) -> (Vec<Sample>, BTreeMap<String, String>, String) {
    let answer = daemon.get("/metrics");
    assert_eq!(answer.status, 200, "{}", answer.body);
    let (samples, types) = parse_exposition(&answer.body);
    (samples, types, answer.body)
}

/// The `matchmaker_*` names in the expressions of `deploy/grafana`'s dashboard.
fn dashboard_metrics() -> Vec<String> {
    let text = include_str!("../../deploy/grafana/matchmaker-dashboard.json");
    let dashboard: serde_json::Value = serde_json::from_str(text).expect("dashboard is JSON");
    let mut names = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().expect("a PromQL expression");
            let mut rest = expr;
            while let Some(at) = rest.find("matchmaker_") {
                let tail = &rest[at..];
                let end = tail
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(tail.len());
                names.push(tail[..end].to_string());
                rest = &tail[end..];
            }
        }
    }
    names.sort();
    names.dedup();
    assert!(names.len() >= 10, "dashboard metrics: {names:?}");
    names
}

fn probe(url: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_matchmaker"))
        .args(["health", "--url", url])
        .output()
        .expect("run matchmaker health")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_after_two_rounds_agree_with_the_rounds_table() {
    let _load = crate::support::TIMING.read().await;
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let daemon = Daemon::start(&tdb.url(), "replica-a", &[]);
    let ready = daemon
        .wait_for("/readyz", "readiness", |a| a.status == 200)
        .await;
    assert!(
        ready.body.contains("queue q: leading (lease term"),
        "{}",
        ready.body
    );
    let health = daemon.get("/healthz");
    assert_eq!(
        (health.status, health.body.as_str()),
        (200, "ok\ndatabase: answers\n")
    );

    // Round 1: 7 players, target 6: six matched, one left over. Round 2: five more.
    enqueue_n(db, "q", "a", 7, chrono::Utc::now()).await;
    let start = Instant::now();
    while count(db, "SELECT count(*) FROM rounds").await < 1 {
        assert!(start.elapsed() < WITHIN, "no round 1:\n{}", daemon.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    enqueue_n(db, "q", "b", 5, chrono::Utc::now()).await;
    while count(db, "SELECT count(*) FROM rounds").await < 2 {
        assert!(start.elapsed() < WITHIN, "no round 2:\n{}", daemon.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The counters move right after the commit: wait for the second round to show, and
    // for the leader's look after it (the pool it left, the countdown it set).
    daemon
        .wait_for("/metrics", "two rounds in /metrics", |a| {
            let (s, _) = parse_exposition(&a.body);
            total(&s, "matchmaker_rounds_total", &[]) >= 2.0
                && total(&s, "matchmaker_next_round_in_seconds", &[("queue", "q")]) > 0.0
        })
        .await;
    let (samples, types, body) = scrape(&daemon);
    let m = |name: &str, labels: &[(&str, &str)]| total(&samples, name, labels);

    let rounds = count(db, "SELECT count(*) FROM rounds").await;
    assert_eq!(rounds, 2, "no third round ran");
    assert_eq!(m("matchmaker_rounds_total", &[]), rounds as f64, "{body}");
    for (trigger, n) in
        sqlx::query_as::<_, (String, i64)>("SELECT trigger, count(*) FROM rounds GROUP BY trigger")
            .fetch_all(db)
            .await
            .unwrap()
    {
        assert_eq!(
            m(
                "matchmaker_rounds_total",
                &[("queue", "q"), ("trigger", &trigger)]
            ),
            n as f64,
            "{trigger}"
        );
    }
    let (matched, left_over, rejected, matches): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT sum(matched)::bigint, sum(left_over)::bigint, sum(rejected)::bigint,
                (SELECT count(*) FROM matches)
           FROM rounds",
    )
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(matched, 12, "every player matched by the two rounds");
    assert_eq!(
        m("matchmaker_players_matched_total", &[("queue", "q")]),
        matched as f64
    );
    assert_eq!(
        m("matchmaker_players_left_over_total", &[("queue", "q")]),
        left_over as f64
    );
    assert!(left_over >= 1, "round 1 left one player over");
    assert_eq!(
        m("matchmaker_players_rejected_total", &[("queue", "q")]),
        rejected as f64
    );
    assert_eq!(
        m("matchmaker_matches_total", &[("queue", "q")]),
        matches as f64
    );
    // Histograms: one wait per matched player, one score per match, each phase per round.
    assert_eq!(types["matchmaker_match_wait_seconds"], "histogram");
    assert_eq!(
        m("matchmaker_match_wait_seconds_count", &[("queue", "q")]),
        matched as f64
    );
    assert_eq!(
        m("matchmaker_match_score_count", &[("queue", "q")]),
        matches as f64
    );
    let score_sum: f64 = sqlx::query_scalar("SELECT sum(score) FROM matches")
        .fetch_one(db)
        .await
        .unwrap();
    assert!((m("matchmaker_match_score_sum", &[("queue", "q")]) - score_sum).abs() < 1e-9);
    for phase in ["snapshot", "solve", "commit"] {
        assert_eq!(
            m(
                "matchmaker_round_phase_duration_seconds_count",
                &[("queue", "q"), ("phase", phase)]
            ),
            rounds as f64,
            "{phase}"
        );
    }
    // Every entry the test enqueued was counted entering the queue.
    assert_eq!(
        m("matchmaker_entries_enqueued_total", &[("queue", "q")]),
        12.0
    );
    // Gauges: the last round's factor averages and score, as the table has them.
    let (factors, score): (serde_json::Value, f64) =
        sqlx::query_as("SELECT factor_averages, score FROM rounds ORDER BY round_id DESC LIMIT 1")
            .fetch_one(db)
            .await
            .unwrap();
    let factors = factors.as_object().expect("factor averages object");
    assert!(!factors.is_empty());
    for (factor, value) in factors {
        let got = m(
            "matchmaker_factor_score_average",
            &[("queue", "q"), ("factor", factor)],
        );
        assert!(
            (got - value.as_f64().unwrap()).abs() < 1e-9,
            "{factor}: {got}"
        );
    }
    assert!((m("matchmaker_round_score", &[("queue", "q")]) - score).abs() < 1e-9);
    let queued = count(
        db,
        "SELECT count(*) FROM queue_entries WHERE status = 'queued'",
    )
    .await;
    assert_eq!(m("matchmaker_pool_size", &[("queue", "q")]), queued as f64);
    assert_eq!(m("matchmaker_leases_held", &[("queue", "q")]), 1.0);
    let next = m("matchmaker_next_round_in_seconds", &[("queue", "q")]);
    assert!(next > 0.0 && next <= 3600.0, "the hourly tick: {next}");
    assert_eq!(m("matchmaker_errors_total", &[]), 0.0, "{body}");
    assert_eq!(types["matchmaker_rounds_total"], "counter");
    assert_eq!(types["matchmaker_leases_held"], "gauge");
    // Every metric the shipped Grafana dashboard charts is one this daemon exports.
    for name in dashboard_metrics() {
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| {
                name.strip_suffix(suffix)
                    .filter(|f| types.get(*f).is_some_and(|t| t == "histogram"))
            })
            .unwrap_or(name.as_str());
        assert!(
            types.contains_key(family),
            "the dashboard charts {name}, which /metrics does not have"
        );
    }

    let out = probe(&daemon.url("/readyz"));
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ready\n"));

    // A second replica stands by: ready, no lease, and no figures of a queue it does not
    // lead (NaN, so that `max by (queue)` over replicas gives the leader's).
    let standby = Daemon::start(&tdb.url(), "replica-b", &[]);
    let ready = standby
        .wait_for("/readyz", "the standby's readiness", |a| a.status == 200)
        .await;
    assert!(
        ready.body.contains("queue q: standing by"),
        "{}",
        ready.body
    );
    let (samples, _, body) = scrape(&standby);
    let s = |name: &str| total(&samples, name, &[("queue", "q")]);
    assert_eq!(s("matchmaker_leases_held"), 0.0, "{body}");
    assert!(s("matchmaker_pool_size").is_nan(), "{body}");
    assert!(s("matchmaker_next_round_in_seconds").is_nan(), "{body}");
    assert_eq!(total(&samples, "matchmaker_rounds_total", &[]), 0.0);
    drop(standby);

    // A bad edit: refused once (not again at each read of the file), reported by
    // /readyz and the metrics, and the daemon stays ready on its running config.
    std::fs::write(&daemon.config, "this is [not toml").unwrap();
    let refused = daemon
        .wait_for("/readyz", "the refusal in /readyz", |a| {
            a.body.contains("was refused")
        })
        .await;
    assert_eq!(refused.status, 200, "{}", refused.body);
    // No reload loop: reading the file is not a change (it was: a reload every 200 ms,
    // each logging the refusal again). One write is one refusal, or two if a loaded
    // machine splits the write's events across the 200 ms debounce; then no more.
    let refusals = |samples: &[Sample]| {
        total(
            samples,
            "matchmaker_errors_total",
            &[("kind", "config_refused")],
        )
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (before, _, _) = scrape(&daemon);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (samples, _, body) = scrape(&daemon);
    assert!(
        (1.0..=2.0).contains(&refusals(&before)) && refusals(&samples) == refusals(&before),
        "refusals {} then {}:\n{body}",
        refusals(&before),
        refusals(&samples)
    );
    assert_eq!(
        total(&samples, "matchmaker_config_last_reload_successful", &[]),
        0.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_is_503_on_an_unmigrated_database_until_it_is_migrated() {
    let bare = unmigrated_db().await;
    let url = bare.url();
    let mut daemon = Daemon::start(&url, "replica-a", &["--no-migrate"]);

    let not_ready = daemon.get("/readyz");
    assert_eq!(not_ready.status, 503, "{}", not_ready.body);
    assert!(
        not_ready
            .body
            .starts_with("not ready\nschema: database schema is not migrated"),
        "{}",
        not_ready.body
    );
    assert!(
        not_ready.body.contains("matchmaker migrate"),
        "names the fix"
    );
    // Alive, and the database answers: only readiness is refused.
    assert_eq!(daemon.get("/healthz").status, 200);
    let out = probe(&daemon.url("/readyz"));
    assert!(!out.status.success(), "the probe must fail: {out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("not ready\n"));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("answered 503"),
        "{out:?}"
    );
    // Each check while waiting (every poll_interval) counts; the log says it once.
    daemon
        .wait_for("/metrics", "two schema checks counted", |a| {
            let (samples, _) = parse_exposition(&a.body);
            total(&samples, "matchmaker_errors_total", &[("kind", "schema")]) >= 2.0
        })
        .await;
    let log = daemon.log();
    assert_eq!(
        log.matches("waiting for the schema").count(),
        1,
        "logged once, not every poll:\n{log}"
    );
    assert!(
        daemon.child.try_wait().unwrap().is_none(),
        "the daemon waits for the schema, it does not exit:\n{}",
        daemon.log()
    );

    // The operator migrates: the daemon notices, starts, and turns ready.
    let pool = matchmaker::db::connect(&url).await.unwrap();
    matchmaker::db::migrate(&pool).await.unwrap();
    let ready = daemon
        .wait_for("/readyz", "readiness after the migration", |a| {
            a.status == 200
        })
        .await;
    assert!(ready.body.contains("schema: current"), "{}", ready.body);
    assert!(ready.body.contains("queue q: leading"), "{}", ready.body);
    assert!(probe(&daemon.url("/readyz")).status.success());

    // The stuck daemon: a table gone under a running daemon. Every look fails
    // (`relation "leases" does not exist`); it is alive but not ready, and says why.
    sqlx::query("ALTER TABLE leases RENAME TO leases_away")
        .execute(&pool)
        .await
        .unwrap();
    let failing = daemon
        .wait_for("/readyz", "503 for the missing table", |a| a.status == 503)
        .await;
    assert!(
        failing
            .body
            .contains("queue q: failing: relation \"leases\" does not exist"),
        "{}",
        failing.body
    );
    assert_eq!(daemon.get("/healthz").status, 200, "alive all the same");
    let (samples, _, body) = scrape(&daemon);
    assert!(
        total(&samples, "matchmaker_errors_total", &[("kind", "round_db")]) >= 1.0,
        "{body}"
    );
    sqlx::query("ALTER TABLE leases_away RENAME TO leases")
        .execute(&pool)
        .await
        .unwrap();
    daemon
        .wait_for("/readyz", "readiness once the table is back", |a| {
            a.status == 200
        })
        .await;
    pool.close().await;
    drop(daemon);
    bare.drop_now().await;
}

#[test]
fn metrics_addr_is_read_from_the_config_file_and_checked() {
    use matchmaker::config::Config;
    let config =
        Config::from_toml_str("[daemon]\nmetrics_addr = \"127.0.0.1:9310\"\n[queues.q]\n").unwrap();
    assert_eq!(
        config.daemon.metrics_addr,
        Some("127.0.0.1:9310".parse().unwrap())
    );
    assert_eq!(
        Config::embedded_default().daemon.metrics_addr,
        None,
        "off by default"
    );
    let err =
        Config::from_toml_str("[daemon]\nmetrics_addr = \"localhost\"\n[queues.q]\n").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("config key `daemon.metrics_addr`: invalid socket address"),
        "{err}"
    );
}
