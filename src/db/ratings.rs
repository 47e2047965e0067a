//! Results applied to ratings: the reads and writes of one application, inside the
//! transaction the daemon runs it in (`daemon::ratings`). The pool's `rating_pools` row,
//! locked first, makes applications of one pool take turns (queues of one pool may have
//! different leaders); the results are marked applied in the transaction that writes
//! their ratings, and `rating_changes` is keyed by result and player: a result moves
//! ratings once.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::DbError;

/// A reported result not yet applied, with its players.
#[derive(Debug, Clone)]
pub struct PendingResult {
    pub match_id: i64,
    /// Rank of each team, in ascending team order.
    pub team_ranks: Vec<i32>,
    pub seats: Vec<ResultSeat>,
}

/// One player of a pending result.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ResultSeat {
    pub match_id: i64,
    pub entry_id: i64,
    pub team: i32,
    pub owner: String,
    pub player_id: String,
    pub left_early: bool,
}

/// A stored rating.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredRating {
    pub owner: String,
    pub player_id: String,
    pub rating: f64,
    pub uncertainty: f64,
    pub volatility: f64,
    pub matches: i32,
    pub updated_at: DateTime<Utc>,
}

/// What applying one result did to one player.
#[derive(Debug, Clone)]
pub struct RatingChange {
    pub match_id: i64,
    pub entry_id: i64,
    pub owner: String,
    pub player_id: String,
    pub team: i32,
    pub left_early: bool,
    pub before: (f64, f64),
    pub after: (f64, f64),
    pub volatility: f64,
}

/// Lock `pool`'s row for this transaction; false: the pool is not published (no rated
/// queue has run yet), nothing to apply.
pub async fn lock_pool(tx: &mut PgConnection, pool: &str) -> Result<bool, DbError> {
    Ok(
        sqlx::query_scalar::<_, i32>("SELECT 1 FROM rating_pools WHERE pool = $1 FOR UPDATE")
            .bind(pool)
            .fetch_optional(&mut *tx)
            .await?
            .is_some(),
    )
}

/// Up to `limit` unapplied results of `pool`, in report order, with their players and
/// those players' stored ratings.
pub async fn pending_results(
    tx: &mut PgConnection,
    pool: &str,
    limit: i64,
) -> Result<(Vec<PendingResult>, HashMap<(String, String), StoredRating>), DbError> {
    let heads: Vec<(i64, Vec<i32>)> =
        sqlx::query_as(include_str!("sql/ratings_pending_results.sql"))
            .bind(pool)
            .bind(limit)
            .fetch_all(&mut *tx)
            .await?;
    if heads.is_empty() {
        return Ok((Vec::new(), HashMap::new()));
    }
    let ids: Vec<i64> = heads.iter().map(|(id, _)| *id).collect();
    let seats: Vec<ResultSeat> = sqlx::query_as(include_str!("sql/result_seats.sql"))
        .bind(&ids)
        .fetch_all(&mut *tx)
        .await?;
    let owners: Vec<&str> = seats.iter().map(|s| s.owner.as_str()).collect();
    let players: Vec<&str> = seats.iter().map(|s| s.player_id.as_str()).collect();
    let stored: Vec<StoredRating> = sqlx::query_as(include_str!("sql/ratings_stored.sql"))
        .bind(pool)
        .bind(&owners)
        .bind(&players)
        .fetch_all(&mut *tx)
        .await?;
    let mut by_match: HashMap<i64, Vec<ResultSeat>> = HashMap::new();
    for s in seats {
        by_match.entry(s.match_id).or_default().push(s);
    }
    let results = heads
        .into_iter()
        .map(|(match_id, team_ranks)| PendingResult {
            match_id,
            team_ranks,
            seats: by_match.remove(&match_id).unwrap_or_default(),
        })
        .collect();
    let stored = stored
        .into_iter()
        .map(|r| ((r.owner.clone(), r.player_id.clone()), r))
        .collect();
    Ok((results, stored))
}

/// Write the changes of the applied results (each player's last change is their rating
/// now) and mark the results applied at `now`; `refused` holds the results the model
/// could not rate, with why.
pub async fn write_applied(
    tx: &mut PgConnection,
    pool: &str,
    changes: &[RatingChange],
    applied: &[i64],
    refused: &[(i64, String)],
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    // Each player's final rating and how many of these results they played.
    let mut last: HashMap<(&str, &str), (&RatingChange, i32)> = HashMap::new();
    for c in changes {
        let e = last
            .entry((c.owner.as_str(), c.player_id.as_str()))
            .or_insert((c, 0));
        e.0 = c;
        e.1 += 1;
    }
    let finals: Vec<&(&RatingChange, i32)> = last.values().collect();
    sqlx::query(include_str!("sql/ratings_write.sql"))
        .bind(pool)
        .bind(
            finals
                .iter()
                .map(|(c, _)| c.owner.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(
            finals
                .iter()
                .map(|(c, _)| c.player_id.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(finals.iter().map(|(c, _)| c.after.0).collect::<Vec<_>>())
        .bind(finals.iter().map(|(c, _)| c.after.1).collect::<Vec<_>>())
        .bind(finals.iter().map(|(c, _)| c.volatility).collect::<Vec<_>>())
        .bind(finals.iter().map(|(_, n)| *n).collect::<Vec<_>>())
        .bind(now)
        .execute(&mut *tx)
        .await?;
    sqlx::query(include_str!("sql/ratings_write_changes.sql"))
        .bind(pool)
        .bind(changes.iter().map(|c| c.match_id).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.entry_id).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.owner.as_str()).collect::<Vec<_>>())
        .bind(
            changes
                .iter()
                .map(|c| c.player_id.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(changes.iter().map(|c| c.team).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.left_early).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.before.0).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.before.1).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.after.0).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.after.1).collect::<Vec<_>>())
        .bind(now)
        .execute(&mut *tx)
        .await?;
    let refused_ids: Vec<i64> = refused.iter().map(|(id, _)| *id).collect();
    let reasons: Vec<&str> = refused.iter().map(|(_, why)| why.as_str()).collect();
    sqlx::query(include_str!("sql/ratings_mark_applied.sql"))
        .bind(applied)
        .bind(&refused_ids)
        .bind(now)
        .bind(&reasons)
        .execute(&mut *tx)
        .await?;
    Ok(())
}
