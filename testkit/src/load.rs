//! The client load of the soak and the fault tests: solo players enqueued into one queue
//! or two, cancels, and cancel storms fired at a solve in flight, with a log of what the
//! clients were told for the audit. The soak and the daemon's fault tests
//! run it.

use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sqlx::PgPool;
use tokio::sync::watch;

use matchmaker::db::{self, DbError};

use crate::audit;
use matchmaker_optimizer::Player;

/// What the client load does, one action per `pace`.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub queue: String,
    /// A second queue, and the share of solo players who join it too (in the same
    /// transaction as the first, so no commit sees one entry without the other).
    pub second_queue: Option<(String, f64)>,
    /// Largest party (1: solo players only).
    pub max_party: usize,
    pub pace: Duration,
    /// Player ids are `<prefix><n>`: one id per wait, never reused.
    pub prefix: String,
    pub seed: u64,
}

/// What the clients were told.
#[derive(Debug, Clone, Default)]
pub struct ClientLog {
    /// Entry ids returned by enqueue / enqueue_party.
    pub enqueued: Vec<i64>,
    /// Players (and their party mates) whose cancel() reported entries cancelled.
    pub cancelled_players: Vec<String>,
    /// cancel() calls answered (whatever they returned), and how many returned 0.
    pub cancels: u64,
    pub cancels_too_late: u64,
    /// Calls that failed (the database restarting); their outcome is unknown and not
    /// checked.
    pub errors: u64,
    pub last_error: Option<String>,
}

impl ClientLog {
    pub fn extend(&mut self, other: ClientLog) {
        self.enqueued.extend(other.enqueued);
        self.cancelled_players.extend(other.cancelled_players);
        self.cancels += other.cancels;
        self.cancels_too_late += other.cancels_too_late;
        self.errors += other.errors;
        if other.last_error.is_some() {
            self.last_error = other.last_error;
        }
    }

    /// What the audit checks against.
    pub fn expected(&self) -> audit::Expected<'_> {
        audit::Expected {
            entries: &self.enqueued,
            cancelled_players: &self.cancelled_players,
        }
    }
}

/// A solo player with a skill and pings to two regions.
pub fn load_player(id: String, rng: &mut Xoshiro256PlusPlus) -> Player {
    Player {
        id,
        party: None,
        skill: 1000.0 + rng.random_range(0.0..1000.0_f64).round(),
        skill_sigma: None,
        enqueued_at: None,
        latencies: [
            ("eu".to_string(), rng.random_range(10.0..70.0_f64).round()),
            ("us".to_string(), rng.random_range(60.0..160.0_f64).round()),
        ]
        .into_iter()
        .collect(),
        peer_pings: Default::default(),
        roles: Vec::new(),
        side: None,
        ..Default::default()
    }
}

/// Enqueue and cancel until `stop` turns true; returns what the clients were told.
pub async fn run_load(db: PgPool, spec: LoadSpec, mut stop: watch::Receiver<bool>) -> ClientLog {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(spec.seed);
    let mut log = ClientLog::default();
    // Recent waits (player ids of one enqueue call), the cancel targets.
    let mut recent: Vec<Vec<String>> = Vec::new();
    let mut next = 0u64;
    let mut ticker = tokio::time::interval(spec.pace);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.changed() => {}
            _ = ticker.tick() => {}
        }
        if *stop.borrow() {
            break;
        }
        let roll: f64 = rng.random();
        let result: Result<(), DbError> = if roll < 0.25 && !recent.is_empty() {
            let group = recent.swap_remove(rng.random_range(0..recent.len()));
            let who = &group[rng.random_range(0..group.len())];
            match db::enqueue::cancel(&db, None, who).await {
                Ok(n) => {
                    log.cancels += 1;
                    if n > 0 {
                        // A party is cancelled whole: none of its members may be matched.
                        log.cancelled_players.extend(group.iter().cloned());
                    } else {
                        log.cancels_too_late += 1;
                    }
                    Ok(())
                }
                Err(e) => Err(e),
            }
        } else if roll < 0.45 && spec.max_party >= 2 {
            let size = rng.random_range(2..=spec.max_party);
            next += 1;
            let party = format!("{}party{next}", spec.prefix);
            let members: Vec<Player> = (0..size)
                .map(|i| load_player(format!("{}{next}m{i}", spec.prefix), &mut rng))
                .collect();
            match db::enqueue::enqueue_party(&db, &spec.queue, &party, &members).await {
                Ok(rows) => {
                    log.enqueued.extend(rows.iter().map(|(_, id)| *id));
                    recent.push(rows.into_iter().map(|(p, _)| p).collect());
                    Ok(())
                }
                Err(e) => Err(e),
            }
        } else {
            next += 1;
            let player = load_player(format!("{}{next}", spec.prefix), &mut rng);
            let also = spec
                .second_queue
                .as_ref()
                .filter(|(_, share)| rng.random_bool(*share))
                .map(|(q, _)| q.clone());
            match enqueue_solo(&db, &spec.queue, also.as_deref(), &player).await {
                Ok(ids) => {
                    log.enqueued.extend(ids);
                    recent.push(vec![player.id]);
                    Ok(())
                }
                Err(e) => Err(e),
            }
        };
        if recent.len() > 400 {
            recent.drain(..200);
        }
        if let Err(e) = result {
            log.errors += 1;
            log.last_error = Some(e.to_string());
            // The database is probably restarting: do not spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    log
}

