//! The snapshot of a round: one consistent read of a queue's queued entries (oldest first,
//! up to the round's maximum size) and of their recent match history, turned into the
//! core's `Pool`. Rows that cannot become a core `Player` are returned as rejections with a
//! reason (the commit marks them rejected), with their party; none is dropped silently.
//!
//! Only live tickets are read (`expires_at` not passed), and a party enqueued by
//! `enqueue_party` is in the round only when all its members are: one member locked by a
//! client call in flight, or gone, and the party sits this round out, never split.
//!
//! Each pooled player gets their attributes and their newest unexpired avoids (at most the
//! queue's `avoids.max_per_player`) that name another pooled player of the same login.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::DbError;
use matchmaker_optimizer::{
    Attribute, BrokenParty, PastMatch, Player, Pool, Rejection, reject_parties,
};

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
    /// One `enqueue_party` call and its member count (None: a solo player, or a row
    /// written straight into the table by the daemon's own tools).
    pub party_key: Option<i64>,
    pub party_size: Option<i32>,
    /// JSON text, parsed per row like the latencies.
    pub attributes: String,
    /// The login that enqueued the row: avoids name players of their own login.
    pub owner: String,
}

/// The rows of one round and their history, as read.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub queue: String,
    pub entries: Vec<QueuedEntry>,
    pub history: Vec<PastMatch>,
    /// Queued players left out of this round because their party was incomplete (a member
    /// locked or gone); they stay queued.
    pub sat_out: usize,
    /// Those players, with why (for the round's left-over record).
    pub sat_out_players: Vec<(String, String)>,
    /// (owner, player_id, avoided_player_id) of the pooled players' avoids that hold,
    /// each player's newest first, at most the queue's `avoids.max_per_player` each.
    pub avoids: Vec<(String, String, String)>,
}

/// Most regions / peers a stored row may name before the round refuses it: the enqueue
/// functions allow 32 and 100; rows written around them must not cost a round more.
const MAX_LATENCIES: usize = 64;
const MAX_PEER_PINGS: usize = 256;
const MAX_ID_CHARS: usize = 64;
/// Attributes a stored row may hold before the round refuses it (enqueue allows 16 names,
/// each with at most 16 values).
const MAX_ATTRIBUTES: usize = 32;
const MAX_ATTRIBUTE_VALUES: usize = 32;

/// The newest avoids of a player a queue honours when its config does not say
/// (`AvoidParams::default`).
pub fn default_max_avoids() -> usize {
    matchmaker_optimizer::AvoidParams::default().max_per_player
}

/// Read the pool of `queue`: at most `max_players` queued entries, oldest first, and the
/// last `history_matches` matches of each of them, with the default number of avoids per
/// player ([`snapshot_pool_with_avoids`]).
pub async fn snapshot_pool(
    db: &PgPool,
    queue: &str,
    max_players: usize,
    history_matches: usize,
) -> Result<Snapshot, DbError> {
    snapshot_pool_with_avoids(
        db,
        queue,
        max_players,
        history_matches,
        default_max_avoids(),
    )
    .await
}

