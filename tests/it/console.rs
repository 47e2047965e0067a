//! The operators' console (`/console` on `matchmaker run --metrics-addr`), as a person
//! sees it: a daemon (a child process, wall clock) runs rounds of one of its two queues;
//! headless Chromium loads the page, and what the page shows once its scripts ran (every
//! queue with its pool and countdown, the latest round, a round's matches, a player's
//! explanation) is checked against the database. The console writes nothing: its paths
//! refuse every method but GET, and its sessions refuse a write.
//!
//! Needs Chromium (`chromium`, or the browser named by `CHROMIUM`); without one the test
//! fails and says how to install it. `CONSOLE_SCREENSHOT=docs/console.png` also saves
//! the screenshot there (the one in docs/operations.md).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use matchmaker::ops::console::read_only::{APPLICATION_NAME, read_only_pool};
use matchmaker::ops::health::{Answer, parse_response};

use matchmaker_testkit::command_line::{piped_within, text};

use crate::ops_metrics::Daemon;
use crate::support::*;

/// Two queues; rounds only when 6 players are queued (the hourly tick never comes within
/// the test). `casual` gets no players: the page shows it all the same.
const CONFIG: &str = "default_queue = \"ranked\"\n[daemon]\npoll_interval = \"1s\"\nlease_ttl = \"10s\"\nlease_renew = \"1s\"\n\
                      [queues.ranked.round]\nevery = \"1h\"\nbudget = \"50ms\"\ntarget_pool = 6\n\
                      [queues.casual.round]\nevery = \"1h\"\nbudget = \"50ms\"\ntarget_pool = 6\n";

const WITHIN: Duration = Duration::from_secs(30);

/// The browser: `CHROMIUM`, else the first of the usual names on the PATH. None found is
/// a failure that says what to install, never a skip.
fn chromium() -> PathBuf {
    find_browser(
        std::env::var_os("CHROMIUM"),
        std::env::var_os("PATH").unwrap_or_default(),
    )
    .unwrap_or_else(|why| panic!("{why}"))
}

fn find_browser(
    named: Option<std::ffi::OsString>,
    path: std::ffi::OsString,
) -> Result<PathBuf, String> {
    if let Some(named) = named {
        return Ok(PathBuf::from(named));
    }
    let names = [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ];
    for dir in std::env::split_paths(&path) {
        for name in names {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(format!(
        "the console test needs headless Chromium and found none of {names:?} on the PATH: \
         install it (Debian: apt-get install -y chromium) or set CHROMIUM=/path/to/browser"
    ))
}

/// Headless Chromium on `url` with a fresh profile, `action` its output flag
/// (`--dump-dom`, `--screenshot=FILE`); the page's timers run for 10 s of virtual time.
fn browse(url: &str, action: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut command = Command::new(chromium());
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(action)
        .arg(url);
    let out = piped_within(&mut command, Duration::from_secs(90));
    assert!(
        out.status.success(),
        "chromium {action:?} {url} failed ({}):\n{}",
        out.status,
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The DOM of `url` after its scripts ran.
fn dom(url: &str) -> String {
    let dom = browse(url, &["--dump-dom"]);
    assert!(
        dom.contains("Matchmaker console"),
        "not the console:\n{dom}"
    );
    dom
}

/// Text as the DOM serializes it.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\u{a0}', "&nbsp;")
}

/// The markup of the element that opens with `start` (up to the first `end` after it).
fn part<'a>(dom: &'a str, start: &str, end: &str) -> &'a str {
    let at = dom
        .find(start)
        .unwrap_or_else(|| panic!("no {start:?} in the page:\n{dom}"));
    let rest = &dom[at..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}

/// The text of the first element with class `class` inside `markup`.
fn text_of<'a>(markup: &'a str, class: &str) -> &'a str {
    let open = format!("class=\"{class}\">");
    let at = markup
        .find(&open)
        .unwrap_or_else(|| panic!("no .{class} in:\n{markup}"));
    let rest = &markup[at + open.len()..];
    &rest[..rest.find('<').unwrap_or(rest.len())]
}

/// One request of any method, its answer.
fn request(daemon: &Daemon, method: &str, path: &str) -> Answer {
    let mut stream = TcpStream::connect(daemon.addr).expect("connect to the daemon");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: 2\r\nConnection: close\r\n\r\n{{}}",
        daemon.addr
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse_response(&raw).expect("an HTTP answer")
}

