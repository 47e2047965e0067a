//! The client side of the contract, in Rust (the simulator's load generator, tests,
//! `matchmaker-lab bench-db`): thin wrappers over the SQL functions of the front door
//!, which any client calls the same way:
//!
//! ```sql
//! SELECT enqueue('ranked_3v3', 'p1', 1500, '{"eu-west": 23}');
//! SELECT * FROM enqueue_party('ranked_3v3', 'crew', '[{"player_id": "a", "skill": 1400},
//!                                                     {"player_id": "b", "skill": 1550}]');
//! SELECT keep_alive('{p1,a}');
//! SELECT cancel('p1');
//! ```
//!
//! [`enqueue_many`] is the one exception: a bulk INSERT straight into the table for the
//! daemon's own tools (tests, benchmarks) that need given enqueue times. It needs table
//! privileges that the client role does not have.

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::PgExecutor;

use super::DbError;
use matchmaker_optimizer::Player;

/// The skill an entry plays at: the one the client sends, or (on a rated queue,
/// `skill => NULL`) the player's stored rating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Skill {
    #[default]
    Claimed,
    Rated,
}

impl Skill {
    /// `skill` and `skill_sigma` as sent: NULL for a rated entry.
    fn of(self, p: &Player) -> (Option<f64>, Option<f64>) {
        match self {
            Skill::Claimed => (Some(p.skill), p.skill_sigma),
            Skill::Rated => (None, None),
        }
    }
}

/// Enqueue one solo player through `enqueue()`; returns the entry id. A refusal comes back
/// as the function's message (field, value, rule), SQLSTATE 22023.
pub async fn enqueue<'e>(
    db: impl PgExecutor<'e>,
    queue: &str,
    player: &Player,
) -> Result<i64, DbError> {
    enqueue_with(db, queue, player, Skill::Claimed).await
}

/// [`enqueue`], at the claimed skill or the stored rating.
pub async fn enqueue_with<'e>(
    db: impl PgExecutor<'e>,
    queue: &str,
    player: &Player,
    skill: Skill,
) -> Result<i64, DbError> {
    let (skill, sigma) = skill.of(player);
    let id = sqlx::query_scalar(include_str!("sql/enqueue_player.sql"))
        .bind(queue)
        .bind(&player.id)
        .bind(skill)
        .bind(sqlx::types::Json(&player.latencies))
        .bind(sqlx::types::Json(&player.peer_pings))
        .bind(&player.roles)
        .bind(player.side)
        .bind(sigma)
        .bind(sqlx::types::Json(&player.attributes))
        .fetch_one(db)
        .await?;
    Ok(id)
}

/// One party member as `enqueue_party()` takes it.
pub fn member_json(p: &Player) -> serde_json::Value {
    member_json_with(p, Skill::Claimed)
}

/// [`member_json`], at the claimed skill or the stored rating.
pub fn member_json_with(p: &Player, skill: Skill) -> serde_json::Value {
    let (skill, sigma) = skill.of(p);
    let mut m = json!({
        "player_id": p.id,
        "skill": skill,
        "skill_sigma": sigma,
        "latencies": p.latencies,
        "peer_pings": p.peer_pings,
        "roles": p.roles,
        "side": p.side,
    });
    if !p.attributes.is_empty() {
        m["attributes"] = json!(p.attributes);
    }
    m
}

/// Enqueue a whole party in one call; returns (player id, entry id) per member.
pub async fn enqueue_party<'e>(
    db: impl PgExecutor<'e>,
    queue: &str,
    party_id: &str,
    members: &[Player],
) -> Result<Vec<(String, i64)>, DbError> {
    enqueue_party_with(db, queue, party_id, members, Skill::Claimed).await
}

/// [`enqueue_party`], at the claimed skills or the stored ratings.
pub async fn enqueue_party_with<'e>(
    db: impl PgExecutor<'e>,
    queue: &str,
    party_id: &str,
    members: &[Player],
    skill: Skill,
) -> Result<Vec<(String, i64)>, DbError> {
    let members: Vec<serde_json::Value> =
        members.iter().map(|p| member_json_with(p, skill)).collect();
    Ok(
        sqlx::query_as("SELECT player_id, entry_id FROM enqueue_party($1, $2, $3)")
            .bind(queue)
            .bind(party_id)
            .bind(sqlx::types::Json(members))
            .fetch_all(db)
            .await?,
    )
}

/// `player_id` avoids `avoided_player_id` (both this login's), for `duration` (None:
/// until unavoid). Returns how many avoids the player holds now.
pub async fn avoid<'e>(
    db: impl PgExecutor<'e>,
    player_id: &str,
    avoided_player_id: &str,
    duration: Option<std::time::Duration>,
) -> Result<u64, DbError> {
    let n: i32 = sqlx::query_scalar(include_str!("sql/enqueue_avoid.sql"))
        .bind(player_id)
        .bind(avoided_player_id)
        .bind(duration.map(|d| d.as_secs_f64()))
        .fetch_one(db)
        .await?;
    Ok(n as u64)
}

/// Cancel a player's queued entry in `queue` (every queue: None), with their party's.
/// Returns the number of entries cancelled: 0 when nothing was queued (a round may have
/// matched the player already).
pub async fn cancel<'e>(
    db: impl PgExecutor<'e>,
    queue: Option<&str>,
    player_id: &str,
) -> Result<u64, DbError> {
    let n: i32 = sqlx::query_scalar("SELECT cancel($1, $2)")
        .bind(player_id)
        .bind(queue)
        .fetch_one(db)
        .await?;
    Ok(n as u64)
}

/// Refresh the tickets of these players (and their parties) in `queue` (every queue:
/// None). Returns the number of entries refreshed.
pub async fn keep_alive<'e>(
    db: impl PgExecutor<'e>,
    queue: Option<&str>,
    player_ids: &[String],
) -> Result<u64, DbError> {
    let n: i32 = sqlx::query_scalar("SELECT keep_alive($1, $2)")
        .bind(player_ids)
        .bind(queue)
        .fetch_one(db)
        .await?;
    Ok(n as u64)
}

/// Bulk INSERT straight into `queue_entries` (tests and benchmarks, as the daemon's or
/// the database owner's role): rows with given enqueue times, parties by `party_id` only,
/// tickets that expire 10 minutes after the insert (the column default).
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
    let n = sqlx::query(include_str!("sql/enqueue_many.sql"))
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
