//! Output that behaves in terminals, pipes and journals: the built binary run with its
//! output piped writes no ESC byte (logs, `status`, the demo), colours only on a terminal
//! and never with NO_COLOR, JSON logs one object a line, and `status` and the demo fit
//! 80 columns (the width of a pipe unless COLUMNS says otherwise). The demo runs from a
//! directory only root can enter, as a fresh clone under /root or `mktemp -d` would be:
//! its private PostgreSQL must live where the `postgres` user can reach it.

use matchmaker_testkit::command_line::{assert_fits, piped_within, text};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use matchmaker::config::Config;
use matchmaker::daemon::clock::{Clock, ManualClock};
use matchmaker::daemon::round::RoundRunner;
use matchmaker::db::{self, RoundTrigger};

use crate::support::*;

const ESC: u8 = 0x1b;

fn cli() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_matchmaker"));
    // The defaults under test: no width and no colour preference from the environment
    // that runs the tests.
    cmd.env_remove("COLUMNS").env_remove("NO_COLOR");
    cmd
}

/// A URL that does not parse: `run` logs `config loaded`, then fails at once. Enough to
/// see how a log line is written when no database is needed.
const BAD_URL: &str = "not-a-url";

/// The daemon's log on a real database, stderr piped: `run` until both queues' leases
/// are acquired, then SIGTERM and its shutdown lines.
fn daemon_log(url: &str, extra: &[&str]) -> String {
    let mut child = cli()
        .args(["run", "--database-url", url])
        .args(extra)
        .env_remove("MATCHMAKER_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start matchmaker run");
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        for line in BufReader::new(stderr).split(b'\n') {
            let Ok(line) = line else { break };
            let _ = tx.send(text(&line).contains("lease acquired"));
            all.extend_from_slice(&line);
            all.push(b'\n');
        }
        all
    });
    let started = Instant::now();
    let mut leases = 0;
    while leases < 2 {
        match rx.recv_timeout(Duration::from_secs(60).saturating_sub(started.elapsed())) {
            Ok(acquired) => leases += usize::from(acquired),
            Err(_) => break,
        }
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let stopped = Instant::now();
    while child.try_wait().expect("poll run").is_none() {
        if stopped.elapsed() > Duration::from_secs(60) {
            child.kill().ok();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = text(&reader.join().unwrap());
    assert_eq!(leases, 2, "both queues led:\n{log}");
    log
}

#[tokio::test(flavor = "multi_thread")]
async fn daemon_logs_are_plain_when_piped_and_json_is_one_object_a_line() {
    let tdb = fresh_db().await;
    let url = tdb.url();
    let log = tokio::task::block_in_place(|| daemon_log(&url, &[]));
    assert!(
        log.contains(" INFO ") && log.contains("daemon started"),
        "{log}"
    );
    assert!(!log.contains('\x1b'), "ESC in piped logs:\n{log:?}");

    let log = tokio::task::block_in_place(|| daemon_log(&url, &["--log-format", "json"]));
    assert!(!log.contains('\x1b'), "ESC in JSON logs:\n{log:?}");
    let mut messages = Vec::new();
    for line in log.lines() {
        let value: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not one JSON object a line ({e}): {line:?}"));
        assert!(value.get("level").is_some(), "{line}");
        messages.push(
            value["fields"]["message"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        );
    }
    for expected in ["config loaded", "daemon started", "lease released"] {
        assert!(
            messages.iter().any(|m| m.starts_with(expected)),
            "{expected:?} in {messages:?}"
        );
    }
}

/// Runs `args` on a pseudo-terminal (util-linux `script`, the one way a test can give a
/// program a terminal) and returns everything it wrote there.
fn on_a_terminal(args: &str, no_color: Option<&str>) -> Vec<u8> {
    let command = format!("'{}' {args}", env!("CARGO_BIN_EXE_matchmaker"));
    let mut script = Command::new("script");
    script
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env_remove("COLUMNS")
        .env_remove("NO_COLOR");
    if let Some(value) = no_color {
        script.env("NO_COLOR", value);
    }
    let out = piped_within(&mut script, Duration::from_secs(60));
    assert!(
        !out.stdout.is_empty(),
        "`script` (util-linux, Debian package bsdutils) ran nothing: {}",
        text(&out.stderr)
    );
    out.stdout
}

#[test]
fn log_colours_only_on_a_terminal_and_never_with_no_color() {
    let args = format!("run --database-url {BAD_URL}");
    let tty = on_a_terminal(&args, None);
    assert!(
        text(&tty).contains("config loaded"),
        "the log reached the terminal:\n{}",
        text(&tty)
    );
    assert!(
        tty.contains(&ESC),
        "a terminal gets colours (so the checks below can fail):\n{:?}",
        text(&tty)
    );
    let plain = on_a_terminal(&args, Some("1"));
    assert!(text(&plain).contains("config loaded"), "{}", text(&plain));
    assert!(
        !plain.contains(&ESC),
        "NO_COLOR=1 on a terminal:\n{:?}",
        text(&plain)
    );
}

/// Three rounds of a queue with a long name, and a leader with a long name: the NEXT
/// ROUND and LEADER columns that overflowed 80 columns before.
async fn rounds_with_long_names(tdb: &TestDb) {
    const QUEUE: &str = "ranked_competitive_5v5_season_twelve";
    let db = &tdb.pool;
    let config = Config::from_toml_str(&format!(
        "[queues.{QUEUE}]\n[queues.{QUEUE}.round]\nbudget = \"50ms\"\nevery = \"2m\"\n\
         target_pool = 300\n"
    ))
    .expect("test config is valid");
    let config = Arc::new(config.queues[QUEUE].clone());
    let clock = ManualClock::new(t0());
    let holder = "matchmaker-replica-eu-west-1b-7f9c4d-12345";
    let lease = db::acquire_lease(db, QUEUE, holder, secs(15), clock.lease_now())
        .await
        .unwrap()
        .expect("free lease");
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    for round in 0..3 {
        enqueue_n(db, QUEUE, &format!("r{round}-"), 14, clock.now()).await;
        // Within the lease's 15 s on the manual clock.
        clock.advance(secs(4));
        runner
            .run(QUEUE, config.clone(), RoundTrigger::Schedule, &lease)
            .await
            .expect("round");
    }
    // A live lease on the database's clock, so that status names the leader.
    sqlx::query("UPDATE leases SET expires_at = now() + interval '1 hour'")
        .execute(db)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn status_piped_is_plain_lines_within_80_columns() {
    let tdb = fresh_db().await;
    rounds_with_long_names(&tdb).await;
    let url = tdb.url();
    let once = |columns: Option<&str>| {
        let mut cmd = cli();
        cmd.args(["status", "--once", "--database-url", &url]);
        if let Some(columns) = columns {
            cmd.env("COLUMNS", columns);
        }
        piped_within(&mut cmd, Duration::from_secs(60))
    };
    let out = tokio::task::block_in_place(|| once(None));
    let view = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!out.stdout.contains(&ESC), "{view:?}");
    assert_fits(&view, 80, "status --once, piped");
    // Names longer than their column wrap inside it.
    for needle in [
        "matchmaker-replica-eu-west-1",
        "(term 1)",
        "FACTOR AVERAGES",
        "#3",
        "#1",
    ] {
        assert!(view.contains(needle), "{needle} missing:\n{view}");
    }
    // COLUMNS widens (or narrows) a pipe.
    let out = tokio::task::block_in_place(|| once(Some("60")));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_fits(&text(&out.stdout), 60, "status --once, COLUMNS=60");

    // The live view, piped: frame after frame of plain lines, no screen control.
    let mut child = cli()
        .args(["status", "--interval", "100ms", "--database-url", &url])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start status");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).split(b'\n');
    let mut frames = 0;
    let mut seen = Vec::new();
    while frames < 2 {
        let Some(line) = lines.next() else {
            break;
        };
        let line = line.expect("read status");
        if line.starts_with(b"refresh every") {
            frames += 1;
        }
        seen.extend_from_slice(&line);
        seen.push(b'\n');
    }
    child.kill().ok();
    child.wait().ok();
    assert_eq!(frames, 2, "two frames:\n{}", text(&seen));
    assert!(!seen.contains(&ESC), "{:?}", text(&seen));
    assert_fits(&text(&seen), 80, "status, live view piped");
}

/// An operator's command asked for a queue the database does not know says so on one
/// line, naming the known ones, and writes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn commands_given_an_unknown_queue_name_the_known_ones() {
    let tdb = fresh_db().await;
    let config = Config::from_toml_str("[queues.ranked_3v3]\n").unwrap();
    db::queues::publish_queue(&tdb.pool, "ranked_3v3", &config.queues["ranked_3v3"], "cli")
        .await
        .unwrap();
    let url = tdb.url();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let page_arg = page.to_str().unwrap().to_string();
    let expected = "error: unknown queue \"nope\"; queues: ranked_3v3";
    for args in [
        vec!["report", "--queue", "nope", "--out", &page_arg],
        vec!["status", "--once", "--queue", "nope"],
        vec!["replay", "--from", "1h", "--to", "now", "--queue", "nope"],
        vec!["prune", "--dry-run", "--queue", "nope"],
    ] {
        let out = tokio::task::block_in_place(|| {
            piped_within(
                cli().args(&args).args(["--database-url", &url]),
                Duration::from_secs(60),
            )
        });
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert_eq!(
            stderr
                .lines()
                .filter(|l| l.starts_with("error:"))
                .collect::<Vec<_>>(),
            [expected],
            "{args:?}: {stderr}"
        );
    }
    assert!(!page.exists(), "no page written");
}
