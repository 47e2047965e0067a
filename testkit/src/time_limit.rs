//! Time limits for tests that wait, so that a lock regression or a daemon that never
//! answers fails the test instead of hanging CI. Generous: CI runs the whole suite on two
//! shared cores.

use std::future::Future;
use std::time::{Duration, Instant};

use sqlx::PgConnection;

/// The longest a statement of a test database may run or wait for a lock.
pub const STATEMENT_LIMIT: &str = "60s";

/// The longest a test waits for one thing (a daemon, a notification, a round, a state).
pub const WAIT_LIMIT: Duration = Duration::from_secs(120);

/// Bounds every session of database `name` with `lock_timeout` and `statement_timeout`
/// ([`STATEMENT_LIMIT`]). Database defaults: a login's own setting (`ALTER ROLE ... SET`)
/// and a session's (`SET`, the daemon's connect options) still take precedence.
pub async fn limit_statements(admin: &mut PgConnection, name: &str) {
    for setting in ["lock_timeout", "statement_timeout"] {
        let sql = format!("ALTER DATABASE {name} SET {setting} = '{STATEMENT_LIMIT}'");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&mut *admin)
            .await
            .unwrap_or_else(|e| panic!("set {setting} on {name}: {e}"));
    }
}

/// The output of `future`, or a panic naming `what` after [`WAIT_LIMIT`].
pub async fn within<F: Future>(what: &str, future: F) -> F::Output {
    within_for(WAIT_LIMIT, what, future).await
}

/// The output of `future`, or a panic naming `what` after `limit`.
pub async fn within_for<F: Future>(limit: Duration, what: &str, future: F) -> F::Output {
    match tokio::time::timeout(limit, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {limit:?} waiting for {what}"),
    }
}

/// Polls `check` every 50 ms until it holds; panics naming `what` after [`WAIT_LIMIT`].
pub async fn wait_until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(
            started.elapsed() < WAIT_LIMIT,
            "timed out after {WAIT_LIMIT:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
