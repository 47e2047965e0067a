//! The private PostgreSQL used by tests and by `matchmaker run` without a database.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use matchmaker::db::local_pg::{LocalPgError, LocalPostgres};
use sqlx::Connection;

use crate::support::{server_base_dir, server_parent};

fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Whether the `postgres` user (the server's user of a root run) can read `path`:
/// `access(2)` checks every parent directory on the way.
fn postgres_user_reads(path: &Path) -> bool {
    Command::new("runuser")
        .args(["-u", "postgres", "--", "test", "-r"])
        .arg(path)
        .current_dir("/")
        .status()
        .expect("runuser")
        .success()
}

#[tokio::test]
async fn persistent_server_keeps_its_data_across_restarts() {
    // Beside the test servers (not in the checkout, which the server's user of a root
    // run may not be able to enter), and open to that user on the way in.
    let dir = tempfile::Builder::new()
        .prefix("mm-persistent-")
        .tempdir_in(server_parent())
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.path().join("pg");
    let server = LocalPostgres::start_persistent(&data).await.expect("start");
    let port = server.port();
    let mut conn = sqlx::PgConnection::connect(&server.url()).await.unwrap();
    sqlx::raw_sql("CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    server.stop().await.expect("stop");

    let server = LocalPostgres::start_persistent(&data)
        .await
        .expect("restart");
    assert_eq!(server.port(), port, "a restart keeps the port");
    let mut conn = sqlx::PgConnection::connect(&server.url()).await.unwrap();
    let x: i32 = sqlx::query_scalar("SELECT x FROM kept")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(x, 42);
    conn.close().await.unwrap();
    server.stop().await.expect("stop");
    assert!(
        data.join("data").join("PG_VERSION").exists(),
        "data dir kept"
    );
}

/// The remembered port is given up only when another program holds it, and the new one
/// is remembered in its place.
#[tokio::test]
async fn persistent_server_moves_off_a_taken_port_and_keeps_the_new_one() {
    let dir = tempfile::Builder::new()
        .prefix("mm-port-")
        .tempdir_in(server_parent())
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.path().join("pg");
    let server = LocalPostgres::start_persistent(&data).await.expect("start");
    let first = server.port();
    server.stop().await.expect("stop");

    let squatter = std::net::TcpListener::bind(("127.0.0.1", first)).expect("take the port");
    let server = LocalPostgres::start_persistent(&data)
        .await
        .expect("start beside the squatter");
    let second = server.port();
    assert_ne!(second, first, "the taken port is not used");
    sqlx::PgConnection::connect(&server.url())
        .await
        .expect("the server answers on its new port")
        .close()
        .await
        .unwrap();
    server.stop().await.expect("stop");
    drop(squatter);

    let server = LocalPostgres::start_persistent(&data)
        .await
        .expect("restart");
    assert_eq!(server.port(), second, "the new port is the one remembered");
    server.stop().await.expect("stop");
}

/// A checkout in a directory only root can enter (a clone under /root, or in `mktemp -d`)
/// must not put test servers under the checkout's target dir (`initdb: could not access
/// directory ... Permission denied`): the shared test server lives under the system temp
/// dir instead, and its user reads its files.
#[test]
fn the_test_server_lives_where_its_user_can_reach_it_not_in_the_checkout() {
    let Some(base) = server_base_dir() else {
        assert!(
            std::env::var_os("DATABASE_URL").is_some(),
            "no private server only when the tests use DATABASE_URL"
        );
        return;
    };
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(
        !base.starts_with(checkout),
        "{base:?} is inside the checkout"
    );
    assert!(
        base.starts_with(std::env::temp_dir()),
        "{base:?} is not under the system temp dir"
    );
    let version = base.join("data").join("PG_VERSION");
    assert!(version.exists(), "{version:?}");
    if running_as_root() {
        assert!(
            postgres_user_reads(&version),
            "postgres cannot read {version:?}"
        );
        let mode = std::fs::metadata(&base).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "the server's directory is its user's alone");
    }
}

/// A server directory its user cannot reach is refused before initdb, with the fix in
/// the message; a directory of our own is fine when the server runs as ourselves.
#[tokio::test]
async fn a_directory_the_server_user_cannot_enter_is_refused_with_the_fix() {
    // Like a clone in `mktemp -d`: mode 0700, ours.
    let closed = tempfile::Builder::new()
        .prefix("mm-closed-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(closed.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let data = closed.path().join("pg");
    let result = LocalPostgres::start_persistent(&data).await;
    if running_as_root() {
        let err = result.expect_err("postgres cannot enter a 0700 directory of root's");
        assert!(matches!(err, LocalPgError::Unreachable { .. }), "{err}");
        let text = err.to_string();
        for fix in ["TMPDIR", "--local-pg-dir", "DATABASE_URL", "cannot enter"] {
            assert!(text.contains(fix), "{fix:?} missing: {text}");
        }
        assert!(!data.exists(), "nothing left behind: {data:?}");
        let err = tokio::task::spawn_blocking({
            let parent = closed.path().to_path_buf();
            move || LocalPostgres::start_temporary_in_blocking(&parent)
        })
        .await
        .unwrap()
        .expect_err("a temporary server there is refused too");
        assert!(matches!(err, LocalPgError::Unreachable { .. }), "{err}");
    } else {
        // Not root: the server runs as ourselves, who can enter our own directory.
        let server = result.expect("our own 0700 directory is fine for our own server");
        server.stop().await.expect("stop");
    }
}
