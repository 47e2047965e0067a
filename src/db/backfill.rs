//! Backfill requests as a round reads and closes them: the open,
//! unexpired requests of a queue (oldest first) turned into the core's `Session`s, the
//! expiry sweep, and the worker's "is an immediate backfill round due?" look-up. The
//! commit writes the fills (`commit`).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::PgPool;

use super::DbError;
use super::snapshot::{PoolIds, Snapshot, read_avoids};
use matchmaker_optimizer::backfill::Session;
use matchmaker_optimizer::{Attribute, Player};

/// Most open requests one round considers (the oldest first); the rest wait a round.
pub const MAX_REQUESTS_PER_ROUND: i64 = 200;

/// One open request as the round reads it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct BackfillRequest {
    pub request_id: i64,
    pub session_id: String,
    /// The login that asked; its members' ids and peer pings are that login's.
    pub owner: String,
    pub members: sqlx::types::Json<serde_json::Value>,
    pub open_slots: Vec<i32>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// The map the session is played on, as request_backfill named it.
    pub map: Option<String>,
    /// The rating and uncertainty of each member sent with skill NULL to a rated queue,
    /// as they are now.
    pub member_ratings: Option<sqlx::types::Json<BTreeMap<String, (f64, f64)>>>,
    /// Pool ids each member must not meet: the pooled players they avoid and those who
    /// avoid them ([`load_member_avoids`]; the core checks a pair from either side, and
    /// members are not in the pool, so both sides are written here).
    #[sqlx(skip)]
    pub member_avoids: BTreeMap<String, Vec<String>>,
}

/// The queue's open, unexpired requests that a round tries, at most `max_slots` open
/// slots in all: each login's oldest request in turn (then each login's second, ...), so
/// that one login's requests cannot take a round's pool nor hold back another login's
/// request; and a login at its share of the last minute's players waits
/// (`backfill_requests_within.sql`). Returned oldest first. Not locked: the commit locks
/// the ones it fills (a cancel in flight wins).
pub async fn snapshot_backfills_within(
    db: &PgPool,
    queue: &str,
    max_slots: i64,
    share: f64,
    pooled: usize,
    match_size: usize,
) -> Result<Vec<BackfillRequest>, DbError> {
    Ok(
        sqlx::query_as(include_str!("sql/backfill_requests_within.sql"))
            .bind(queue)
            .bind(max_slots)
            .bind(MAX_REQUESTS_PER_ROUND)
            .bind(share)
            .bind(pooled as i64)
            .bind(match_size as i64)
            .fetch_all(db)
            .await?,
    )
}

/// A member as request_backfill stored it (validated there).
#[derive(Debug, Deserialize)]
struct Member {
    player_id: String,
    team: usize,
    /// None: the member plays at their rating (a rated queue; `member_ratings`).
    #[serde(default)]
    skill: Option<f64>,
    #[serde(default)]
    skill_sigma: Option<f64>,
    #[serde(default)]
    latencies: BTreeMap<String, f64>,
    #[serde(default)]
    peer_pings: BTreeMap<String, f64>,
    #[serde(default)]
    roles: Vec<String>,
    #[serde(default)]
    side: Option<f64>,
    #[serde(default)]
    attributes: BTreeMap<String, Attribute>,
}

impl BackfillRequest {
    /// The core's session, keyed by the request id; a stored value the core cannot read
    /// (written around the front door) is the request's unfilled reason. Members are
    /// named in the round's terms (`ids`): a member queued in the pool by the same login
    /// is that entry (never added to its own session); a member whose id is another
    /// player's pool id is `<player_id>#s<request_id>`.
    pub fn to_session(&self, ids: &PoolIds) -> Result<Session, String> {
        let members: Vec<Member> = serde_json::from_value(self.members.0.clone())
            .map_err(|e| format!("members: not readable ({e})"))?;
        let open: Vec<usize> = self.open_slots.iter().map(|&o| o.max(0) as usize).collect();
        let mut teams = vec![Vec::new(); open.len()];
        for m in members {
            let Some(team) = teams.get_mut(m.team) else {
                return Err(format!(
                    "member {} is on team {}, out of range",
                    m.player_id, m.team
                ));
            };
            let avoids = self
                .member_avoids
                .get(&m.player_id)
                .cloned()
                .unwrap_or_default();
            let id = ids
                .name(&self.owner, &m.player_id)
                .unwrap_or_else(|| format!("{}#s{}", m.player_id, self.request_id));
            let rating = self
                .member_ratings
                .as_ref()
                .and_then(|r| r.0.get(&m.player_id).copied());
            let (skill, skill_sigma) = match (m.skill, rating) {
                (Some(skill), _) => (skill, m.skill_sigma),
                (None, Some((rating, uncertainty))) => (rating, Some(uncertainty)),
                (None, None) => {
                    return Err(format!(
                        "member {} has no skill and the queue no rating for them",
                        m.player_id
                    ));
                }
            };
            let peer_pings = m
                .peer_pings
                .into_iter()
                .filter_map(|(peer, ms)| ids.name(&self.owner, &peer).map(|p| (p, ms)))
                .collect();
            team.push(Player {
                id,
                avoids,
                attributes: m.attributes,
                party: None,
                skill,
                skill_sigma,
                enqueued_at: None,
                latencies: m.latencies,
                peer_pings,
                roles: m.roles,
                side: m.side,
            });
        }
        Ok(Session {
            id: self.request_id.to_string(),
            teams,
            open,
            map: self.map.clone(),
        })
    }
}

