//! `matchmaker migrate`: apply the embedded migrations (`run` does too at start-up).

use sqlx::PgPool;

use crate::db;

/// One migration the database has applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub version: i64,
    pub description: String,
}

/// Apply the pending migrations; every migration applied so far, oldest first.
pub async fn migrate(db: &PgPool) -> anyhow::Result<Vec<Applied>> {
    db::migrate(db).await?;
    let applied: Vec<(i64, String)> =
        sqlx::query_as("SELECT version, description FROM _sqlx_migrations ORDER BY version")
            .fetch_all(db)
            .await?;
    Ok(applied
        .into_iter()
        .map(|(version, description)| Applied {
            version,
            description,
        })
        .collect())
}
