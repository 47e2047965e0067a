//! The snapshot of a round: one consistent read of a queue's queued entries (oldest first,
//! up to the round's maximum size) and of their recent match history, turned into the
//! core's `Pool`. Rows that cannot become a core `Player` are returned as rejections with a
//! reason (the commit marks them rejected); none is dropped silently.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::DbError;
use crate::core::{PastMatch, Player, Pool, Rejection};

/// One queued row as read by the snapshot.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct QueuedEntry {
    pub entry_id: i64,
    pub player_id: String,
    pub party_id: Option<String>,
    pub skill: f64,
    pub skill_sigma: Option<f64>,
    /// JSON text, parsed per row by [`Snapshot::to_pool`]: a value that does not fit
    /// becomes that row's rejection instead of failing the whole snapshot.
    pub latencies: String,
    pub peer_pings: String,
    pub roles: Vec<String>,
    pub side: Option<f64>,
    pub enqueued_at: DateTime<Utc>,
}

/// The rows of one round and their history, as read.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub queue: String,
    pub entries: Vec<QueuedEntry>,
    pub history: Vec<PastMatch>,
}

/// Read the pool of `queue`: at most `max_players` queued entries, oldest first, and the
/// last `history_matches` matches of each of them.
pub async fn snapshot_pool(
    db: &PgPool,
    queue: &str,
    max_players: usize,
    history_matches: usize,
) -> Result<Snapshot, DbError> {
    // REPEATABLE READ: entries and history come from one snapshot of the database. The
    // rare serialization failure (a row changed between the snapshot and its lock) is
    // retried.
    let mut attempt = 0;
    loop {
        attempt += 1;
        match try_snapshot(db, queue, max_players, history_matches).await {
            Err(DbError::Sql(sqlx::Error::Database(e)))
                if attempt < 5 && e.code().as_deref() == Some("40001") => {}
            other => return other,
        }
    }
}

async fn try_snapshot(
    db: &PgPool,
    queue: &str,
    max_players: usize,
    history_matches: usize,
) -> Result<Snapshot, DbError> {
    let mut tx = db.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        .execute(&mut *tx)
        .await?;
    let entries: Vec<QueuedEntry> = sqlx::query_as(
        "WITH oldest AS (
             -- Oldest first: who waited longest gets into a capped round.
             SELECT entry_id, party_id
               FROM queue_entries
              WHERE queue = $1 AND status = 'queued'
              ORDER BY enqueued_at, entry_id
              LIMIT $2),
         pool AS (
             SELECT entry_id, player_id, party_id, skill, skill_sigma,
                    latencies::text AS latencies, peer_pings::text AS peer_pings,
                    roles, side, enqueued_at
               FROM queue_entries
              WHERE queue = $1 AND status = 'queued'
                AND (entry_id IN (SELECT entry_id FROM oldest)
                     -- A party is never split across rounds by the size cap: its members
                     -- beyond the cap come along (the round may exceed the cap by them).
                     OR party_id IN (SELECT party_id FROM oldest WHERE party_id IS NOT NULL))
              -- SKIP LOCKED: a row locked right now is being cancelled by its client (or
              -- written by a stale leader's commit); it is not ours to take, and the
              -- snapshot never waits for a client. The lock itself ends with this short
              -- transaction: nothing stays locked while the solver runs.
              FOR UPDATE SKIP LOCKED)
         SELECT * FROM pool ORDER BY enqueued_at, entry_id",
    )
    .bind(queue)
    .bind(max_players as i64)
    .fetch_all(&mut *tx)
    .await?;

    let history = if history_matches == 0 || entries.is_empty() {
        Vec::new()
    } else {
        let players: Vec<&str> = entries.iter().map(|e| e.player_id.as_str()).collect();
        let rows: Vec<(i64, DateTime<Utc>, i32, String)> = sqlx::query_as(
            "WITH recent AS (
                 -- Each pooled player's last N matches in this queue
                 -- (index match_players_recent).
                 SELECT DISTINCT r.match_id
                   FROM unnest($2::text[]) AS p(player_id)
                  CROSS JOIN LATERAL (
                        SELECT mp.match_id FROM match_players mp
                         WHERE mp.queue = $1 AND mp.player_id = p.player_id
                         ORDER BY mp.matched_at DESC
                         LIMIT $3) r)
             SELECT mp.match_id, mp.matched_at, mp.team, mp.player_id
               FROM recent JOIN match_players mp USING (match_id)
              ORDER BY mp.match_id, mp.team, mp.player_id",
        )
        .bind(queue)
        .bind(&players)
        .bind(history_matches as i64)
        .fetch_all(&mut *tx)
        .await?;
        group_history(rows)
    };
    tx.commit().await?;
    Ok(Snapshot {
        queue: queue.to_string(),
        entries,
        history,
    })
}

