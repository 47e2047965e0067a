//! The private PostgreSQL used by tests and by `matchmaker run` without a database.

use matchmaker::db::local_pg::LocalPostgres;
use sqlx::Connection;

#[tokio::test]
async fn persistent_server_keeps_its_data_across_restarts() {
    let dir = tempfile::Builder::new()
        .prefix("mm-persistent-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let data = dir.path().join("pg");
    let server = LocalPostgres::start_persistent(&data).await.expect("start");
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
