//! The client side of the enqueue contract, in Rust (tests, the simulator's load
//! generator, `matchmaker bench-db`). Any client may do the same with plain SQL:
//!
//! ```sql
//! INSERT INTO queue_entries (queue, player_id, party_id, skill, latencies)
//! VALUES ('ranked_3v3', 'p1', NULL, 1500, '{"eu-west": 23}');
//! UPDATE queue_entries SET status = 'cancelled'
//!  WHERE queue = 'ranked_3v3' AND player_id = 'p1' AND status = 'queued';
//! ```

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;

use super::DbError;
use crate::core::Player;

/// Enqueue one player (`enqueued_at`: the player's own, else the database's now()).
/// Bad values are refused by the table's constraints with the rule's name.
pub async fn enqueue<'e>(
    db: impl PgExecutor<'e>,
    queue: &str,
    player: &Player,
) -> Result<i64, DbError> {
    let id = sqlx::query_scalar(
        "INSERT INTO queue_entries (queue, player_id, party_id, skill, skill_sigma, latencies,
                                    peer_pings, roles, side, enqueued_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, coalesce($10, now()))
         RETURNING entry_id",
    )
    .bind(queue)
    .bind(&player.id)
    .bind(&player.party)
    .bind(player.skill)
    .bind(player.skill_sigma)
    .bind(sqlx::types::Json(&player.latencies))
    .bind(sqlx::types::Json(&player.peer_pings))
    .bind(&player.roles)
    .bind(player.side)
    .bind(player.enqueued_at)
    .fetch_one(db)
    .await?;
    Ok(id)
}

/// Cancel a queued player. `false`: not queued (already matched, cancelled or rejected).
pub async fn cancel<'e>(
    db: impl PgExecutor<'e>,
    queue: &str,
    player_id: &str,
) -> Result<bool, DbError> {
    let n = sqlx::query(
        "UPDATE queue_entries SET status = 'cancelled', updated_at = now()
          WHERE queue = $1 AND player_id = $2 AND status = 'queued'",
    )
    .bind(queue)
    .bind(player_id)
    .execute(db)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// Enqueue many players in one statement (bulk loads for tests and benchmarks).
pub async fn enqueue_many<'e>(
    db: impl PgExecutor<'e>,
    queue: &str,
    players: &[Player],
    default_enqueued_at: DateTime<Utc>,
) -> Result<u64, DbError> {
    let ids: Vec<&str> = players.iter().map(|p| p.id.as_str()).collect();
    let parties: Vec<Option<&str>> = players.iter().map(|p| p.party.as_deref()).collect();
    let skills: Vec<f64> = players.iter().map(|p| p.skill).collect();
    let sigmas: Vec<Option<f64>> = players.iter().map(|p| p.skill_sigma).collect();
    let latencies: Vec<serde_json::Value> = players
        .iter()
        .map(|p| serde_json::to_value(&p.latencies).expect("map serializes"))
        .collect();
    let pings: Vec<serde_json::Value> = players
        .iter()
        .map(|p| serde_json::to_value(&p.peer_pings).expect("map serializes"))
        .collect();
    // Arrays of arrays must be rectangular in PostgreSQL: roles travel as JSON.
    let roles: Vec<serde_json::Value> = players
        .iter()
        .map(|p| serde_json::to_value(&p.roles).expect("list serializes"))
        .collect();
    let sides: Vec<Option<f64>> = players.iter().map(|p| p.side).collect();
    let times: Vec<DateTime<Utc>> = players
        .iter()
        .map(|p| p.enqueued_at.unwrap_or(default_enqueued_at))
        .collect();
    let n = sqlx::query(
        "INSERT INTO queue_entries (queue, player_id, party_id, skill, skill_sigma, latencies,
                                    peer_pings, roles, side, enqueued_at)
         SELECT $1, u.id, u.party, u.skill, u.sigma, u.lat, u.pings,
                ARRAY(SELECT jsonb_array_elements_text(u.roles)), u.side, u.at
           FROM unnest($2::text[], $3::text[], $4::float8[], $5::float8[], $6::jsonb[],
                       $7::jsonb[], $8::jsonb[], $9::float8[], $10::timestamptz[])
                AS u(id, party, skill, sigma, lat, pings, roles, side, at)",
    )
    .bind(queue)
    .bind(ids)
    .bind(parties)
    .bind(skills)
    .bind(sigmas)
    .bind(latencies)
    .bind(pings)
    .bind(roles)
    .bind(sides)
    .bind(times)
    .execute(db)
    .await?
    .rows_affected();
    Ok(n)
}