async fn wait_for_rounds(db: &sqlx::PgPool, want: i64, daemon: &Daemon) {
    let start = Instant::now();
    while count(db, "SELECT count(*) FROM rounds").await < want {
        assert!(
            start.elapsed() < WITHIN,
            "no round {want} within {WITHIN:?}:\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_queues_rounds_and_players_and_writes_nothing() {
    // Before anything starts: a machine without a browser fails here, saying so.
    chromium();
    let _load = crate::support::TIMING.read().await;
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let daemon = Daemon::start_with(&tdb.url(), "console-a", CONFIG, &[]);
    daemon
        .wait_for("/readyz", "readiness", |a| a.status == 200)
        .await;

    // Three rounds of `ranked`, a few seconds apart so the plots have a span: 7 players
    // (one left over), 5 more, then 8 more (two left over).
    for (round, (prefix, n)) in [("a", 7), ("b", 5), ("c", 8)].into_iter().enumerate() {
        enqueue_n(db, "ranked", prefix, n, chrono::Utc::now()).await;
        wait_for_rounds(db, round as i64 + 1, &daemon).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let round_id: i64 = sqlx::query_scalar("SELECT max(round_id) FROM rounds")
        .fetch_one(db)
        .await
        .unwrap();
    let queued: Vec<String> = sqlx::query_scalar(
        "SELECT player_id FROM queue_entries WHERE status = 'queued' ORDER BY player_id",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert_eq!(queued.len(), 2, "two players wait after the third round");
    let waiting = &queued[0];
    // The leader's look after the round writes the countdown: wait for it.
    wait_for_count(
        db,
        "SELECT count(*) FROM queue_state WHERE next_round_at > now()",
        2,
        WITHIN,
    )
    .await;

    // The page with a round and a player open, as an operator's link opens it.
    let url = daemon.url(&format!("/console?player={waiting}#round={round_id}"));
    let page = dom(&url);
    assert!(!page.contains("Could not read"), "a failed read:\n{page}");

    // Every configured queue, with its pool and countdown as `matchmaker status` has them.
    let status = matchmaker::ops::status::read_status(db, None, 8)
        .await
        .unwrap();
    for queue in ["casual", "ranked"] {
        let card = part(&page, &format!("data-queue=\"{queue}\""), "</article>");
        let line = status
            .queues
            .iter()
            .find(|q| q.queue == queue)
            .unwrap_or_else(|| panic!("{queue} in status"));
        assert_eq!(
            text_of(card, "value pool"),
            line.pool_size.to_string(),
            "{card}"
        );
        let countdown = text_of(card, "value countdown");
        assert!(
            countdown.starts_with("in ") && countdown.contains(" s"),
            "{queue}: {countdown:?} (status: {})",
            matchmaker::ops::status::countdown(line)
        );
        assert!(card.contains("this replica: leading"), "{card}");
    }
    let ranked = part(&page, "data-queue=\"ranked\"", "</article>");
    assert_eq!(text_of(ranked, "value pool"), "2");
    assert!(
        ranked.contains(&format!("data-round=\"{round_id}\"")),
        "the latest round in the queue's card:\n{ranked}"
    );
    assert!(
        part(&page, "data-queue=\"casual\"", "</article>").contains("no round yet"),
        "{page}"
    );
    // The latest rounds, newest first.
    let rounds = part(&page, "id=\"rounds\"", "</table>");
    assert_eq!(
        rounds.matches("data-round-row=").count(),
        3,
        "three rounds:\n{rounds}"
    );
    assert!(
        rounds.find(&format!("data-round-row=\"{round_id}\""))
            < rounds.find("data-round-row=\"1\""),
        "newest first:\n{rounds}"
    );
    // The plots the cards show are SVG drawn from those rounds.
    for (plot, title) in [
        ("pool", "Pool size per round"),
        ("waits", "Wait to match per round"),
    ] {
        let path = format!("/console/plot/ranked/{plot}.svg");
        assert!(
            page.contains(&format!("src=\"{path}?round={round_id}\"")),
            "{ranked}"
        );
        let svg = daemon.get(&path);
        assert_eq!(svg.status, 200, "{}", svg.body);
        assert!(
            svg.body.contains("<svg") && svg.body.contains(title),
            "{path}"
        );
    }

    // The round: each match with its score and factors, each left-over player and why.
    let panel = part(&page, "id=\"round-panel\"", "</section>");
    let matches: Vec<(i64, f64, serde_json::Value)> = sqlx::query_as(
        "SELECT match_id, score, factors FROM matches WHERE round_id = $1 ORDER BY match_id",
    )
    .bind(round_id)
    .fetch_all(db)
    .await
    .unwrap();
    assert!(!matches.is_empty());
    assert!(
        panel.contains(&format!("Round #{round_id} · ranked")),
        "{panel}"
    );
    for (match_id, score, factors) in &matches {
        assert!(
            panel.contains(&format!(
                "<td class=\"num\">{match_id}</td><td class=\"num\">{score:.4}</td>"
            )),
            "match {match_id} with its score {score:.4}:\n{panel}"
        );
        assert!(panel.contains(&format!("<th class=\"num\">#{match_id}</th>")));
        for (factor, value) in factors.as_object().unwrap() {
            let row = part(panel, &format!("<td>{factor}</td>"), "</tr>");
            assert!(
                row.contains(&format!("{:.3}", value.as_f64().unwrap())),
                "{factor} of match {match_id}: {row}"
            );
        }
    }
    let left_over: serde_json::Value =
        sqlx::query_scalar("SELECT left_over FROM round_snapshots WHERE round_id = $1")
            .bind(round_id)
            .fetch_one(db)
            .await
            .unwrap();
    for player in &queued {
        let why = &left_over[player.as_str()];
        assert!(
            panel.contains(&escaped(why["reason"].as_str().unwrap()))
                && panel.contains(&format!("data-player=\"{player}\"")),
            "{player} left over: {why}\n{panel}"
        );
    }

    // The player: why they wait, as `matchmaker explain` tells it.
    let explanation = matchmaker::ops::explain::explain_player(db, waiting, 10)
        .await
        .unwrap();
    let panel = part(&page, "id=\"player-panel\"", "</section>");
    assert!(panel.contains(&format!("Player {waiting}")), "{panel}");
    assert!(panel.contains("Waiting now: "), "{panel}");
    assert!(panel.contains("queued in ranked since"), "{panel}");
    let round = &explanation.rounds[0];
    assert_eq!(round.round_id, round_id);
    assert!(
        panel.contains(&format!(
            "{}</span>: {}",
            round.outcome,
            escaped(round.reason.as_deref().unwrap())
        )),
        "{:?}\n{panel}",
        round
    );
    assert!(
        panel.contains(&escaped(&matchmaker::ops::explain::render(&explanation))),
        "the explain text:\n{panel}"
    );

    // A matched player, opened by the hash alone.
    let (matched, match_id, team): (String, i64, i32) = sqlx::query_as(
        "SELECT player_id, match_id, team FROM queue_entries
          WHERE status = 'matched' ORDER BY player_id LIMIT 1",
    )
    .fetch_one(db)
    .await
    .unwrap();
    let page = dom(&daemon.url(&format!("/console#player={matched}")));
    let panel = part(&page, "id=\"player-panel\"", "</section>");
    assert!(
        panel.contains(&format!("matched: match {match_id}, team {team}")),
        "{panel}"
    );
    assert!(
        part(&page, "id=\"round-panel\"", ">").contains("hidden"),
        "no round asked for"
    );

    // What a person sees, as a picture.
    let shots = tempfile::tempdir().unwrap();
    let png = shots.path().join("console.png");
    browse(
        &url,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1400,1700",
        ],
    );
    let bytes = std::fs::read(&png).expect("the screenshot");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "a screenshot of {} bytes",
        bytes.len()
    );
    if let Some(keep) = std::env::var_os("CONSOLE_SCREENSHOT") {
        let keep = Path::new(env!("CARGO_MANIFEST_DIR")).join(keep);
        std::fs::write(&keep, &bytes).unwrap();
        eprintln!("screenshot written to {}", keep.display());
    }

    // Nothing but GET: every other method is refused before any read.
    for path in [
        "/console",
        "/console/api/status",
        &format!("/console/api/round/{round_id}"),
        &format!("/console/api/player/{waiting}"),
        "/console/plot/ranked/pool.svg",
        "/console/report",
    ] {
        for method in ["POST", "PUT", "DELETE", "PATCH"] {
            let answer = request(&daemon, method, path);
            assert_eq!(answer.status, 405, "{method} {path}: {answer:?}");
        }
        assert_eq!(request(&daemon, "GET", path).status, 200, "GET {path}");
    }
    // The page's reads ran on the console's own sessions, and those cannot write.
    let sessions = count(
        db,
        &format!(
            "SELECT count(*) FROM pg_stat_activity
              WHERE datname = current_database() AND application_name = '{APPLICATION_NAME}'"
        ),
    )
    .await;
    assert!(
        sessions >= 1,
        "no console session: the reads went elsewhere"
    );
    let console = read_only_pool(db);
    let read_only: String = sqlx::query_scalar("SHOW transaction_read_only")
        .fetch_one(&console)
        .await
        .unwrap();
    assert_eq!(read_only, "on");
    for write in [
        "UPDATE queue_entries SET status = 'cancelled'",
        "CREATE TABLE console_was_here (x int)",
    ] {
        let err = sqlx::query(sqlx::AssertSqlSafe(write))
            .execute(&console)
            .await
            .expect_err(write);
        assert_eq!(db_error(&err).0, "25006", "{write}: {err}");
    }
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM queue_entries WHERE status = 'queued'"
        )
        .await,
        2
    );
    console.close().await;
    drop(daemon);
}

#[test]
fn a_missing_browser_is_a_failure_that_says_what_to_install() {
    let err = find_browser(None, std::ffi::OsString::new()).unwrap_err();
    assert!(err.contains("apt-get install -y chromium"), "{err}");
    let bin = tempfile::tempdir().unwrap();
    std::fs::write(bin.path().join("chromium"), "").unwrap();
    assert_eq!(
        find_browser(None, bin.path().as_os_str().to_owned()),
        Ok(bin.path().join("chromium"))
    );
    assert_eq!(
        find_browser(Some("/opt/chrome".into()), std::ffi::OsString::new()),
        Ok(PathBuf::from("/opt/chrome"))
    );
}
