//! `matchmaker report` against real rounds: the page is self-contained, has one plot per
//! figure and queue, and its summary says what SQL on the rounds says.

use std::process::Command;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use matchmaker::config::Config;
use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::round::RoundRunner;
use matchmaker::db::{self, RoundTrigger};
use matchmaker::report::PLOTS_PER_QUEUE;

use crate::support::*;

fn report(url: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_matchmaker"))
        .arg("report")
        .args(["--database-url", url])
        .args(args)
        .output()
        .expect("run matchmaker report")
}

/// `data-value` of `field` in the summary row of `queue` (empty: no value).
fn summary_value(page: &str, queue: &str, field: &str) -> String {
    let row_start = page
        .find(&format!("<tr data-queue=\"{queue}\">"))
        .unwrap_or_else(|| panic!("no summary row for {queue}"));
    let row = &page[row_start..row_start + page[row_start..].find("</tr>").unwrap()];
    let key = format!("data-field=\"{field}\" data-value=\"");
    let at = row
        .find(&key)
        .unwrap_or_else(|| panic!("no {field} in {row}"))
        + key.len();
    row[at..at + row[at..].find('"').unwrap()].to_string()
}

fn number(page: &str, queue: &str, field: &str) -> f64 {
    let v = summary_value(page, queue, field);
    v.parse()
        .unwrap_or_else(|e| panic!("{field} = {v:?} in the page: {e}"))
}

fn assert_close(page_value: f64, sql_value: f64, what: &str) {
    assert!(
        (page_value - sql_value).abs() <= 1e-9 * sql_value.abs().max(1.0),
        "{what}: page {page_value}, SQL {sql_value}"
    );
}

/// No script, no stylesheet or image fetched, no link out of the page.
fn assert_self_contained(page: &str) {
    let lower = page.to_ascii_lowercase();
    for forbidden in [
        "<script", "<link", "<img", "<iframe", "@import", "url(", "src=",
    ] {
        assert!(!lower.contains(forbidden), "the page holds {forbidden:?}");
    }
    for (i, _) in lower.match_indices("href=") {
        let target = &lower[i + 5..i + 7];
        assert_eq!(
            target,
            "\"#",
            "only links within the page: {}",
            &page[i..i + 40]
        );
    }
}

/// Scheduled rounds of the config's queues, each at a time of the test's, on leases
/// held all along.
struct Rounds {
    runner: RoundRunner,
    clock: ManualClock,
    config: Config,
    leases: Vec<db::Lease>,
}

impl Rounds {
    /// A round of `queue` at `at`; it places every player of the test pool.
    async fn at(&self, queue: &str, at: DateTime<Utc>) {
        self.clock.set(at);
        let lease = self
            .leases
            .iter()
            .find(|l| l.queue == queue)
            .expect("leading");
        let config = Arc::new(self.config.queues[queue].clone());
        let report = self
            .runner
            .run(queue, config, RoundTrigger::Schedule, lease)
            .await
            .unwrap();
        assert_eq!(
            report.matched, 12,
            "every player of the test pool is placed"
        );
    }
}

