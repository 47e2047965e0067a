//! The snapshot of a round: one consistent read of a queue's queued entries (up to the
//! round's maximum size, each login's oldest in turn) and of their recent match history,
//! turned into the core's `Pool`. Rows that cannot become a core `Player` are returned as rejections with a
//! reason (the commit marks them rejected), with their party; none is dropped silently.
//!
//! Only live tickets are read (`expires_at` not passed), and a party enqueued by
//! `enqueue_party` is in the round only when all its members are: one member locked by a
//! client call in flight, or gone, and the party sits this round out, never split.
//!
//! Each pooled player gets their attributes and their newest unexpired avoids (at most the
//! queue's `avoids.max_per_player`) that name another pooled player of the same login.

use std::collections::{BTreeMap, HashMap, HashSet};

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
    /// The player's pool id (see [`name_players_apart`]): the player id the login gave,
    /// unless another login's player of the same id is in the round.
    pub player_id: String,
    /// The login that enqueued it; player ids are per login.
    pub owner: String,
    /// The player id as the login gave it (`queue_entries.player_id`).
    #[sqlx(default)]
    pub login_player_id: String,
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
    /// Queued again after another login's player failed their match's ready check
    /// (`queue_entries.bounced_at`).
    #[sqlx(default)]
    pub bounced: bool,
}

/// One player of a pooled player's past match (`snapshot_history.sql`).
#[derive(sqlx::FromRow)]
struct PastSeat {
    match_id: i64,
    matched_at: DateTime<Utc>,
    team: i32,
    /// The login of the past player's entry; player ids are per login.
    owner: String,
    player_id: String,
    /// The past match's map (queues with maps).
    map: Option<String>,
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
    /// The pooled players' avoids that hold, each player's newest first, at most the
    /// queue's `avoids.max_per_player` each.
    pub avoids: Vec<Avoid>,
}

/// An avoid that holds: `player_id` of login `owner` avoids `avoided_player_id` (of the
/// same login).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Avoid {
    pub owner: String,
    pub player_id: String,
    pub avoided_player_id: String,
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

/// The default of `limits.sit_out_after`.
pub const SIT_OUT_AFTER: u32 = 3;

/// How much of a queue one round reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotLimits {
    /// Queued entries at most (a party beyond the cap comes whole).
    pub max_players: usize,
    /// Recent matches of each pooled player (opponent variation).
    pub history_matches: usize,
    /// Rounds an entry may be left over as `no_host` or `no_valid_match` before it goes
    /// to the back of a capped pool (`limits.sit_out_after`).
    pub sit_out_after: u32,
    /// Newest avoids of each player (the queue's `avoids.max_per_player`; 0: none read).
    pub max_avoids: usize,
}

impl SnapshotLimits {
    /// The defaults for everything but the pool size and the history.
    pub fn new(max_players: usize, history_matches: usize) -> Self {
        SnapshotLimits {
            max_players,
            history_matches,
            sit_out_after: SIT_OUT_AFTER,
            max_avoids: default_max_avoids(),
        }
    }
}

/// Read the pool of `queue` with the default limits but the pool size and the history
/// (see [`snapshot_round`]).
pub async fn snapshot_pool(
    db: &PgPool,
    queue: &str,
    max_players: usize,
    history_matches: usize,
) -> Result<Snapshot, DbError> {
    snapshot_round(db, queue, SnapshotLimits::new(max_players, history_matches)).await
}

/// Read the pool of `queue`: at most `limits.max_players` queued entries, the last
/// `limits.history_matches` matches of each of them and their avoids.
///
/// When more are queued, the pool takes each login's oldest entries in turn (the first of
/// every login, then the second of every login, ...), so that one login's entries cannot
/// crowd out another's; entries left over as `no_host` or `no_valid_match` for
/// `sit_out_after` rounds in a row come after all the others. A party comes whole.
pub async fn snapshot_round(
    db: &PgPool,
    queue: &str,
    limits: SnapshotLimits,
) -> Result<Snapshot, DbError> {
    // REPEATABLE READ: entries and history come from one snapshot of the database. The
    // rare serialization failure (a row changed between the snapshot and its lock) is
    // retried.
    let mut attempt = 0;
    loop {
        attempt += 1;
        match try_snapshot(db, queue, limits).await {
            Err(DbError::Sql(sqlx::Error::Database(e)))
                if attempt < 5 && e.code().as_deref() == Some("40001") => {}
            other => return other,
        }
    }
}

