//! The tests' helpers are the test kit's (`testkit/`): the private PostgreSQL, the client,
//! game server and daemon helpers, the invariants and the audit.

pub use matchmaker_testkit::*;

use sqlx::PgPool;

/// The audit of a run in which nobody cancelled (`entries`: every entry enqueued), which
/// must find no violation.
pub async fn audit_clean(db: &PgPool, entries: &[i64]) -> audit::Audit {
    let expected = audit::Expected {
        entries,
        cancelled_players: &[],
    };
    let clean = audit::audit(db, expected).await.unwrap();
    assert_eq!(clean.violation_count(), 0, "{clean}");
    clean
}