/// [`snapshot_pool`], with each player's newest `max_avoids` avoids (the queue's
/// `avoids.max_per_player`; 0: none read).
pub async fn snapshot_pool_with_avoids(
    db: &PgPool,
    queue: &str,
    max_players: usize,
    history_matches: usize,
    max_avoids: usize,
) -> Result<Snapshot, DbError> {
    // REPEATABLE READ: entries and history come from one snapshot of the database. The
    // rare serialization failure (a row changed between the snapshot and its lock) is
    // retried.
    let mut attempt = 0;
    loop {
        attempt += 1;
        match try_snapshot(db, queue, max_players, history_matches, max_avoids).await {
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
    max_avoids: usize,
) -> Result<Snapshot, DbError> {
    let mut tx = db.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        .execute(&mut *tx)
        .await?;
    let entries: Vec<QueuedEntry> = sqlx::query_as(
        "WITH oldest AS (
             -- Oldest first: who waited longest gets into a capped round.
             SELECT entry_id, party_key, party_id
               FROM queue_entries
              WHERE queue = $1 AND status = 'queued' AND expires_at > now()
              ORDER BY enqueued_at, entry_id
              LIMIT $2),
         pool AS (
             SELECT entry_id, player_id, party_id, skill, skill_sigma,
                    latencies::text AS latencies, peer_pings::text AS peer_pings,
                    roles, side, enqueued_at, party_key, party_size,
                    attributes::text AS attributes, owner
               FROM queue_entries
              WHERE queue = $1 AND status = 'queued' AND expires_at > now()
                AND (entry_id IN (SELECT entry_id FROM oldest)
                     -- A party is never split across rounds by the size cap: its members
                     -- beyond the cap come along (the round may exceed the cap by them).
                     -- (A party is one enqueue_party call; rows written without one,
                     -- by hand, go by their party_id.)
                     OR party_key IN (SELECT party_key FROM oldest WHERE party_key IS NOT NULL)
                     OR (party_key IS NULL
                         AND party_id IN (SELECT party_id FROM oldest
                                           WHERE party_key IS NULL AND party_id IS NOT NULL)))
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
    let (mut entries, sat_out_players) = whole_parties(entries);
    name_parties_apart(&mut entries);

    let history = if history_matches == 0 || entries.is_empty() {
        Vec::new()
    } else {
        let players: Vec<&str> = entries.iter().map(|e| e.player_id.as_str()).collect();
        let rows: Vec<(i64, DateTime<Utc>, i32, String)> = sqlx::query_as(
            "WITH recent AS (
                 -- Each pooled player's last N matches in this queue: one row per
                 -- player, oldest id first, read through the primary key of
                 -- recent_matches (OFFSET 0: one index lookup per pooled player; a scan
                 -- of the whole table, one row per player ever seen, would grow with
                 -- the history).
                 SELECT DISTINCT h.match_id
                   FROM unnest($2::text[]) AS p(player_id)
                  CROSS JOIN LATERAL (
                        SELECT r.match_ids FROM recent_matches r
                         WHERE r.queue = $1 AND r.player_id = p.player_id
                        OFFSET 0) r
                  CROSS JOIN LATERAL unnest(
                        r.match_ids[greatest(cardinality(r.match_ids) - $3 + 1, 1):])
                        AS h(match_id))
             SELECT mp.match_id, mp.matched_at, mp.team, mp.player_id
               FROM recent JOIN match_players mp USING (match_id)
              ORDER BY mp.match_id, mp.team, mp.player_id",
        )
        .bind(queue)
        .bind(&players)
        .bind(history_matches as i32)
        .fetch_all(&mut *tx)
        .await?;
        group_history(rows)
    };
    let avoids = read_avoids(
        &mut tx,
        entries
            .iter()
            .map(|e| (e.owner.as_str(), e.player_id.as_str())),
        max_avoids,
    )
    .await?;
    tx.commit().await?;
    Ok(Snapshot {
        queue: queue.to_string(),
        entries,
        history,
        sat_out: sat_out_players.len(),
        sat_out_players,
        avoids,
    })
}

/// The unexpired avoids of these (owner, player_id), each player's newest `max_avoids`,
/// newest first: (owner, player_id, avoided_player_id). One statement for the whole pool
/// (a hash join on the players, not a look-up per player).
pub async fn read_avoids<'a>(
    conn: &mut sqlx::PgConnection,
    players: impl Iterator<Item = (&'a str, &'a str)>,
    max_avoids: usize,
) -> Result<Vec<(String, String, String)>, DbError> {
    let (owners, ids): (Vec<&str>, Vec<&str>) = players.unzip();
    if max_avoids == 0 || ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(sqlx::query_as(
        "WITH pooled AS (
             SELECT DISTINCT owner, player_id
               FROM unnest($1::text[], $2::text[]) AS p(owner, player_id)),
         ranked AS (
             SELECT a.owner, a.player_id, a.avoided_player_id,
                    row_number() OVER (PARTITION BY a.owner, a.player_id
                                       ORDER BY a.created_at DESC, a.avoided_player_id) AS n
               FROM avoids a JOIN pooled USING (owner, player_id)
              WHERE a.expires_at IS NULL OR a.expires_at > now())
         SELECT owner, player_id, avoided_player_id FROM ranked
          WHERE n <= $3
          ORDER BY owner, player_id, n",
    )
    .bind(&owners)
    .bind(&ids)
    .bind(max_avoids.min(i64::MAX as usize) as i64)
    .fetch_all(conn)
    .await?)
}

/// Keep solos, and parties whose every member was read; returns the rest's players with
/// why they sat out.
fn whole_parties(entries: Vec<QueuedEntry>) -> (Vec<QueuedEntry>, Vec<(String, String)>) {
    let mut read: HashMap<i64, i32> = HashMap::new();
    for e in &entries {
        if let Some(key) = e.party_key {
            *read.entry(key).or_default() += 1;
        }
    }
    let mut sat_out = Vec::new();
    let kept: Vec<QueuedEntry> = entries
        .into_iter()
        .filter(|e| match (e.party_key, e.party_size) {
            (Some(key), Some(size)) => {
                let got = read.get(&key).copied().unwrap_or(0);
                if got != size {
                    sat_out.push((
                        e.player_id.clone(),
                        format!(
                            "party {} sat out: {got} of its {size} members were free in the snapshot (the others were in a client call, or gone)",
                            e.party_id.as_deref().unwrap_or("?")
                        ),
                    ));
                }
                got == size
            }
            _ => true,
        })
        .collect();
    (kept, sat_out)
}

