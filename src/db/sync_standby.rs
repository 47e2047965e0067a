//! Commits held by a synchronous standby. On a primary with `synchronous_standby_names`
//! set, a commit returns only once a standby has flushed its WAL. A standby that stops
//! flushing but stays connected and healthy to its HA manager (a stalled disk under its
//! WAL receiver) holds every commit, which the daemon sees only as passes that are not
//! answered. Asked after such a pass, this names the cause.

use std::time::Duration;

use sqlx::PgPool;

use super::{DbError, answered_within};

/// How long the question may take: it is asked when the database is already slow.
const ASK_LIMIT: Duration = Duration::from_secs(2);

/// How many of this login's sessions wait for a synchronous standby to confirm their
/// commit. A read: it waits for no standby itself.
pub async fn commits_waiting_for_standby(db: &PgPool) -> Result<i64, DbError> {
    answered_within(ASK_LIMIT, async {
        Ok(
            sqlx::query_scalar(include_str!("sql/sync_standby_waiting.sql"))
                .fetch_one(db)
                .await?,
        )
    })
    .await
}
