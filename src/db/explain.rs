//! The reads behind `matchmaker explain PLAYER`: the rounds that pooled a player and what
//! became of them, and the player's latest entries. The same rows, for SQL: the
//! `player_rounds` view (operators only).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

/// One round that pooled the player.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct PlayerRound {
    pub queue: String,
    pub round_id: i64,
    pub committed_at: DateTime<Utc>,
    pub pool_size: i32,
    /// `matched`, or a left-over outcome (no_valid_match, outscored, not_found,
    /// party_sat_out, rejected, left_during_solve, match_dropped).
    pub outcome: String,
    pub match_id: Option<i64>,
    pub team: Option<i32>,
    pub reason: Option<String>,
}

/// One of the player's entries.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct PlayerEntry {
    pub entry_id: i64,
    pub queue: String,
    pub status: String,
    pub reason: Option<String>,
    pub enqueued_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The player's built-in rating in one pool, and how their last results moved it.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct PlayerRating {
    pub owner: String,
    pub pool: String,
    pub rating: f64,
    pub uncertainty: f64,
    pub matches: i32,
    pub updated_at: DateTime<Utc>,
    /// The last results applied, newest first: (match, rating before, after, left early).
    #[sqlx(json)]
    pub recent: Vec<(i64, f64, f64, bool)>,
}

/// The player's ratings (every login's player of that id), each with its last five
/// applied results.
pub async fn read_player_ratings(
    db: &PgPool,
    player: &str,
) -> Result<Vec<PlayerRating>, sqlx::Error> {
    sqlx::query_as(include_str!("sql/explain_player_ratings.sql"))
        .bind(player)
        .fetch_all(db)
        .await
}

/// The player's last `limit` rounds, newest first.
pub async fn read_player_rounds(
    db: &PgPool,
    player: &str,
    limit: i64,
) -> Result<Vec<PlayerRound>, sqlx::Error> {
    // The two halves of the player_rounds view, each through its index: the player's
    // entries (queue_entries_player_latest) and `left_over ? player` (GIN).
    sqlx::query_as(include_str!("sql/explain_player_rounds.sql"))
        .bind(player)
        .bind(limit)
        .fetch_all(db)
        .await
}

/// The player's five latest entries, newest first: what happened outside rounds.
pub async fn read_player_entries(
    db: &PgPool,
    player: &str,
) -> Result<Vec<PlayerEntry>, sqlx::Error> {
    sqlx::query_as(include_str!("sql/explain_player_entries.sql"))
        .bind(player)
        .fetch_all(db)
        .await
}
