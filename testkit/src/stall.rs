//! A writer stopped inside its transaction, for the fault tests to kill: the first
//! INSERT statement into a table sleeps while the table `stall` has a row, so a leader
//! is caught between two of its transaction's writes.

use sqlx::PgPool;

/// Every INSERT statement into `table` (a table name the test writes, never input)
/// stalls (`pg_sleep(60)`) until [`release_stall`].
pub async fn stall_inserts_into(db: &PgPool, table: &str) {
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE stall (on_ boolean);
         INSERT INTO stall VALUES (true);
         CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             IF EXISTS (SELECT 1 FROM stall) THEN PERFORM pg_sleep(60); END IF;
             RETURN NULL;
         END $$;
         CREATE TRIGGER stall BEFORE INSERT ON {table}
             FOR EACH STATEMENT EXECUTE FUNCTION stall();"
    )))
    .execute(db)
    .await
    .unwrap_or_else(|e| panic!("stall inserts into {table}: {e}"));
}

/// The backend stalled by [`stall_inserts_into`], once one is (within the time limit):
/// `what` names it in the failure.
pub async fn stalled_backend(db: &PgPool, what: &str) -> i32 {
    crate::time_limit::within(what, async {
        loop {
            let pid: Option<i32> = sqlx::query_scalar(
                "SELECT pid FROM pg_stat_activity
                  WHERE datname = current_database() AND wait_event = 'PgSleep'",
            )
            .fetch_optional(db)
            .await
            .unwrap();
            if let Some(pid) = pid {
                return pid;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
}

/// Kill the backend `pid` (its transaction rolls back).
pub async fn kill_backend(db: &PgPool, pid: i32) {
    sqlx::query("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .execute(db)
        .await
        .unwrap();
}

/// Inserts run on again.
pub async fn release_stall(db: &PgPool) {
    sqlx::query("DELETE FROM stall").execute(db).await.unwrap();
}
