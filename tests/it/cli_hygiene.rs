//! Start-up and CLI hygiene: a missing or older schema is refused with one line naming
//! the fix, database errors print once and without the server's `at line N`, and no
//! password shows in `--help`.

use matchmaker_testkit::command_line::{subcommands, text};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use matchmaker::db::{self, DbError};
use matchmaker::ops::error_report;

use crate::support::{fresh_db, unmigrated_db};

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_matchmaker"))
}

/// Runs the command to its end, killing it (and failing the test) after `limit`.
fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start matchmaker");
    let started = Instant::now();
    while child.try_wait().expect("poll matchmaker").is_none() {
        if started.elapsed() > limit {
            child.kill().ok();
            let out = child.wait_with_output().expect("collect output");
            panic!(
                "still running after {limit:?}; stderr:\n{}",
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("collect output")
}

#[test]
fn cli_help_never_shows_the_database_password() {
    let url = "postgres://u:SECRETPW@127.0.0.1:1/x";
    let mut runs = Vec::new();
    for bin in [cli as fn() -> Command] {
        runs.push((bin, vec!["--help".to_string()]));
        for name in subcommands(bin) {
            runs.push((bin, vec![name, "--help".into()]));
        }
    }
    for (bin, args) in runs {
        let out = bin()
            .args(&args)
            .env("DATABASE_URL", url)
            .output()
            .expect("run --help");
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let all = text(&out.stdout) + &text(&out.stderr);
        assert!(
            !all.contains("SECRETPW"),
            "{args:?} shows the password:\n{all}"
        );
    }
    // The env var is still named, only its value is hidden.
    let out = cli()
        .args(["run", "--help"])
        .env("DATABASE_URL", url)
        .output()
        .unwrap();
    assert!(text(&out.stdout).contains("[env: DATABASE_URL]"));
}

#[tokio::test]
async fn cli_run_no_migrate_refuses_an_unmigrated_database_with_one_line() {
    let bare = unmigrated_db().await;
    let url = bare.url();
    let out = output_within(
        cli().args(["run", "--no-migrate", "--database-url", &url]),
        Duration::from_secs(15),
    );
    bare.drop_now().await;
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "must exit non-zero:\n{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "one error line:\n{stderr}");
    assert!(errors[0].contains("not migrated"), "{stderr}");
    assert!(
        errors[0].contains("matchmaker migrate"),
        "names the fix:\n{stderr}"
    );
    assert!(!stderr.contains("at line"), "{stderr}");
}

#[tokio::test]
async fn cli_status_prints_the_schema_error_once() {
    let bare = unmigrated_db().await;
    let url = bare.url();
    let out = output_within(
        cli().args(["status", "--once", "--database-url", &url]),
        Duration::from_secs(15),
    );
    bare.drop_now().await;
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "must exit non-zero:\n{stderr}");
    assert_eq!(stderr.matches("not migrated").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("matchmaker migrate").count(), 1, "{stderr}");
    assert!(!stderr.contains("at line"), "{stderr}");
    assert!(text(&out.stdout).is_empty(), "no view is printed");
}

#[tokio::test]
async fn cli_refuses_a_schema_older_than_the_binary() {
    let db = fresh_db().await;
    let latest = db::MIGRATOR
        .iter()
        .map(|m| m.version)
        .max()
        .expect("migrations are embedded");
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = $1")
        .bind(latest)
        .execute(&db.pool)
        .await
        .unwrap();
    match db::check_schema(&db.pool).await {
        Err(DbError::SchemaBehind { missing, .. }) => assert_eq!(missing, vec![latest]),
        other => panic!("expected SchemaBehind, got {other:?}"),
    }
    // While the baseline is the only migration, a database without it has none of this
    // binary's migrations: "not migrated". From the next migration on: "behind".
    let only_baseline = db::MIGRATOR.iter().count() == 1;
    let state = if only_baseline {
        "not migrated"
    } else {
        "behind this binary"
    };
    let url = db.url();
    for args in [
        vec!["status", "--once", "--database-url", &url],
        vec!["run", "--no-migrate", "--database-url", &url],
    ] {
        let out = output_within(cli().args(&args), Duration::from_secs(15));
        let stderr = text(&out.stderr);
        assert!(
            !out.status.success(),
            "{args:?} must exit non-zero:\n{stderr}"
        );
        assert_eq!(stderr.matches(state).count(), 1, "{stderr}");
        assert!(
            only_baseline || stderr.contains(&format!("not applied: {latest})")),
            "names the missing migration:\n{stderr}"
        );
        assert!(stderr.contains("matchmaker migrate"), "{stderr}");
    }
}

#[tokio::test]
async fn cli_newer_schema_is_accepted() {
    let db = fresh_db().await;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES (999999, 'from a newer binary', true, '\\x00', 0)",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    let check = db::check_schema(&db.pool)
        .await
        .expect("a newer schema is usable");
    assert_eq!(check.newer, vec![999999]);
    let out = output_within(
        cli().args(["status", "--once", "--database-url", &db.url()]),
        Duration::from_secs(15),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[tokio::test]
async fn cli_database_errors_print_once_without_server_source_lines() {
    let db = fresh_db().await;
    let err = sqlx::query("SELECT * FROM no_such_table")
        .execute(&db.pool)
        .await
        .expect_err("the table does not exist");
    // sqlx's own rendering carries the server's C source line.
    assert!(err.to_string().contains("at line"), "{err}");

    let line = DbError::from(err).to_string();
    assert_eq!(
        line,
        "relation \"no_such_table\" does not exist (SQLSTATE 42P01)"
    );

    let err = sqlx::query("SELECT * FROM no_such_table")
        .execute(&db.pool)
        .await
        .expect_err("the table does not exist");
    let report = error_report(&anyhow::Error::from(err).context("reading the status"));
    assert_eq!(
        report,
        "reading the status: relation \"no_such_table\" does not exist (SQLSTATE 42P01)"
    );

    // Wrapped in DbError and then in anyhow, still once.
    let err = sqlx::query("SELECT * FROM no_such_table")
        .execute(&db.pool)
        .await
        .expect_err("the table does not exist");
    let report = error_report(&anyhow::Error::from(DbError::from(err)));
    assert_eq!(report.matches("does not exist").count(), 1, "{report}");
}

/// One Ctrl-C ends `status`, wherever the view is in its loop: the signal is listened to
/// for the whole command, not only while it sleeps between frames. Each run sends one
/// SIGINT at a different moment of a fast refresh and requires a prompt, clean exit.
#[tokio::test]
async fn cli_status_quits_at_the_first_ctrl_c() {
    use std::io::Read;

    let tdb = fresh_db().await;
    for run in 0..6u64 {
        let mut child = cli()
            .args(["status", "--database-url", &tdb.url(), "--interval", "10ms"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start matchmaker status");
        // The first frame: the view runs (and listens).
        let mut stdout = child.stdout.take().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("refresh every") {
            let n = stdout.read(&mut buf).expect("read the view");
            if n == 0 {
                let out = child.wait_with_output();
                panic!("status ended before its first frame: {out:?}");
            }
            seen.extend_from_slice(&buf[..n]);
        }
        let drain = std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        std::thread::sleep(Duration::from_millis(7 * run));
        let sent = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "SIGINT sent");
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("poll status") {
                break status;
            }
            if started.elapsed() > Duration::from_secs(5) {
                child.kill().ok();
                child.wait().ok();
                panic!("run {run}: status ignored one Ctrl-C for 5 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        drain.join().unwrap().ok();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .ok();
        assert!(
            status.success(),
            "run {run}: Ctrl-C ends the view cleanly: {status}, {stderr}"
        );
    }
}
