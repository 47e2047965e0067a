//! A game backend's side: the front door's SQL functions as a `matchmaker_client` login
//! calls them, one call per helper.
//!
//! ```ignore
//! let client = Client::login(&tdb, 2).await;
//! client.enqueue("q", "alice", 1500.0).latency("eu", 30.0).await;
//! client.party("q", "crew").member("bob", 1500.0).member("carol", 1450.0).await;
//! assert_eq!(client.cancel("alice").await, 1);
//! ```
//!
//! The free functions take any pool (a test's superuser pool, a second login's), the
//! [`Client`] methods its own. Awaiting a builder panics on a refusal, naming the call;
//! [`Enqueue::send`] and [`PartyEnqueue::send`] return it, for tests about refusals.

use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;

use serde_json::{Value, json};
use sqlx::postgres::PgListener;
use sqlx::{PgExecutor, PgPool};

use crate::postgres::{TestDb, client_login};

/// One `enqueue()` call; the optional arguments default as the SQL function's do.
#[must_use = "an enqueue does nothing until awaited"]
pub struct Enqueue<'e, E> {
    db: E,
    lifetime: PhantomData<&'e ()>,
    queue: String,
    player: String,
    skill: f64,
    latencies: Value,
    peer_pings: Value,
    roles: Vec<String>,
    side: Option<f64>,
    skill_sigma: Option<f64>,
    attributes: Value,
}

/// A solo player into `queue` through `enqueue()`, as whoever `db` is logged in as.
pub fn enqueue<'e, E: PgExecutor<'e>>(
    db: E,
    queue: &str,
    player: &str,
    skill: f64,
) -> Enqueue<'e, E> {
    Enqueue {
        db,
        lifetime: PhantomData,
        queue: queue.to_string(),
        player: player.to_string(),
        skill,
        latencies: json!({}),
        peer_pings: json!({}),
        roles: Vec::new(),
        side: None,
        skill_sigma: None,
        attributes: json!({}),
    }
}

impl<'e, E: PgExecutor<'e>> Enqueue<'e, E> {
    /// A latency to one region, in ms (more calls, more regions).
    pub fn latency(mut self, region: &str, ms: f64) -> Self {
        self.latencies[region] = json!(ms);
        self
    }

    /// The whole latencies object.
    pub fn latencies(mut self, latencies: Value) -> Self {
        self.latencies = latencies;
        self
    }

    pub fn peer_pings(mut self, peer_pings: Value) -> Self {
        self.peer_pings = peer_pings;
        self
    }

    pub fn roles(mut self, roles: &[&str]) -> Self {
        self.roles = roles.iter().map(|r| r.to_string()).collect();
        self
    }

    pub fn side(mut self, side: f64) -> Self {
        self.side = Some(side);
        self
    }

    pub fn skill_sigma(mut self, sigma: f64) -> Self {
        self.skill_sigma = Some(sigma);
        self
    }

    /// The attributes object (`{"build": "1.4.2", ...}`).
    pub fn attributes(mut self, attributes: Value) -> Self {
        self.attributes = attributes;
        self
    }

    /// The call; its entry id, or the refusal.
    pub async fn send(self) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar(
            "SELECT enqueue(queue => $1, player_id => $2, skill => $3, latencies => $4,
                            peer_pings => $5, roles => $6, side => $7, skill_sigma => $8,
                            attributes => $9)",
        )
        .bind(&self.queue)
        .bind(&self.player)
        .bind(self.skill)
        .bind(&self.latencies)
        .bind(&self.peer_pings)
        .bind(&self.roles)
        .bind(self.side)
        .bind(self.skill_sigma)
        .bind(&self.attributes)
        .fetch_one(self.db)
        .await
    }
}

impl<'e, E: PgExecutor<'e> + Send + 'e> IntoFuture for Enqueue<'e, E> {
    type Output = i64;
    type IntoFuture = Pin<Box<dyn Future<Output = i64> + Send + 'e>>;

    /// The entry id; panics on a refusal.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let what = format!("enqueue {} into {}", self.player, self.queue);
            self.send().await.unwrap_or_else(|e| panic!("{what}: {e}"))
        })
    }
}

/// One `enqueue_party()` call; members are added one by one.
#[must_use = "an enqueue does nothing until awaited"]
pub struct PartyEnqueue<'e, E> {
    db: E,
    lifetime: PhantomData<&'e ()>,
    queue: String,
    party_id: String,
    members: Vec<Value>,
}

/// A party into `queue` through `enqueue_party()`, as whoever `db` is logged in as.
pub fn enqueue_party<'e, E: PgExecutor<'e>>(
    db: E,
    queue: &str,
    party_id: &str,
) -> PartyEnqueue<'e, E> {
    PartyEnqueue {
        db,
        lifetime: PhantomData,
        queue: queue.to_string(),
        party_id: party_id.to_string(),
        members: Vec::new(),
    }
}