/// One solo player into `queue` (and `also`), in one transaction.
async fn enqueue_solo(
    db: &PgPool,
    queue: &str,
    also: Option<&str>,
    player: &Player,
) -> Result<Vec<i64>, DbError> {
    let mut tx = db.begin().await?;
    let mut ids = vec![db::enqueue::enqueue(&mut *tx, queue, player).await?];
    if let Some(other) = also {
        ids.push(db::enqueue::enqueue(&mut *tx, other, player).await?);
    }
    tx.commit().await?;
    Ok(ids)
}

/// A burst of players enqueued at once, then cancels fired at them while the round they
/// trigger is solved.
#[derive(Debug, Clone)]
pub struct StormSpec {
    pub queue: String,
    pub players: usize,
    /// Parties of two among them (the rest solo).
    pub parties: usize,
    pub cancels: usize,
    /// The cancels start this long after the burst commits, spread over `spread`.
    pub start_after: Duration,
    pub spread: Duration,
    pub prefix: String,
    pub seed: u64,
}

/// What a storm did.
#[derive(Debug, Clone, Default)]
pub struct StormLog {
    pub clients: ClientLog,
    /// The burst's players.
    pub players: Vec<String>,
    /// When the burst committed, and when the cancels were answered (wall clock).
    pub burst_at: Option<chrono::DateTime<chrono::Utc>>,
    pub cancels_done_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Enqueue the burst in one transaction (one NOTIFY wakes the leader), then fire the
/// cancels concurrently at random moments of the window.
pub async fn cancel_storm(db: &PgPool, spec: &StormSpec) -> Result<StormLog, DbError> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(spec.seed);
    let mut log = StormLog::default();
    // Cancel targets: (the player cancelled, everyone cancelled with them).
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut tx = db.begin().await?;
    let mut placed = 0;
    for k in 0..spec.parties.min(spec.players / 2) {
        let members: Vec<Player> = (0..2)
            .map(|i| load_player(format!("{}p{k}m{i}", spec.prefix), &mut rng))
            .collect();
        let rows = db::enqueue::enqueue_party(
            &mut *tx,
            &spec.queue,
            &format!("{}party{k}", spec.prefix),
            &members,
        )
        .await?;
        log.clients.enqueued.extend(rows.iter().map(|(_, id)| *id));
        groups.push(rows.into_iter().map(|(p, _)| p).collect());
        placed += 2;
    }
    for k in placed..spec.players {
        let player = load_player(format!("{}s{k}", spec.prefix), &mut rng);
        log.clients
            .enqueued
            .push(db::enqueue::enqueue(&mut *tx, &spec.queue, &player).await?);
        groups.push(vec![player.id]);
    }
    tx.commit().await?;
    log.burst_at = Some(chrono::Utc::now());
    log.players = groups.iter().flatten().cloned().collect();

    // Cancel one member of `cancels` distinct waits (a party's cancel takes both).
    let mut order: Vec<usize> = (0..groups.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    let mut tasks = Vec::new();
    for &g in order.iter().take(spec.cancels) {
        let group = groups[g].clone();
        let who = group[rng.random_range(0..group.len())].clone();
        let delay = spec.start_after + spec.spread.mul_f64(rng.random::<f64>());
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            (group, db::enqueue::cancel(&db, None, &who).await)
        }));
    }
    for task in tasks {
        let (group, result) = task.await.expect("cancel task");
        match result {
            Ok(n) => {
                log.clients.cancels += 1;
                if n > 0 {
                    log.clients.cancelled_players.extend(group);
                } else {
                    log.clients.cancels_too_late += 1;
                }
            }
            Err(e) => {
                log.clients.errors += 1;
                log.clients.last_error = Some(e.to_string());
            }
        }
    }
    log.cancels_done_at = Some(chrono::Utc::now());
    Ok(log)
}