/// A party id belongs to the login that enqueued it: two logins' parties
/// may share one. The core knows a party by its id, so a party whose id another party in
/// this pool has already is renamed `<id>#<party_key>` (again, while even that is taken:
/// a client may pick such an id); the rows keep theirs.
fn name_parties_apart(entries: &mut [QueuedEntry]) {
    let mut owner_of: HashMap<String, i64> = HashMap::new();
    let mut name_of: HashMap<i64, String> = HashMap::new();
    for e in entries.iter_mut() {
        let (Some(id), Some(key)) = (e.party_id.as_mut(), e.party_key) else {
            continue;
        };
        let name = name_of.entry(key).or_insert_with(|| {
            let mut name = id.clone();
            while owner_of.get(&name).is_some_and(|k| *k != key) {
                name = format!("{name}#{key}");
            }
            owner_of.insert(name.clone(), key);
            name
        });
        if name != id {
            *id = name.clone();
        }
    }
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
        let mut broken = Vec::new();
        for e in &self.entries {
            match entry_to_player(e) {
                Ok(p) => players.push(p),
                Err(reason) => {
                    if let Some(party) = &e.party_id {
                        broken.push(BrokenParty {
                            party: party.clone(),
                            member: e.player_id.clone(),
                            reason: reason.clone(),
                        });
                    }
                    rejected.push(Rejection {
                        id: e.player_id.clone(),
                        reason,
                    });
                }
            }
        }
        rejected.extend(reject_parties(&mut players, &broken));
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
        self.fill_avoids(&mut players);
        let pool = Pool {
            queue: Some(self.queue.clone()),
            now: Some(now),
            players,
            history: self.history.clone(),
        };
        (pool, rejected)
    }

    /// Each pooled player's avoids, as the pool ids of the avoided players pooled in this
    /// round (an avoid of someone not queued now costs the round nothing), newest first.
    fn fill_avoids(&self, players: &mut [Player]) {
        if self.avoids.is_empty() {
            return;
        }
        let pool_id: HashMap<(&str, &str), &str> = self
            .entries
            .iter()
            .map(|e| {
                (
                    (e.owner.as_str(), e.player_id.as_str()),
                    e.player_id.as_str(),
                )
            })
            .collect();
        let mut of: HashMap<&str, Vec<String>> = HashMap::new();
        for (owner, player, avoided) in &self.avoids {
            let (Some(&me), Some(&them)) = (
                pool_id.get(&(owner.as_str(), player.as_str())),
                pool_id.get(&(owner.as_str(), avoided.as_str())),
            ) else {
                continue;
            };
            of.entry(me).or_default().push(them.to_string());
        }
        for p in players {
            if let Some(avoids) = of.remove(p.id.as_str()) {
                p.avoids = avoids;
            }
        }
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
    let ms_map = |field: &str, v: &str, max: usize| {
        let map = serde_json::from_str::<BTreeMap<String, f64>>(v)
            .map_err(|err| format!("{field}: not an object of names to milliseconds ({err})"))?;
        if map.len() > max {
            return Err(format!("{field}: {} entries, more than {max}", map.len()));
        }
        Ok(map)
    };
    for (field, id) in [
        ("player_id", Some(&e.player_id)),
        ("party_id", e.party_id.as_ref()),
    ] {
        if id.is_some_and(|id| id.chars().count() > MAX_ID_CHARS) {
            return Err(format!("{field}: longer than {MAX_ID_CHARS} characters"));
        }
    }
    Ok(Player {
        id: e.player_id.clone(),
        party: e.party_id.clone(),
        skill: e.skill,
        skill_sigma: e.skill_sigma,
        enqueued_at: Some(e.enqueued_at),
        latencies: ms_map("latencies", &e.latencies, MAX_LATENCIES)?,
        peer_pings: ms_map("peer_pings", &e.peer_pings, MAX_PEER_PINGS)?,
        roles: e.roles.clone(),
        side: e.side,
        attributes: attributes(&e.attributes)?,
        ..Default::default()
    })
}

/// A stored attributes object; bounded like the other maps (rows written around enqueue).
pub fn attributes(text: &str) -> Result<BTreeMap<String, Attribute>, String> {
    let map = serde_json::from_str::<BTreeMap<String, Attribute>>(text).map_err(|err| {
        format!("attributes: not an object of names to strings or lists of strings ({err})")
    })?;
    if map.len() > MAX_ATTRIBUTES {
        return Err(format!(
            "attributes: {} names, more than {MAX_ATTRIBUTES}",
            map.len()
        ));
    }
    for (name, value) in &map {
        if value.values().len() > MAX_ATTRIBUTE_VALUES {
            return Err(format!(
                "attributes.{name}: {} values, more than {MAX_ATTRIBUTE_VALUES}",
                value.values().len()
            ));
        }
        if std::iter::once(name)
            .chain(value.values())
            .any(|v| v.chars().count() > MAX_ID_CHARS)
        {
            return Err(format!(
                "attributes.{name}: longer than {MAX_ID_CHARS} characters"
            ));
        }
    }
    Ok(map)
}