async fn try_snapshot(
    db: &PgPool,
    queue: &str,
    limits: SnapshotLimits,
) -> Result<Snapshot, DbError> {
    let SnapshotLimits {
        max_players,
        history_matches,
        sit_out_after,
        max_avoids,
    } = limits;
    let mut tx = db.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        .execute(&mut *tx)
        .await?;
    let entries: Vec<QueuedEntry> = sqlx::query_as(include_str!("sql/snapshot_pool.sql"))
        .bind(queue)
        .bind(max_players as i64)
        .bind(sit_out_after.max(1) as i64)
        .fetch_all(&mut *tx)
        .await?;
    let (mut entries, sat_out_players) = whole_parties(entries);
    name_parties_apart(&mut entries);
    name_players_apart(&mut entries);

    let history = if history_matches == 0 || entries.is_empty() {
        Vec::new()
    } else {
        let owners: Vec<&str> = entries.iter().map(|e| e.owner.as_str()).collect();
        let players: Vec<&str> = entries.iter().map(|e| e.login_player_id.as_str()).collect();
        let rows: Vec<PastSeat> = sqlx::query_as(include_str!("sql/snapshot_history.sql"))
            .bind(queue)
            .bind(&owners)
            .bind(history_matches as i32)
            .bind(&players)
            .fetch_all(&mut *tx)
            .await?;
        let ids = PoolIds::of(&entries);
        group_history(
            rows.into_iter()
                .filter_map(|r| {
                    ids.name(&r.owner, &r.player_id)
                        .map(|id| (r.match_id, r.matched_at, r.team, id, r.map))
                })
                .collect(),
        )
    };
    let avoids = read_avoids(
        &mut tx,
        entries
            .iter()
            .map(|e| (e.owner.as_str(), e.login_player_id.as_str())),
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
/// newest first. One statement for the whole pool (a hash join on the players, not a
/// look-up per player).
pub async fn read_avoids<'a>(
    conn: &mut sqlx::PgConnection,
    players: impl Iterator<Item = (&'a str, &'a str)>,
    max_avoids: usize,
) -> Result<Vec<Avoid>, DbError> {
    let (owners, ids): (Vec<&str>, Vec<&str>) = players.unzip();
    if max_avoids == 0 || ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(sqlx::query_as(include_str!("sql/snapshot_avoids.sql"))
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

/// A player id belongs to the login that enqueued it: two logins' players may share one.
/// The core knows a player by its id, so each pooled entry gets a pool id, unique in the
/// round: its player id, or, when an earlier entry of the pool (oldest first) holds that
/// id already, `<player_id>#<entry_id>` (again, while even that is taken: a client may pick
/// such an id). With one login, or without shared ids, every pool id is the player id.
/// The rows keep theirs; the replay record, `explain`, left-over records and a match's
/// hosts name players by pool id.
fn name_players_apart(entries: &mut [QueuedEntry]) {
    let mut taken: HashSet<String> = HashSet::new();
    for e in entries.iter_mut() {
        e.login_player_id = e.player_id.clone();
        let mut name = e.player_id.clone();
        while taken.contains(&name) {
            name = format!("{name}#{}", e.entry_id);
        }
        taken.insert(name.clone());
        e.player_id = name;
    }
}

/// What a login's player id names in this round. A peer ping or a past match names a
/// player of the same login: the pool id of that login's entry when it is pooled; an id
/// no pooled entry of the login has is kept as it is, unless it is another player's pool
/// id (then it names no one in the round, and is dropped).
pub struct PoolIds {
    by_login: HashMap<(String, String), String>,
    pooled: HashSet<String>,
}

impl PoolIds {
    pub fn of(entries: &[QueuedEntry]) -> Self {
        PoolIds {
            by_login: entries
                .iter()
                .map(|e| {
                    (
                        (e.owner.clone(), e.login_player_id.clone()),
                        e.player_id.clone(),
                    )
                })
                .collect(),
            pooled: entries.iter().map(|e| e.player_id.clone()).collect(),
        }
    }

    pub fn name(&self, owner: &str, player_id: &str) -> Option<String> {
        match self
            .by_login
            .get(&(owner.to_string(), player_id.to_string()))
        {
            Some(id) => Some(id.clone()),
            None if self.pooled.contains(player_id) => None,
            None => Some(player_id.to_string()),
        }
    }
}

/// A past seat as the history query reads it: match id, time, team, pool id, map.
type Seat = (i64, DateTime<Utc>, i32, String, Option<String>);

fn group_history(rows: Vec<Seat>) -> Vec<PastMatch> {
    let mut matches: Vec<PastMatch> = Vec::new();
    let mut last_id = None;
    for (match_id, at, team, player, map) in rows {
        if last_id != Some(match_id) {
            last_id = Some(match_id);
            matches.push(PastMatch {
                teams: Vec::new(),
                at,
                map,
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
        let ids = PoolIds::of(&self.entries);
        for e in &self.entries {
            match entry_to_player(e) {
                Ok(mut p) => {
                    p.peer_pings = std::mem::take(&mut p.peer_pings)
                        .into_iter()
                        .filter_map(|(peer, ms)| ids.name(&e.owner, &peer).map(|id| (id, ms)))
                        .collect();
                    players.push(p)
                }
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

    /// What each login's player ids name in this round (peer pings, sessions' members).
    pub fn pool_ids(&self) -> PoolIds {
        PoolIds::of(&self.entries)
    }

    /// Each pooled player's avoids, as the pool ids of the avoided players pooled in this
    /// round (an avoid of someone not queued now costs the round nothing), newest first.
    /// Avoids name players of the avoider's own login.
    fn fill_avoids(&self, players: &mut [Player]) {
        if self.avoids.is_empty() {
            return;
        }
        let pool_id = self.pool_id_by_login();
        let mut of: HashMap<&str, Vec<String>> = HashMap::new();
        for a in &self.avoids {
            let (Some(&me), Some(&them)) = (
                pool_id.get(&(a.owner.as_str(), a.player_id.as_str())),
                pool_id.get(&(a.owner.as_str(), a.avoided_player_id.as_str())),
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

    /// Each pooled player's pool id by (login, the login's player id).
    pub fn pool_id_by_login(&self) -> HashMap<(&str, &str), &str> {
        self.entries
            .iter()
            .map(|e| {
                (
                    (e.owner.as_str(), e.login_player_id.as_str()),
                    e.player_id.as_str(),
                )
            })
            .collect()
    }

    /// entry_id by pool id (one queued row per player per queue).
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(entry_id: i64, owner: &str, player_id: &str) -> QueuedEntry {
        QueuedEntry {
            entry_id,
            player_id: player_id.into(),
            owner: owner.into(),
            login_player_id: String::new(),
            party_id: None,
            skill: 1500.0,
            skill_sigma: None,
            latencies: "{}".into(),
            peer_pings: "{}".into(),
            roles: Vec::new(),
            side: None,
            enqueued_at: DateTime::<Utc>::UNIX_EPOCH,
            party_key: None,
            party_size: None,
            attributes: "{}".into(),
            bounced: false,
        }
    }

    #[test]
    fn pool_ids_keep_player_ids_and_tell_logins_apart() {
        let mut entries = vec![
            entry(1, "a", "alice"),
            entry(2, "b", "alice"),
            entry(3, "a", "alice#4"),
            entry(4, "c", "alice"),
            entry(5, "b", "bob"),
        ];
        name_players_apart(&mut entries);
        let names: Vec<&str> = entries.iter().map(|e| e.player_id.as_str()).collect();
        assert_eq!(names, ["alice", "alice#2", "alice#4", "alice#4#4", "bob"]);
        let ids = PoolIds::of(&entries);
        assert_eq!(ids.name("b", "alice").as_deref(), Some("alice#2"));
        assert_eq!(ids.name("c", "alice").as_deref(), Some("alice#4#4"));
        // A login's player not in the pool keeps its id, unless that names someone else.
        assert_eq!(ids.name("a", "carol").as_deref(), Some("carol"));
        assert_eq!(ids.name("a", "bob"), None);
        assert_eq!(ids.name("c", "alice#2"), None);
    }

    #[test]
    fn one_login_keeps_every_player_id() {
        let mut entries = vec![entry(1, "a", "alice"), entry(2, "a", "bob")];
        name_players_apart(&mut entries);
        let ids = PoolIds::of(&entries);
        assert_eq!(entries[0].player_id, "alice");
        assert_eq!(entries[1].player_id, "bob");
        assert_eq!(ids.name("a", "bob").as_deref(), Some("bob"));
        assert_eq!(ids.name("a", "zed").as_deref(), Some("zed"));
    }
}
