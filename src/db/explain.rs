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
    sqlx::query_as(
        "SELECT r.owner, r.pool, r.rating, r.uncertainty, r.matches, r.updated_at,
                coalesce((SELECT jsonb_agg(jsonb_build_array(c.match_id, c.rating_before,
                                                             c.rating_after, c.left_early)
                                           ORDER BY c.match_id DESC)
                            FROM (SELECT * FROM rating_changes c
                                   WHERE c.owner = r.owner AND c.player_id = r.player_id
                                     AND c.pool = r.pool
                                   ORDER BY c.match_id DESC LIMIT 5) c), '[]') AS recent
           FROM ratings r
          WHERE r.player_id = $1
          ORDER BY r.owner, r.pool",
    )
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
    sqlx::query_as(
        "(SELECT r.queue, r.round_id, r.committed_at, r.pool_size, 'matched' AS outcome,
                 e.match_id, e.team, NULL::text AS reason
            FROM queue_entries e JOIN rounds r ON r.round_id = e.round_id
           WHERE e.player_id = $1 AND e.status = 'matched')
         UNION ALL
         (SELECT r.queue, r.round_id, r.committed_at, r.pool_size,
                 s.left_over -> $1 ->> 'outcome', NULL, NULL, s.left_over -> $1 ->> 'reason'
            FROM round_snapshots s JOIN rounds r USING (round_id)
           WHERE s.left_over ? $1)
         ORDER BY round_id DESC
         LIMIT $2",
    )
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
    sqlx::query_as(
        "SELECT entry_id, queue, status, reject_reason AS reason, enqueued_at, updated_at
           FROM queue_entries WHERE player_id = $1
          ORDER BY entry_id DESC LIMIT 5",
    )
    .bind(player)
    .fetch_all(db)
    .await
}