#[tokio::test]
async fn report_of_real_rounds_is_self_contained_and_agrees_with_sql() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let config = Config::from_toml_str(
        "default_queue = \"q\"\n[queues.q]\n[queues.q.round]\nbudget = \"50ms\"\n\
         [queues.other]\n[queues.other.round]\nbudget = \"50ms\"\n",
    )
    .unwrap();
    let early = t0() - Duration::hours(2);
    let clock = ManualClock::new(early);
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let mut leases = Vec::new();
    for queue in ["q", "other"] {
        leases.push(
            db::acquire_lease(db, queue, "test", secs(86_400), Some(early))
                .await
                .unwrap()
                .expect("free lease"),
        );
    }
    let rounds = Rounds {
        runner,
        clock,
        config,
        leases,
    };

    // A round before the window, which the report must leave out.
    enqueue_n(db, "q", "a", 6, early).await;
    enqueue_n(db, "q", "b", 6, early).await;
    rounds.at("q", early + Duration::seconds(30)).await;

    // Five rounds of the same 12 players in the window (so opponents repeat), with
    // waits of 45 and 25 s, and one round of another queue.
    for r in 0..5 {
        let at = t0() + Duration::minutes(3 * r);
        enqueue_n(db, "q", "a", 6, at).await;
        enqueue_n(db, "q", "b", 6, at + Duration::seconds(20 + r)).await;
        rounds.at("q", at + Duration::seconds(45)).await;
    }
    enqueue_n(db, "other", "o", 12, t0()).await;
    rounds.at("other", t0() + Duration::minutes(14)).await;

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    let from = (t0() - Duration::hours(1)).to_rfc3339();
    let to = (t0() + Duration::hours(1)).to_rfc3339();
    let run = report(
        &tdb.url(),
        &[
            "--queue",
            "q",
            "--from",
            &from,
            "--to",
            &to,
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("5 rounds of 1 queue (q)"), "{stderr}");
    let page = std::fs::read_to_string(&out).unwrap();
    assert_self_contained(&page);
    assert_eq!(page.matches("<svg").count(), PLOTS_PER_QUEUE);
    assert!(!page.contains("data-queue=\"other\""));

    // The summary against SQL over the same window.
    let (rounds, matches, matched, mean_score): (i64, i64, i64, f64) = sqlx::query_as(
        "SELECT count(*), sum(match_count)::int8, sum(matched)::int8, avg(score)
           FROM rounds WHERE queue = 'q' AND committed_at >= $1 AND committed_at < $2",
    )
    .bind(t0() - Duration::hours(1))
    .bind(t0() + Duration::hours(1))
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(
        (rounds, matched),
        (5, 60),
        "the round before the window is left out"
    );
    let (p50, p90): (f64, f64) = sqlx::query_as(
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY w),
                percentile_cont(0.9) WITHIN GROUP (ORDER BY w)
           FROM (SELECT extract(epoch FROM mp.matched_at - mp.enqueued_at)::float8 AS w
                   FROM rounds r
                   JOIN matches m ON m.round_id = r.round_id
                   JOIN match_players mp ON mp.match_id = m.match_id
                  WHERE r.queue = 'q' AND r.committed_at >= $1 AND r.committed_at < $2) t",
    )
    .bind(t0() - Duration::hours(1))
    .bind(t0() + Duration::hours(1))
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(number(&page, "q", "rounds"), rounds as f64);
    assert_eq!(number(&page, "q", "matches"), matches as f64);
    assert_eq!(number(&page, "q", "players_matched"), matched as f64);
    assert_close(
        number(&page, "q", "mean_round_score"),
        mean_score,
        "mean round score",
    );
    assert_close(number(&page, "q", "wait_p50_s"), p50, "median wait");
    assert_close(number(&page, "q", "wait_p90_s"), p90, "p90 wait");
    assert!(
        p50 > 20.0 && p90 > p50,
        "waits of 45 and ~25 s: {p50} {p90}"
    );
    // The same 12 players met again in every round after the first of the window (and
    // the first met them before the window): some opponent pairs repeat.
    assert!(number(&page, "q", "repeat_share") > 0.0);

    // Every queue: one section each, in the same page.
    let all = dir.path().join("all.html");
    let run = report(
        &tdb.url(),
        &["--from", &from, "--to", &to, "--out", all.to_str().unwrap()],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let page = std::fs::read_to_string(&all).unwrap();
    assert_self_contained(&page);
    assert_eq!(page.matches("<svg").count(), 2 * PLOTS_PER_QUEUE);
    assert_eq!(number(&page, "other", "rounds"), 1.0);
    assert_eq!(number(&page, "other", "players_matched"), 12.0);

    // A window without rounds still writes a page that says so.
    let empty = dir.path().join("empty.html");
    let run = report(
        &tdb.url(),
        &[
            "--from",
            "2020-01-01",
            "--to",
            "2020-01-02",
            "--out",
            empty.to_str().unwrap(),
        ],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let page = std::fs::read_to_string(&empty).unwrap();
    assert!(page.contains("No round was committed in this window"));
    assert_eq!(page.matches("<svg").count(), 0);

    // Bad input: one line that names the argument, and no file.
    let bad = dir.path().join("bad.html");
    let run = report(
        &tdb.url(),
        &["--from", "yesterday", "--out", bad.to_str().unwrap()],
    );
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("--from: \"yesterday\" is not a time"),
        "{stderr}"
    );
    assert!(!bad.exists());
}