fn group_history(rows: Vec<(i64, DateTime<Utc>, i32, String)>) -> Vec<PastMatch> {
    let mut matches: Vec<PastMatch> = Vec::new();
    let mut last_id = None;
    for (match_id, at, team, player) in rows {
        if last_id != Some(match_id) {
            last_id = Some(match_id);
            matches.push(PastMatch {
                teams: Vec::new(),
                at,
            });
        }
        let m = matches.last_mut().expect("pushed above");
        let team = team.max(0) as usize;
        if m.teams.len() <= team {
            m.teams.resize(team + 1, Vec::new());
        }
        m.teams[team].push(player);
    }
    matches
}

impl Snapshot {
    /// The core's input for this round. Rows whose stored values cannot become a core
    /// player (a constraint bypassed, a value out of range) come back as rejections.
    pub fn to_pool(&self, now: DateTime<Utc>) -> (Pool, Vec<Rejection>) {
        let mut players = Vec::with_capacity(self.entries.len());
        let mut rejected = Vec::new();
        for e in &self.entries {
            match entry_to_player(e) {
                Ok(p) => players.push(p),
                Err(reason) => rejected.push(Rejection {
                    id: e.player_id.clone(),
                    reason,
                }),
            }
        }
        // Party members enqueue in separate rows, often in separate transactions, so
        // their times differ a little; the core wants one time per party. The party has
        // waited since its first member joined.
        let mut party_since: HashMap<&str, DateTime<Utc>> = HashMap::new();
        for p in &players {
            if let (Some(party), Some(at)) = (p.party.as_deref(), p.enqueued_at) {
                party_since
                    .entry(party)
                    .and_modify(|t| *t = (*t).min(at))
                    .or_insert(at);
            }
        }
        let party_since: HashMap<String, DateTime<Utc>> = party_since
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        for p in &mut players {
            if let Some(at) = p.party.as_ref().and_then(|party| party_since.get(party)) {
                p.enqueued_at = Some(*at);
            }
        }
        let pool = Pool {
            queue: Some(self.queue.clone()),
            now: Some(now),
            players,
            history: self.history.clone(),
        };
        (pool, rejected)
    }

    /// entry_id by player id (one queued row per player per queue).
    pub fn entry_ids(&self) -> HashMap<&str, i64> {
        self.entries
            .iter()
            .map(|e| (e.player_id.as_str(), e.entry_id))
            .collect()
    }
}

fn entry_to_player(e: &QueuedEntry) -> Result<Player, String> {
    let ms_map = |field: &str, v: &str| {
        serde_json::from_str::<BTreeMap<String, f64>>(v)
            .map_err(|err| format!("{field}: not an object of names to milliseconds ({err})"))
    };
    Ok(Player {
        id: e.player_id.clone(),
        party: e.party_id.clone(),
        skill: e.skill,
        skill_sigma: e.skill_sigma,
        enqueued_at: Some(e.enqueued_at),
        latencies: ms_map("latencies", &e.latencies)?,
        peer_pings: ms_map("peer_pings", &e.peer_pings)?,
        roles: e.roles.clone(),
        side: e.side,
    })
}
