//! The shipped roles, used as the docs say: the operators' commands run as a
//! `matchmaker_ops` login and refuse a client login with one line naming the role. (The
//! lab's `simulate` as a `matchmaker_client` login is in `lab/tests/lab/trial.rs`.)

use std::process::Command;

use crate::support::*;

/// `matchmaker ARGS` with DATABASE_URL = `url`: (success, stdout, stderr).
fn matchmaker(url: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_matchmaker"))
        .args(args)
        .env("DATABASE_URL", url)
        .env("NO_COLOR", "1")
        .output()
        .expect("run matchmaker");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn ops_commands_run_as_an_ops_login_and_name_the_role_to_a_client_login() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let report = round_of_thirteen(db).await;
    assert_eq!(report.matched, 12);
    let round = report.round_id.to_string();

    let ops = tdb.url_as(&ops_login(&tdb).await);
    let (client, client_pool) = client_login(&tdb, 1).await;
    client_pool.close().await;
    let client_url = tdb.url_as(&client);
    let commands: [&[&str]; 4] = [
        &["status", "--once"],
        &["explain", "p0"],
        &["report", "--from", "2000-01-01 00:00", "--out", "-"],
        &["replay", &round],
    ];
    for args in commands {
        let (ok, out, err) = matchmaker(&ops, args);
        assert!(ok, "{args:?} as an ops login: {err}");
        assert!(!out.is_empty(), "{args:?} printed nothing");

        let (ok, out, err) = matchmaker(&client_url, args);
        assert!(!ok, "{args:?} as a client login succeeded: {out}");
        assert_eq!(
            err,
            format!(
                "error: {} needs a login in role matchmaker_ops (or matchmaker_daemon); \
                 this login ({client}) may only use the client API\n",
                args[0]
            ),
            "{args:?} as a client login"
        );
    }
}

#[tokio::test]
async fn prune_runs_as_a_daemon_login_and_refuses_an_ops_login_before_printing_anything() {
    let tdb = fresh_db().await;
    let report = round_of_thirteen(&tdb.pool).await;
    assert_eq!(report.matched, 12);
    let daemon = tdb.url_as(&login_in_role(&tdb, "daemon", "matchmaker_daemon").await);
    let ops = tdb.url_as(&ops_login(&tdb).await);
    for args in [
        &["prune", "--horizon", "1h", "--dry-run"][..],
        &["prune", "--horizon", "1h"][..],
    ] {
        let (ok, out, err) = matchmaker(&ops, args);
        assert!(!ok, "{args:?} as an ops login succeeded: {out}");
        assert_eq!(out, "", "{args:?} as an ops login printed before refusing");
        assert!(
            err.starts_with("error: prune deletes history and needs a login in role matchmaker_daemon; login mm_ops_")
                && err.contains("may not delete from rounds, matches, match_players"),
            "{args:?} as an ops login: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");

        let (ok, out, err) = matchmaker(&daemon, args);
        assert!(ok, "{args:?} as a daemon login: {err}");
        assert!(out.contains("total"), "{args:?} printed no total: {out}");
    }
}