impl<'e, E: PgExecutor<'e>> PartyEnqueue<'e, E> {
    /// A member with a skill and nothing else.
    pub fn member(self, player: &str, skill: f64) -> Self {
        self.member_json(json!({"player_id": player, "skill": skill}))
    }

    /// Members with one skill, each 30 ms from region `eu`.
    pub fn members(self, players: &[&str], skill: f64) -> Self {
        self.members_at(players, skill, "eu", 30.0)
    }

    /// Members with one skill and one latency to one region each.
    pub fn members_at(mut self, players: &[&str], skill: f64, region: &str, ms: f64) -> Self {
        for p in players {
            self = self
                .member_json(json!({"player_id": p, "skill": skill, "latencies": {region: ms}}));
        }
        self
    }

    /// A member as `enqueue_party()` takes it (`{"player_id": ..., "skill": ..., ...}`).
    pub fn member_json(mut self, member: Value) -> Self {
        self.members.push(member);
        self
    }

    /// The call; (player id, entry id) per member, or the refusal.
    pub async fn send(self) -> Result<Vec<(String, i64)>, sqlx::Error> {
        sqlx::query_as("SELECT player_id, entry_id FROM enqueue_party($1, $2, $3)")
            .bind(&self.queue)
            .bind(&self.party_id)
            .bind(Value::Array(self.members))
            .fetch_all(self.db)
            .await
    }
}

impl<'e, E: PgExecutor<'e> + Send + 'e> IntoFuture for PartyEnqueue<'e, E> {
    type Output = Vec<(String, i64)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'e>>;

    /// (player id, entry id) per member; panics on a refusal.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let what = format!("enqueue_party {} into {}", self.party_id, self.queue);
            self.send().await.unwrap_or_else(|e| panic!("{what}: {e}"))
        })
    }
}

/// `cancel(player)` in every queue: the number of entries cancelled.
pub async fn cancel<'e>(db: impl PgExecutor<'e>, player: &str) -> i32 {
    sqlx::query_scalar("SELECT cancel($1)")
        .bind(player)
        .fetch_one(db)
        .await
        .unwrap_or_else(|e| panic!("cancel {player}: {e}"))
}

/// `keep_alive(players)` in every queue: the number of entries refreshed.
pub async fn keep_alive<'e>(db: impl PgExecutor<'e>, players: &[&str]) -> i32 {
    sqlx::query_scalar("SELECT keep_alive($1)")
        .bind(players)
        .fetch_one(db)
        .await
        .unwrap_or_else(|e| panic!("keep_alive {players:?}: {e}"))
}

/// A player's rows in `player_status`: (queue, status, reason), by queue.
pub async fn player_status<'e>(
    db: impl PgExecutor<'e>,
    player: &str,
) -> Vec<(String, String, Option<String>)> {
    sqlx::query_as("SELECT queue, status, reason FROM player_status($1::text) ORDER BY queue")
        .bind(player)
        .fetch_all(db)
        .await
        .unwrap()
}

/// `accept_match(player, match)`: 'accepted', 'ready', ..., or the refusal.
pub async fn accept_match<'e>(
    db: impl PgExecutor<'e>,
    player: &str,
    match_id: i64,
) -> Result<String, sqlx::Error> {
    sqlx::query_scalar("SELECT accept_match($1, $2)")
        .bind(player)
        .bind(match_id)
        .fetch_one(db)
        .await
}

/// `decline_match(player, match)`: 'declined', 'already_declined', or the refusal.
pub async fn decline_match<'e>(
    db: impl PgExecutor<'e>,
    player: &str,
    match_id: i64,
) -> Result<String, sqlx::Error> {
    sqlx::query_scalar("SELECT decline_match($1, $2)")
        .bind(player)
        .bind(match_id)
        .fetch_one(db)
        .await
}

/// A game backend: a new login in `matchmaker_client` and a pool connected as it.
pub struct Client {
    /// The login's name: the `owner` of the entries it enqueues.
    pub login: String,
    pub pool: PgPool,
}

impl Client {
    /// A new client login on `tdb`, with a pool of `max_connections`.
    pub async fn login(tdb: &TestDb, max_connections: u32) -> Client {
        let (login, pool) = client_login(tdb, max_connections).await;
        Client { login, pool }
    }

    /// See [`enqueue`].
    pub fn enqueue(&self, queue: &str, player: &str, skill: f64) -> Enqueue<'_, &PgPool> {
        enqueue(&self.pool, queue, player, skill)
    }

    /// See [`enqueue_party`].
    pub fn party(&self, queue: &str, party_id: &str) -> PartyEnqueue<'_, &PgPool> {
        enqueue_party(&self.pool, queue, party_id)
    }

    pub async fn cancel(&self, player: &str) -> i32 {
        cancel(&self.pool, player).await
    }

    pub async fn keep_alive(&self, players: &[&str]) -> i32 {
        keep_alive(&self.pool, players).await
    }

    pub async fn status(&self, player: &str) -> Vec<(String, String, Option<String>)> {
        player_status(&self.pool, player).await
    }

    pub async fn accept(&self, player: &str, match_id: i64) -> Result<String, sqlx::Error> {
        accept_match(&self.pool, player, match_id).await
    }

    pub async fn decline(&self, player: &str, match_id: i64) -> Result<String, sqlx::Error> {
        decline_match(&self.pool, player, match_id).await
    }
}

/// `queue_channel(queue)`: the channel on which `db`'s login hears of `queue`.
pub async fn queue_channel<'e>(db: impl PgExecutor<'e>, queue: &str) -> String {
    sqlx::query_scalar("SELECT queue_channel($1)")
        .bind(queue)
        .fetch_one(db)
        .await
        .unwrap_or_else(|e| panic!("queue_channel {queue}: {e}"))
}

/// A session of `db`'s login LISTENing on its channel of `queue`, and the channel.
pub async fn listen_to(db: &PgPool, queue: &str) -> (PgListener, String) {
    let channel = queue_channel(db, queue).await;
    let mut listener = PgListener::connect_with(db).await.unwrap();
    listener.listen(&channel).await.unwrap();
    (listener, channel)
}