/// Fill each request's `member_avoids` from the avoids table (each member's newest
/// `max_avoids`) and from the pooled players' own avoids in `snapshot`.
pub async fn load_member_avoids(
    db: &PgPool,
    requests: &mut [BackfillRequest],
    snapshot: &Snapshot,
    max_avoids: usize,
) -> Result<(), DbError> {
    if max_avoids == 0 || requests.is_empty() {
        return Ok(());
    }
    let members: Vec<(String, String)> = requests
        .iter()
        .flat_map(|r| {
            let ids = r.members.0.as_array().cloned().unwrap_or_default();
            ids.into_iter().filter_map(move |m| {
                Some((r.owner.clone(), m.get("player_id")?.as_str()?.to_string()))
            })
        })
        .collect();
    let mut conn = db.acquire().await?;
    let rows = read_avoids(
        &mut conn,
        members.iter().map(|(o, p)| (o.as_str(), p.as_str())),
        max_avoids,
    )
    .await?;
    // Pooled players by (login, the login's player id), to their pool ids.
    let pooled = snapshot.pool_id_by_login();
    // (owner, member) -> pool ids, both directions.
    let mut of: HashMap<(&str, &str), Vec<String>> = HashMap::new();
    for a in &rows {
        if let Some(&them) = pooled.get(&(a.owner.as_str(), a.avoided_player_id.as_str())) {
            of.entry((&a.owner, &a.player_id))
                .or_default()
                .push(them.to_string());
        }
    }
    for a in &snapshot.avoids {
        let Some(&me) = pooled.get(&(a.owner.as_str(), a.player_id.as_str())) else {
            continue;
        };
        let ids = of.entry((&a.owner, &a.avoided_player_id)).or_default();
        if !ids.iter().any(|i| i == me) {
            ids.push(me.to_string());
        }
    }
    for r in requests.iter_mut() {
        let owner = r.owner.clone();
        let ids: Vec<String> = members
            .iter()
            .filter(|(o, _)| *o == owner)
            .map(|(_, p)| p.clone())
            .collect();
        for id in ids {
            let avoids = of.get(&(owner.as_str(), id.as_str())).cloned();
            if let Some(avoids) = avoids.filter(|a| !a.is_empty()) {
                r.member_avoids.insert(id, avoids);
            }
        }
    }
    Ok(())
}

/// Whether an immediate backfill round is due: an open, unexpired request that no round
/// has tried yet, or that was tried at least `retry` ago and players arrived since; and
/// queued players to try it with.
pub async fn backfill_due(db: &PgPool, queue: &str, retry: Duration) -> Result<bool, DbError> {
    let retry_ms = retry.as_millis().min(i64::MAX as u128) as i64;
    Ok(sqlx::query_scalar(include_str!("sql/backfill_due.sql"))
        .bind(queue)
        .bind(retry_ms as f64)
        .fetch_one(db)
        .await?)
}

/// Close the queue's open requests past their expiry, with why nothing filled them (the
/// last round's reason). Returns how many.
pub async fn expire_backfills(db: &PgPool, queue: &str) -> Result<u64, DbError> {
    Ok(sqlx::query(include_str!("sql/backfill_expire.sql"))
        .bind(queue)
        .execute(db)
        .await?
        .rows_affected())
}
