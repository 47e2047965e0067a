//! The load generator behind `matchmaker-lab simulate` and the demo: a player base from the
//! realistic [`Population`] that queues into a running matchmaker through its database,
//! exactly as game clients do: through the client contract's functions (`enqueue`,
//! `enqueue_party`, `keep_alive`, `cancel`) and views (`queue_catalog`, `player_status`,
//! `match_details`), never writing a table, so it also runs as a login role that is a
//! member of `matchmaker_client` and nothing more.
//!
//! Before the first enqueue it waits for the daemon to publish the queue (a row in
//! `queue_catalog`): `enqueue()` refuses a queue the daemon does not serve. The row also
//! gives the queue's party limit and roles: parties are no larger than
//! `max_party_size`, and players accept the queue's roles unless `spec.roles` names
//! others.
//!
//! Each tick (a quarter of a second):
//! - **Arrivals**: new sessions start at `rate` players per second at the busiest time of
//!   day, scaled by how many players are awake worldwide at the simulated hour; who comes
//!   is weighted by the local time of day of their city (Europe in the European evening).
//!   A group is a solo player (`enqueue()`) or a fixed party of 2-3 friends
//!   (`enqueue_party()`: one call, so the daemon never sees half a party). A refusal
//!   (SQLSTATE 22023, `field = value: rule`) is counted and logged once, not fatal.
//! - **Keep-alive**: every `keep_alive_every` of the queue (its ticket TTL / 3, read from
//!   `queue_catalog`), one `keep_alive()` call with every queued player's id, so no
//!   ticket expires while its player waits.
//! - **Cancels**: a share of the groups give up after a patience (default 5-90 s, wall
//!   clock) and call `cancel()` (which takes the whole party out).
//! - **Ready checks and results**: a player whose match waits for its ready check accepts
//!   it (`accept_match`); when a match of its players ends, the simulator reports its
//!   result (`report_result`), drawn from the players' true skills (the population's),
//!   so a rated queue's ratings learn them and the report can hold predictions to
//!   outcomes. On a rated queue (`queue_catalog.rating_pool`) the players enqueue with
//!   `skill => NULL` and play at their ratings; at the end the report holds each
//!   player's rating beside their true skill.
//! - **Matches**: the simulator polls `player_status` for its queued players; a matched
//!   group plays for a simulated match duration, then queues again (`requeue_share`) or
//!   leaves. Returning players are what makes the opponent-variation factor matter; the
//!   report gives the share of opponents met again in consecutive matches.
//! - **Who may meet whom** ([`MeetSpec`]): every player sends `attributes`: one of two
//!   game builds (a party shares its build), a platform with some crossplay opt-outs,
//!   and their languages; after a match some players `avoid()` one of its opponents for
//!   an hour. Every match read is checked against the rules a queue with
//!   `filters.same = ["build"]`, crossplay on `platform` and avoids out of one match
//!   applies: the report counts matches that mix builds, crossplay opt-outs who met
//!   another platform, and pairs who met though one avoids the other.
//!
//! Time: the queue and its rounds run in real time. `speedup` makes the simulated clock
//! (time of day, match durations) run faster than the wall clock, so a demo of a few
//! minutes sees players come back from their matches.
//!
//! The run is bounded: it stops after `duration` (or when `shutdown` resolves), then
//! cancels the entries of its players that are still queued, and returns a report.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sqlx::PgPool;
use thiserror::Error;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::sim::population::{CityPicker, Population, PopulationSpec, Profile, activity};
use matchmaker::db::enqueue::Skill;
use matchmaker::db::{self, DbError};
use matchmaker_optimizer::{Attribute, Player};

/// Wall-clock period of the simulation loop.
const TICK: Duration = Duration::from_millis(250);

/// Keep-alive cadence when the queue's catalog row cannot be read (the queue was retired
/// meanwhile).
const DEFAULT_KEEP_ALIVE_EVERY: Duration = Duration::from_secs(30);

/// `keep_alive()` takes at most this many player ids per call.
const KEEP_ALIVE_MAX_IDS: usize = 10_000;

/// SQLSTATE of the contract's refusals (invalid_parameter_value).
const REFUSED: &str = "22023";

/// What to simulate. `Default`: 2 players per second at peak into `ranked_3v3` for one
/// minute, from a base of 3,000 players, in real time.
#[derive(Debug, Clone, PartialEq)]
pub struct SimulatorOptions {
    pub queue: String,
    /// New players per wall-clock second at the busiest time of day (returning players
    /// come on top).
    pub rate: f64,
    /// Wall-clock length of the run.
    pub duration: Duration,
    /// Size of the player base (distinct players, in fixed solo / party groups).
    pub population: usize,
    pub seed: u64,
    /// Simulated seconds per wall-clock second, for the time of day and match durations.
    pub speedup: f64,
    /// Simulated UTC time at the start. `None`: now.
    pub start: Option<DateTime<Utc>>,
    /// Mean simulated match duration (each match: 60% to 140% of it).
    pub match_duration: Duration,
    /// Share of groups that cancel if not matched within their patience.
    pub cancel_share: f64,
    /// Wall-clock patience of a cancelling group: uniform between these two.
    pub patience: (Duration, Duration),
    /// Share of groups that queue again right after their match.
    pub requeue_share: f64,
    /// Player traits: party share and sizes, roles, side preferences, sigma.
    /// (`players`, `hour_utc`, `now` and `id_prefix` are ignored here.)
    pub spec: PopulationSpec,
    /// Player ids are `{id_prefix}{n}`; default `sim{seed}-`. Two simulators on one queue
    /// need different prefixes.
    pub id_prefix: Option<String>,
    /// How long to wait at the start for the daemon to publish the queue (its row in
    /// `queue_catalog`) before giving up.
    pub publish_timeout: Duration,
    /// Attributes and avoids the players send.
    pub meet: MeetSpec,
}

/// Who may meet whom, as the simulated players ask for it. Drawn from a generator of its
/// own, so the player base and its arrivals are the same with or without it.
#[derive(Debug, Clone, PartialEq)]
pub struct MeetSpec {
    /// Send `attributes` at all (`build`, `platform`, `crossplay`, `language`).
    pub attributes: bool,
    /// Share of groups still on the older of the two builds (`1.4`; the others `1.5`).
    pub old_build_share: f64,
    /// Share of console players (`ps5`, `xbox`) who opt out of crossplay
    /// (`"crossplay": "off"`).
    pub crossplay_off_share: f64,
    /// Share of players who, after a match, avoid one of its opponents for an hour.
    pub avoid_share: f64,
}

impl Default for MeetSpec {
    fn default() -> Self {
        MeetSpec {
            attributes: true,
            old_build_share: 0.2,
            crossplay_off_share: 0.3,
            avoid_share: 0.05,
        }
    }
}

impl MeetSpec {
    /// Neither attributes nor avoids: the players of the measured peak evening.
    pub fn none() -> Self {
        MeetSpec {
            attributes: false,
            old_build_share: 0.0,
            crossplay_off_share: 0.0,
            avoid_share: 0.0,
        }
    }
}

impl Default for SimulatorOptions {
    fn default() -> Self {
        SimulatorOptions {
            queue: "ranked_3v3".into(),
            rate: 2.0,
            duration: Duration::from_secs(60),
            population: 3000,
            seed: 1,
            speedup: 1.0,
            start: None,
            match_duration: Duration::from_secs(10 * 60),
            cancel_share: 0.05,
            patience: (Duration::from_secs(5), Duration::from_secs(90)),
            requeue_share: 0.75,
            spec: PopulationSpec::default(),
            id_prefix: None,
            publish_timeout: Duration::from_secs(60),
            meet: MeetSpec::default(),
        }
    }
}

/// Errors of a simulation run.
#[derive(Debug, Error)]
pub enum SimError {
    #[error("invalid simulator option {option}: {reason}")]
    InvalidOption {
        option: &'static str,
        reason: String,
    },
    #[error(
        "the database has no client contract (player_status, queue_catalog, enqueue()): \
         run `matchmaker migrate` first"
    )]
    NoSchema,
    #[error(
        "queue {queue:?} was not published within {}: is a daemon running with this queue \
         in its config? (published queues: {})",
        humantime::format_duration(*.waited),
        if .published.is_empty() { "none".to_string() } else { .published.join(", ") }
    )]
    QueueNotPublished {
        queue: String,
        waited: Duration,
        published: Vec<String>,
    },
    /// The database answered something the contract does not allow.
    #[error("unexpected answer from the client contract: {0}")]
    Contract(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<sqlx::Error> for SimError {
    fn from(e: sqlx::Error) -> Self {
        SimError::Db(DbError::from(e))
    }
}

/// Live counters, published while the simulator runs (for the demo's status view).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimProgress {
    /// The simulated clock.
    pub sim_time: Option<DateTime<Utc>>,
    /// Set while the simulator waits for the daemon to publish this queue.
    pub waiting_for_queue: Option<String>,
    pub queued_players: usize,
    pub playing_players: usize,
    pub report: SimReport,
}

/// What happened during a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimReport {
    /// Players enqueued (each enqueue counts; returning players count again).
    pub enqueued: u64,
    /// Of which in parties.
    pub enqueued_in_parties: u64,
    /// Of which returning after a match.
    pub requeued: u64,
    pub matched: u64,
    /// Players whose group cancelled (`cancel()`).
    pub cancelled: u64,
    /// Entries the daemon rejected (with a reason), or withdrawn because a player was
    /// matched in another queue.
    pub rejected: u64,
    /// Entries that expired: never kept alive within the queue's ticket TTL. The
    /// keep-alive should keep this at 0.
    pub expired: u64,
    /// Group enqueues the contract refused (SQLSTATE 22023, e.g. a player already queued
    /// by another client, a region the queue does not know), with the first message.
    pub refused: u64,
    pub first_refusal: Option<String>,
    /// `keep_alive()` calls made, and the entries they refreshed in total.
    pub keep_alive_calls: u64,
    pub kept_alive: u64,
    /// Arrivals skipped because every player of the base was already busy.
    pub base_exhausted: u64,
    /// Distinct matches our players were placed in.
    pub matches: u64,
    /// Opponent pairs counted in consecutive matches of one player, and how many of them
    /// had met as opponents in that player's previous match.
    pub opponent_pairs: u64,
    pub repeated_opponent_pairs: u64,
    /// Wall-clock wait from enqueue to match, per matched player (seconds).
    pub waits_secs: Vec<f64>,
    /// Avoids sent (`avoid()` calls).
    pub avoids: u64,
    /// Matches checked against the rules of [`MeetSpec`] (those whose players this
    /// simulator sent), and the breaks found: matches mixing builds, crossplay opt-outs
    /// who met another platform, pairs in one match though one avoids the other.
    pub meet_checked: u64,
    pub build_mixes: u64,
    pub crossplay_breaks: u64,
    pub avoid_breaks: u64,
    /// Entries still queued at the end, cancelled by the clean-up.
    pub cleaned_up: u64,
    /// Ready checks our players accepted (`accept_match`).
    pub accepted: u64,
    /// Results reported when a match of our players ended (`report_result`), drawn from
    /// the players' true skills; and reports refused (a match another client reported).
    pub results_reported: u64,
    pub results_refused: u64,
    /// The queue's rating pool when it is rated (`queue_catalog.rating_pool`): then the
    /// simulator enqueues with `skill => NULL` and the players play at their ratings.
    pub rating_pool: Option<String>,
    /// Per two-team match whose result was reported, in the order reported: seconds
    /// since the start, and how far the first team's true chance to win (from the
    /// players' true skills) was from 50%.
    pub true_gaps: Vec<(f64, f64)>,
    /// On a rated queue, at the end: each of our players with a rating (`player_ratings`).
    pub ratings: Vec<RatedPlayer>,
}

/// A player's true skill beside the rating the queue's results gave them.
#[derive(Debug, Clone, PartialEq)]
pub struct RatedPlayer {
    pub true_skill: f64,
    pub rating: f64,
    pub matches: i64,
}

impl SimReport {
    /// Share of opponents a player meets again in their next match.
    pub fn repeat_opponent_share(&self) -> Option<f64> {
        (self.opponent_pairs > 0)
            .then(|| self.repeated_opponent_pairs as f64 / self.opponent_pairs as f64)
    }

    /// Wait-time percentile `p` in [0, 1] (nearest rank).
    pub fn wait_percentile(&self, p: f64) -> Option<f64> {
        let mut w = self.waits_secs.clone();
        if w.is_empty() {
            return None;
        }
        w.sort_by(f64::total_cmp);
        Some(w[((w.len() - 1) as f64 * p.clamp(0.0, 1.0)).round() as usize])
    }
}

impl fmt::Display for SimReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "enqueued {} (in parties {}, returning {}), matched {} into {} matches, \
             cancelled {}, rejected {}, expired {}, {} keep-alive calls",
            self.enqueued,
            self.enqueued_in_parties,
            self.requeued,
            self.matched,
            self.matches,
            self.cancelled,
            self.rejected,
            self.expired,
            self.keep_alive_calls
        )?;
        if let (Some(p50), Some(p90)) = (self.wait_percentile(0.5), self.wait_percentile(0.9)) {
            write!(f, ", wait p50 {p50:.1} s p90 {p90:.1} s")?;
        }
        if let Some(share) = self.repeat_opponent_share() {
            write!(f, ", opponents met again {:.1}%", share * 100.0)?;
        }
        if self.accepted > 0 {
            write!(f, ", {} ready checks accepted", self.accepted)?;
        }
        if self.results_reported + self.results_refused > 0 {
            write!(
                f,
                ", {} results reported ({} refused)",
                self.results_reported, self.results_refused
            )?;
        }
        if self.refused > 0 {
            write!(
                f,
                ", {} enqueues refused (first: {})",
                self.refused,
                self.first_refusal.as_deref().unwrap_or("?")
            )?;
        }
        if self.meet_checked > 0 {
            write!(
                f,
                ", {} avoids sent; of {} matches read, {} mix builds and {} put a crossplay \
                 opt-out with another platform (a break only where the queue sets \
                 filters.same = [\"build\"] or filters.crossplay), {} pairs met though one \
                 avoids the other",
                self.avoids,
                self.meet_checked,
                self.build_mixes,
                self.crossplay_breaks,
                self.avoid_breaks
            )?;
        }
        if self.cleaned_up > 0 {
            write!(f, ", {} still queued at the end cancelled", self.cleaned_up)?;
        }
        if self.base_exhausted > 0 {
            write!(
                f,
                ", {} arrivals skipped (player base all busy: raise --population)",
                self.base_exhausted
            )?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
enum GroupState {
    Idle,
    Queued {
        entries: Vec<i64>,
        since: Instant,
        cancel_at: Option<Instant>,
    },
    Playing {
        until: Instant,
    },
}

/// A solo player or a fixed party of friends who always queue together.
#[derive(Debug, Clone)]
struct Group {
    members: Vec<usize>,
    party_id: Option<String>,
    state: GroupState,
}

/// The game's randomness when the simulator plays a match: Weng-Lin's beta over the true
/// skills (a team 200 points stronger in sum wins about three times in four).
const RESULT_BETA: f64 = 125.0;

/// Runs the load generator against `db` until `options.duration` has passed or
/// `shutdown` resolves. Progress is published on `progress` when given.
pub async fn run_simulator(
    db: &PgPool,
    population: &Population,
    options: &SimulatorOptions,
    progress: Option<watch::Sender<SimProgress>>,
    shutdown: impl Future<Output = ()>,
) -> Result<SimReport, SimError> {
    validate(options)?;
    // Fail early with a clear message when the schema is missing (the names are looked
    // up without reading anything: a client login may lack rights on other objects).
    let has_contract: bool = sqlx::query_scalar(
        "SELECT to_regclass('player_status') IS NOT NULL
            AND to_regclass('queue_catalog') IS NOT NULL
            AND to_regprocedure('enqueue(text, text, double precision, jsonb, jsonb, text[],
                                         double precision, double precision, jsonb)')
                IS NOT NULL",
    )
    .fetch_one(db)
    .await?;
    if !has_contract {
        return Err(SimError::NoSchema);
    }

    tokio::pin!(shutdown);
    let published = wait_for_queue(db, options, progress.as_ref(), &mut shutdown).await?;
    let Some(catalog) = published else {
        // Shut down while waiting: nothing was enqueued.
        return Ok(SimReport::default());
    };
    let mut options = options.clone();
    catalog.fit(&mut options.spec);
    let mut sim = Simulation::new(population, &options);
    sim.keep_alive_every = catalog.keep_alive_every;
    sim.max_avoids = catalog.max_avoids;
    sim.report.rating_pool = catalog.rating_pool.clone();
    // A previous run with the same prefix may have left players queued (killed run).
    sim.report.cleaned_up += cancel_prefix(db, &options.queue, &sim.prefix).await?;

    let started = Instant::now();
    sim.next_keep_alive = started + sim.keep_alive_every;
    let mut ticker = tokio::time::interval(TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last = started;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = &mut shutdown => break,
        }
        let now = Instant::now();
        if now.duration_since(started) >= options.duration {
            break;
        }
        let dt = now.duration_since(last).as_secs_f64();
        last = now;
        sim.step(db, now, now.duration_since(started), dt).await?;
        if let Some(tx) = &progress {
            tx.send_replace(sim.progress(now.duration_since(started)));
        }
    }
    sim.report.cleaned_up += cancel_prefix(db, &options.queue, &sim.prefix).await?;
    sim.read_ratings(db).await?;
    if let Some(tx) = &progress {
        tx.send_replace(sim.progress(Instant::now().duration_since(started)));
    }
    Ok(sim.report)
}

/// What the simulator reads of its queue's `queue_catalog` row.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogQueue {
    pub keep_alive_every: Duration,
    pub max_party_size: usize,
    pub roles: Vec<String>,
    /// The newest avoids of a player the queue honours.
    pub max_avoids: usize,
    /// A rated queue's rating pool: its players may enqueue with `skill => NULL`.
    pub rating_pool: Option<String>,
}

impl CatalogQueue {
    /// The players this queue takes: parties no larger than its `max_party_size`, its
    /// roles unless the spec names roles of its own.
    pub fn fit(&self, spec: &mut PopulationSpec) {
        spec.max_party_size = spec.max_party_size.min(self.max_party_size).max(1);
        if spec.roles.is_empty() {
            spec.roles = self.roles.clone();
        }
    }
}

/// The queue's row in `queue_catalog` (`None`: not published, or retired).
async fn read_catalog(db: &PgPool, queue: &str) -> Result<Option<CatalogQueue>, SimError> {
    /// keep_alive_every (s), max_party_size, roles, max_avoids, rating_pool.
    type Row = (Option<f64>, i32, Vec<String>, i32, Option<String>);
    let row: Option<Row> = sqlx::query_as(
        "SELECT extract(epoch FROM keep_alive_every)::float8, max_party_size, roles,
                max_avoids, rating_pool
           FROM queue_catalog WHERE queue = $1",
    )
    .bind(queue)
    .fetch_optional(db)
    .await?;
    Ok(row.map(
        |(secs, max_party_size, roles, max_avoids, rating_pool)| CatalogQueue {
            max_avoids: usize::try_from(max_avoids).unwrap_or(0),
            rating_pool,
            keep_alive_every: secs
                .filter(|s| s.is_finite() && *s > 0.0)
                .map_or(DEFAULT_KEEP_ALIVE_EVERY, Duration::from_secs_f64),
            max_party_size: usize::try_from(max_party_size).unwrap_or(1),
            roles,
        },
    ))
}

/// Waits until `queue_catalog` lists the queue (the daemon publishes a queue when its
/// leader takes the lease), and returns its row. `None`: shut down while waiting.
async fn wait_for_queue(
    db: &PgPool,
    options: &SimulatorOptions,
    progress: Option<&watch::Sender<SimProgress>>,
    shutdown: &mut (impl Future<Output = ()> + Unpin),
) -> Result<Option<CatalogQueue>, SimError> {
    let started = Instant::now();
    let mut announced = false;
    loop {
        if let Some(catalog) = read_catalog(db, &options.queue).await? {
            if announced {
                tracing::info!(queue = %options.queue, "the daemon published the queue");
                if let Some(tx) = progress {
                    tx.send_modify(|p| p.waiting_for_queue = None);
                }
            }
            return Ok(Some(catalog));
        }
        if started.elapsed() >= options.publish_timeout {
            let published = sqlx::query_scalar("SELECT queue FROM queue_catalog ORDER BY queue")
                .fetch_all(db)
                .await?;
            return Err(SimError::QueueNotPublished {
                queue: options.queue.clone(),
                waited: options.publish_timeout,
                published,
            });
        }
        if !announced {
            announced = true;
            tracing::info!(
                queue = %options.queue,
                timeout = %humantime::format_duration(options.publish_timeout),
                "waiting for the daemon to publish queue {} (enqueue() refuses unknown queues)",
                options.queue
            );
            if let Some(tx) = progress {
                tx.send_modify(|p| p.waiting_for_queue = Some(options.queue.clone()));
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = &mut *shutdown => return Ok(None),
        }
    }
}

fn validate(o: &SimulatorOptions) -> Result<(), SimError> {
    let bad = |option, reason: &str| {
        Err(SimError::InvalidOption {
            option,
            reason: reason.into(),
        })
    };
    if o.queue.is_empty() {
        return bad("queue", "must not be empty");
    }
    if !(o.rate.is_finite() && o.rate >= 0.0) {
        return bad(
            "rate",
            "must be a non-negative number of players per second",
        );
    }
    if o.population == 0 {
        return bad("population", "must be at least 1 player");
    }
    if !(o.speedup.is_finite() && o.speedup > 0.0) {
        return bad("speedup", "must be a positive number");
    }
    for (option, share) in [
        ("cancel_share", o.cancel_share),
        ("requeue_share", o.requeue_share),
        ("party_share", o.spec.party_share),
        ("old_build_share", o.meet.old_build_share),
        ("crossplay_off_share", o.meet.crossplay_off_share),
        ("avoid_share", o.meet.avoid_share),
    ] {
        if !(0.0..=1.0).contains(&share) {
            return bad(option, "must be between 0 and 1");
        }
    }
    Ok(())
}

struct Simulation<'p> {
    population: &'p Population,
    options: SimulatorOptions,
    prefix: String,
    rng: Xoshiro256PlusPlus,
    profiles: Vec<Profile>,
    groups: Vec<Group>,
    /// Groups not queued and not playing: candidates for a new session.
    idle: Vec<usize>,
    /// entry_id -> (group, member profile index)
    entries: HashMap<i64, (usize, usize)>,
    /// Opponents of each profile in its last match.
    last_opponents: HashMap<usize, Vec<String>>,
    /// player id -> profile index
    by_id: HashMap<String, usize>,
    start: DateTime<Utc>,
    /// Fraction of the players awake worldwide, at its maximum over the day.
    peak_awake: f64,
    /// The queue's keep-alive cadence (`queue_catalog.keep_alive_every`) and the next
    /// keep-alive call.
    keep_alive_every: Duration,
    next_keep_alive: Instant,
    report: SimReport,
    /// Per profile: the attributes it sends (empty: none).
    attributes: Vec<BTreeMap<String, Attribute>>,
    /// Per player id: the players they avoid, newest last.
    avoids: HashMap<String, Vec<String>>,
    /// The newest avoids of a player the queue honours (`queue_catalog.max_avoids`).
    max_avoids: usize,
    /// Draws who avoids whom (apart from `rng`: the base and its arrivals stay the same).
    meet_rng: Xoshiro256PlusPlus,
    /// Matches being played, with when they end: their results are reported then.
    playing: Vec<(Instant, i64)>,
    /// Draws the results (apart from `rng`, like `meet_rng`).
    result_rng: Xoshiro256PlusPlus,
    /// When the run began (the results' times count from it).
    began: Instant,
}

impl<'p> Simulation<'p> {
    fn new(population: &'p Population, options: &SimulatorOptions) -> Simulation<'p> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(options.seed);
        let prefix = options
            .id_prefix
            .clone()
            .unwrap_or_else(|| format!("sim{}-", options.seed));
        let spec = PopulationSpec {
            id_prefix: prefix.clone(),
            ..options.spec.clone()
        };
        // The base lives where players live; time of day decides who comes when.
        let weights: Vec<f64> = population
            .world()
            .cities()
            .iter()
            .map(|c| c.player_weight)
            .collect();
        let picker = CityPicker::new(&weights);
        let mut profiles = Vec::with_capacity(options.population);
        let mut groups = Vec::new();
        let mut next_id = 1;
        let mut next_party = 1;
        while profiles.len() < options.population {
            let room = options.population - profiles.len();
            let members = population.sample_group(&spec, &picker, &mut rng, &mut next_id, room);
            let party_id = (members.len() > 1).then(|| {
                let id = format!("{prefix}party-{next_party}");
                next_party += 1;
                id
            });
            let first = profiles.len();
            profiles.extend(members);
            groups.push(Group {
                members: (first..profiles.len()).collect(),
                party_id,
                state: GroupState::Idle,
            });
        }
        let by_id = profiles
            .iter()
            .enumerate()
            .map(|(k, p)| (p.id.clone(), k))
            .collect();
        let mut meet_rng = Xoshiro256PlusPlus::seed_from_u64(options.seed ^ 0x6d65_6574);
        let attributes = meet_attributes(&options.meet, &groups, profiles.len(), &mut meet_rng);
        let mut sim = Simulation {
            population,
            options: options.clone(),
            prefix,
            rng,
            profiles,
            idle: (0..groups.len()).collect(),
            groups,
            entries: HashMap::new(),
            last_opponents: HashMap::new(),
            by_id,
            start: options.start.unwrap_or_else(Utc::now),
            peak_awake: 1.0,
            keep_alive_every: DEFAULT_KEEP_ALIVE_EVERY,
            next_keep_alive: Instant::now() + DEFAULT_KEEP_ALIVE_EVERY,
            report: SimReport::default(),
            playing: Vec::new(),
            result_rng: Xoshiro256PlusPlus::seed_from_u64(options.seed ^ 0x7265_7375),
            began: Instant::now(),
            attributes,
            avoids: HashMap::new(),
            max_avoids: matchmaker_optimizer::AvoidParams::default().max_per_player,
            meet_rng,
        };
        sim.peak_awake = (0..96)
            .map(|q| sim.awake_share(q as f64 / 4.0))
            .fold(f64::MIN_POSITIVE, f64::max);
        sim
    }

    fn sim_time(&self, elapsed: Duration) -> DateTime<Utc> {
        let secs = elapsed.as_secs_f64() * self.options.speedup;
        self.start + chrono::Duration::milliseconds((secs * 1000.0) as i64)
    }

    fn hour_utc(&self, elapsed: Duration) -> f64 {
        let t = self.sim_time(elapsed);
        let secs = t.timestamp().rem_euclid(86_400) as f64;
        secs / 3600.0
    }

    /// Player-weighted share of the world awake at this UTC hour (activity in [0, 1]).
    fn awake_share(&self, hour_utc: f64) -> f64 {
        let cities = self.population.world().cities();
        let total: f64 = cities.iter().map(|c| c.player_weight).sum();
        let awake: f64 = cities
            .iter()
            .map(|c| c.player_weight * activity(hour_utc + c.utc_offset_hours))
            .sum();
        awake / total.max(f64::MIN_POSITIVE)
    }

    fn progress(&self, elapsed: Duration) -> SimProgress {
        let mut queued = 0;
        let mut playing = 0;
        for g in &self.groups {
            match g.state {
                GroupState::Queued { .. } => queued += g.members.len(),
                GroupState::Playing { .. } => playing += g.members.len(),
                GroupState::Idle => {}
            }
        }
        SimProgress {
            sim_time: Some(self.sim_time(elapsed)),
            waiting_for_queue: None,
            queued_players: queued,
            playing_players: playing,
            report: self.report.clone(),
        }
    }

    async fn step(
        &mut self,
        db: &PgPool,
        now: Instant,
        elapsed: Duration,
        dt: f64,
    ) -> Result<(), SimError> {
        self.poll_entries(db, now).await?;
        self.finish_matches(db, now).await?;
        self.cancel_impatient(db, now).await?;
        self.arrive(db, now, elapsed, dt).await?;
        self.keep_alive(db, now).await
    }

    /// Every `keep_alive_every`, one `keep_alive()` call for all our queued players (as a
    /// game backend does for the players it holds), so their tickets do not expire. The
    /// cadence is read again each time: a config reload may change the ticket TTL.
    async fn keep_alive(&mut self, db: &PgPool, now: Instant) -> Result<(), SimError> {
        if now < self.next_keep_alive {
            return Ok(());
        }
        let ids: Vec<String> = self
            .groups
            .iter()
            .filter(|g| matches!(g.state, GroupState::Queued { .. }))
            .flat_map(|g| g.members.iter().map(|&m| self.profiles[m].id.clone()))
            .collect();
        for chunk in ids.chunks(KEEP_ALIVE_MAX_IDS) {
            let refreshed = db::enqueue::keep_alive(db, Some(&self.options.queue), chunk).await?;
            self.report.keep_alive_calls += 1;
            self.report.kept_alive += refreshed;
        }
        self.keep_alive_every = read_catalog(db, &self.options.queue)
            .await?
            .map_or(DEFAULT_KEEP_ALIVE_EVERY, |c| c.keep_alive_every);
        self.next_keep_alive = now + self.keep_alive_every;
        Ok(())
    }

    /// New sessions: Poisson arrivals of groups, weighted by local time of day.
    async fn arrive(
        &mut self,
        db: &PgPool,
        now: Instant,
        elapsed: Duration,
        dt: f64,
    ) -> Result<(), SimError> {
        let hour = self.hour_utc(elapsed);
        let mean_group = self.profiles.len() as f64 / self.groups.len().max(1) as f64;
        let expected =
            self.options.rate * dt * self.awake_share(hour) / self.peak_awake / mean_group;
        let arrivals = poisson(&mut self.rng, expected);
        for _ in 0..arrivals {
            let Some(group) = self.pick_idle(hour) else {
                self.report.base_exhausted += 1;
                continue;
            };
            self.enqueue(db, group, now, false).await?;
        }
        Ok(())
    }

    /// An idle group, accepted with the probability of its city's activity right now
    /// (rejection sampling, bounded).
    fn pick_idle(&mut self, hour_utc: f64) -> Option<usize> {
        if self.idle.is_empty() {
            return None;
        }
        let mut slot = self.rng.random_range(0..self.idle.len());
        for _ in 0..64 {
            let group = &self.groups[self.idle[slot]];
            let city = &self.population.world().cities()[self.profiles[group.members[0]].city];
            if self
                .rng
                .random_bool(activity(hour_utc + city.utc_offset_hours).clamp(0.0, 1.0))
            {
                break;
            }
            slot = self.rng.random_range(0..self.idle.len());
        }
        Some(self.idle.swap_remove(slot))
    }

    /// Enqueues the group: a solo player with `enqueue()`, a party with one
    /// `enqueue_party()` call (all or nothing). A refusal is counted, not fatal.
    async fn enqueue(
        &mut self,
        db: &PgPool,
        group: usize,
        now: Instant,
        returning: bool,
    ) -> Result<(), SimError> {
        let members = self.groups[group].members.clone();
        let players: Vec<Player> = members
            .iter()
            .map(|&m| {
                let mut p = self
                    .population
                    .to_player(&self.profiles[m], None, Utc::now());
                p.attributes = self.attributes[m].clone();
                p
            })
            .collect();
        let queue = self.options.queue.as_str();
        // A rated queue plays its players at their ratings, learned from the results.
        let skill = match self.report.rating_pool {
            Some(_) => Skill::Rated,
            None => Skill::Claimed,
        };
        let enqueued: Result<Vec<(String, i64)>, DbError> = match &self.groups[group].party_id {
            None => db::enqueue::enqueue_with(db, queue, &players[0], skill)
                .await
                .map(|id| vec![(players[0].id.clone(), id)]),
            Some(party_id) => {
                db::enqueue::enqueue_party_with(db, queue, party_id, &players, skill).await
            }
        };
        let enqueued = match enqueued.map_err(|e| (refusal(&e), e)) {
            Ok(rows) => rows,
            Err((None, e)) => return Err(e.into()),
            Err((Some(message), _)) => {
                if self.report.first_refusal.is_none() {
                    // Once: a refusal repeats for every group with the same problem.
                    tracing::warn!(
                        queue = %self.options.queue,
                        "enqueue refused: {message} (counted; further refusals are not logged)"
                    );
                    self.report.first_refusal = Some(message);
                }
                self.report.refused += 1;
                self.groups[group].state = GroupState::Idle;
                self.idle.push(group);
                return Ok(());
            }
        };
        let by_player: HashMap<String, i64> = enqueued.into_iter().collect();
        let ids: Vec<i64> = players
            .iter()
            .map(|p| {
                by_player.get(&p.id).copied().ok_or_else(|| {
                    SimError::Contract(format!("enqueue_party returned no entry for {}", p.id))
                })
            })
            .collect::<Result<_, _>>()?;

        let n = members.len() as u64;
        self.report.enqueued += n;
        if members.len() > 1 {
            self.report.enqueued_in_parties += n;
        }
        if returning {
            self.report.requeued += n;
        }
        for (&id, &m) in ids.iter().zip(&members) {
            self.entries.insert(id, (group, m));
        }
        let cancel_at = self.rng.random_bool(self.options.cancel_share).then(|| {
            let (lo, hi) = self.options.patience;
            let secs = if hi > lo {
                self.rng.random_range(lo.as_secs_f64()..hi.as_secs_f64())
            } else {
                lo.as_secs_f64()
            };
            now + Duration::from_secs_f64(secs)
        });
        self.groups[group].state = GroupState::Queued {
            entries: ids,
            since: now,
            cancel_at,
        };
        Ok(())
    }

    /// Reads what the daemon did with our queued entries (`player_status`, as a client
    /// does).
    async fn poll_entries(&mut self, db: &PgPool, now: Instant) -> Result<(), SimError> {
        if self.entries.is_empty() {
            return Ok(());
        }
        let players: Vec<&str> = self
            .entries
            .values()
            .map(|&(_, m)| self.profiles[m].id.as_str())
            .collect();
        // entry_id, status, match_id, player_id, ready-check answer
        type StatusRow = (i64, String, Option<i64>, String, Option<String>);
        let rows: Vec<StatusRow> = sqlx::query_as(
            "SELECT entry_id, status, match_id, player_id, answer FROM player_status($2::text[]) \
              WHERE queue = $1 AND status <> 'queued'",
        )
        .bind(&self.options.queue)
        .bind(&players)
        .fetch_all(db)
        .await?;
        // A match waiting for its ready check: every player of ours accepts it, and the
        // group waits for the match to be ready (or cancelled: then it is queued again).
        let mut decided = Vec::new();
        for (entry, status, match_id, player, answer) in rows {
            if status != "pending" {
                decided.push((entry, status, match_id));
                continue;
            }
            if let (None, Some(m)) = (answer, match_id) {
                self.accept(db, &player, m).await?;
            }
        }
        let mut by_group: BTreeMap<usize, Vec<(i64, String, Option<i64>)>> = BTreeMap::new();
        for row in decided {
            if let Some(&(group, _)) = self.entries.get(&row.0) {
                by_group.entry(group).or_default().push(row);
            }
        }
        let mut new_matches = Vec::new();
        for (group, rows) in by_group {
            let GroupState::Queued { entries, since, .. } = self.groups[group].state.clone() else {
                continue;
            };
            let matched: Vec<i64> = rows
                .iter()
                .filter(|r| r.1 == "matched")
                .filter_map(|r| r.2)
                .collect();
            if matched.len() == entries.len() {
                let wait = now.duration_since(since).as_secs_f64();
                let until_secs = self.options.match_duration.as_secs_f64()
                    * self.rng.random_range(0.6..1.4)
                    / self.options.speedup;
                let until = now + Duration::from_secs_f64(until_secs);
                for &m in &matched {
                    if !self.playing.iter().any(|(_, p)| *p == m) {
                        self.playing.push((until, m));
                    }
                }
                self.report.matched += entries.len() as u64;
                self.report
                    .waits_secs
                    .extend(std::iter::repeat_n(wait, entries.len()));
                new_matches.extend(matched);
                self.set_state(group, GroupState::Playing { until });
            } else if rows.len() == entries.len() || rows.iter().any(|r| r.1 != "matched") {
                // Rejected, expired, withdrawn or cancelled (by someone else): the session
                // ends. Members still queued are cancelled with the group.
                let count = |status: &str| rows.iter().filter(|r| r.1 == status).count() as u64;
                self.report.rejected += count("rejected") + count("withdrawn");
                self.report.expired += count("expired");
                self.cancel_group(db, group).await?;
                if !matches!(self.groups[group].state, GroupState::Playing { .. }) {
                    self.set_state(group, GroupState::Idle);
                }
            }
            // Else: part of a party is matched and the rest not yet visible; next tick.
        }
        if !new_matches.is_empty() {
            new_matches.sort_unstable();
            new_matches.dedup();
            self.report.matches += new_matches.len() as u64;
            self.record_opponents(db, &new_matches).await?;
        }
        Ok(())
    }

    /// Opponent variation as players experience it: who they met in this match versus
    /// their previous one.
    async fn record_opponents(&mut self, db: &PgPool, match_ids: &[i64]) -> Result<(), SimError> {
        let rows: Vec<(i64, String, i32)> = sqlx::query_as(
            "SELECT d.match_id, d.player_id, d.team FROM unnest($1::bigint[]) m \
              CROSS JOIN LATERAL match_details(m) d",
        )
        .bind(match_ids)
        .fetch_all(db)
        .await?;
        let mut matches: BTreeMap<i64, Vec<(String, i32)>> = BTreeMap::new();
        for (m, player, team) in rows {
            matches.entry(m).or_default().push((player, team));
        }
        for players in matches.values() {
            self.check_meet(players);
        }
        for players in matches.values() {
            for (player, team) in players {
                let Some(&k) = self.by_id.get(player) else {
                    continue;
                };
                let opponents: Vec<String> = players
                    .iter()
                    .filter(|(_, t)| t != team)
                    .map(|(p, _)| p.clone())
                    .collect();
                if let Some(previous) = self.last_opponents.get(&k) {
                    self.report.opponent_pairs += opponents.len() as u64;
                    self.report.repeated_opponent_pairs +=
                        opponents.iter().filter(|o| previous.contains(o)).count() as u64;
                }
                let ours: Vec<&String> = opponents
                    .iter()
                    .filter(|o| self.by_id.contains_key(*o))
                    .collect();
                if !ours.is_empty() && self.meet_rng.random_bool(self.options.meet.avoid_share) {
                    let avoided = ours[self.meet_rng.random_range(0..ours.len())].clone();
                    db::enqueue::avoid(db, player, &avoided, Some(Duration::from_secs(3600)))
                        .await?;
                    self.report.avoids += 1;
                    let list = self.avoids.entry(player.clone()).or_default();
                    list.retain(|a| *a != avoided);
                    list.push(avoided);
                }
                self.last_opponents.insert(k, opponents);
            }
        }
        Ok(())
    }

    /// One match against the rules of [`MeetSpec`], as far as its players are ours: one
    /// build, crossplay opt-outs only with their platform, nobody with a player they
    /// avoid (their newest `max_avoids`; each is an hour long and the run counts from
    /// the first, so none expires within an hour's run).
    fn check_meet(&mut self, players: &[(String, i32)]) {
        if !self.options.meet.attributes {
            return;
        }
        let ours: Vec<(&str, &BTreeMap<String, Attribute>)> = players
            .iter()
            .filter_map(|(p, _)| {
                let k = *self.by_id.get(p)?;
                Some((p.as_str(), &self.attributes[k]))
            })
            .collect();
        if ours.is_empty() {
            return;
        }
        self.report.meet_checked += 1;
        let build = ours[0].1.get("build");
        if ours.iter().any(|(_, a)| a.get("build") != build) {
            self.report.build_mixes += 1;
        }
        for (_, a) in &ours {
            if a.get("crossplay") == Some(&Attribute::One("off".into()))
                && ours
                    .iter()
                    .any(|(_, b)| b.get("platform") != a.get("platform"))
            {
                self.report.crossplay_breaks += 1;
            }
        }
        let here: HashSet<&str> = ours.iter().map(|(p, _)| *p).collect();
        for (p, _) in &ours {
            if let Some(list) = self.avoids.get(*p) {
                let honoured = list.iter().rev().take(self.max_avoids);
                self.report.avoid_breaks +=
                    honoured.filter(|a| here.contains(a.as_str())).count() as u64;
            }
        }
    }

    /// Accept a pending match for `player` (a game asks the player; the simulated ones
    /// always accept). A refusal (the match was cancelled or resolved meanwhile) is
    /// fine: the next poll sees what became of it.
    async fn accept(&mut self, db: &PgPool, player: &str, match_id: i64) -> Result<(), SimError> {
        let answer: Result<String, sqlx::Error> = sqlx::query_scalar("SELECT accept_match($1, $2)")
            .bind(player)
            .bind(match_id)
            .fetch_one(db)
            .await;
        match answer {
            Ok(_) => self.report.accepted += 1,
            Err(sqlx::Error::Database(e)) if e.code().is_some_and(|c| c.starts_with("22")) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// Report the result of every match that ended: the teams' chances from their
    /// players' true skills (the population's skill of each of ours; the skill the
    /// match shows of anyone else's), one draw, team ranks by the outcome.
    async fn report_results(&mut self, db: &PgPool, now: Instant) -> Result<(), SimError> {
        let (ended, playing): (Vec<_>, Vec<_>) =
            self.playing.iter().partition(|(until, _)| *until <= now);
        self.playing = playing;
        let ids: Vec<i64> = ended.into_iter().map(|(_, m)| m).collect();
        if ids.is_empty() {
            return Ok(());
        }
        let rows: Vec<(i64, String, i32, f64)> = sqlx::query_as(
            "SELECT d.match_id, d.player_id, d.team, d.skill FROM unnest($1::bigint[]) m
              CROSS JOIN LATERAL match_details(m) d ORDER BY d.match_id, d.team",
        )
        .bind(&ids)
        .fetch_all(db)
        .await?;
        let mut matches: BTreeMap<i64, BTreeMap<i32, Vec<(f64, f64)>>> = BTreeMap::new();
        for (m, player, team, shown) in rows {
            let truth = self
                .by_id
                .get(&player)
                .map_or(shown, |&k| self.profiles[k].skill);
            matches
                .entry(m)
                .or_default()
                .entry(team)
                .or_default()
                .push((truth, 0.0));
        }
        for (m, teams) in matches {
            let teams: Vec<Vec<(f64, f64)>> = teams.into_values().collect();
            if teams.len() < 2 {
                continue;
            }
            let p = matchmaker_optimizer::rating::win_probabilities(&teams, RESULT_BETA);
            if p.len() == 2 {
                let at = now.duration_since(self.began).as_secs_f64();
                self.report.true_gaps.push((at, (p[0] - 0.5).abs()));
            }
            // The winner drawn by its chance; the others ranked 2.
            let mut draw: f64 = self.result_rng.random();
            let winner = p
                .iter()
                .position(|&pk| {
                    draw -= pk;
                    draw < 0.0
                })
                .unwrap_or(p.len() - 1);
            let ranks: Vec<i32> = (0..teams.len())
                .map(|k| if k == winner { 1 } else { 2 })
                .collect();
            let answer: Result<String, sqlx::Error> =
                sqlx::query_scalar("SELECT report_result($1, $2)")
                    .bind(m)
                    .bind(&ranks)
                    .fetch_one(db)
                    .await;
            match answer {
                Ok(_) => self.report.results_reported += 1,
                Err(sqlx::Error::Database(e)) if e.code().is_some_and(|c| c.starts_with("22")) => {
                    self.report.results_refused += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// On a rated queue: each of our players' rating beside their true skill.
    async fn read_ratings(&mut self, db: &PgPool) -> Result<(), SimError> {
        let Some(pool) = &self.report.rating_pool else {
            return Ok(());
        };
        let rows: Vec<(String, f64, i32)> = sqlx::query_as(
            "SELECT player_id, rating, matches FROM player_ratings
              WHERE pool = $1 AND starts_with(player_id, $2)",
        )
        .bind(pool)
        .bind(&self.prefix)
        .fetch_all(db)
        .await?;
        self.report.ratings = rows
            .into_iter()
            .filter_map(|(id, rating, matches)| {
                let &k = self.by_id.get(&id)?;
                Some(RatedPlayer {
                    true_skill: self.profiles[k].skill,
                    rating,
                    matches: i64::from(matches),
                })
            })
            .collect();
        Ok(())
    }

    /// Groups whose match is over queue again or leave.
    async fn finish_matches(&mut self, db: &PgPool, now: Instant) -> Result<(), SimError> {
        self.report_results(db, now).await?;
        let done: Vec<usize> = (0..self.groups.len())
            .filter(
                |&g| matches!(self.groups[g].state, GroupState::Playing { until } if until <= now),
            )
            .collect();
        for group in done {
            if self.rng.random_bool(self.options.requeue_share) {
                self.enqueue(db, group, now, true).await?;
            } else {
                self.set_state(group, GroupState::Idle);
            }
        }
        Ok(())
    }

    async fn cancel_impatient(&mut self, db: &PgPool, now: Instant) -> Result<(), SimError> {
        let due: Vec<usize> = (0..self.groups.len())
            .filter(|&g| {
                matches!(self.groups[g].state,
                    GroupState::Queued { cancel_at: Some(at), .. } if at <= now)
            })
            .collect();
        for group in due {
            let cancelled = self.cancel_group(db, group).await?;
            self.report.cancelled += cancelled;
            if cancelled > 0 {
                self.set_state(group, GroupState::Idle);
            }
            // Nothing cancelled: the group was matched meanwhile; the next poll sees it.
            else if let GroupState::Queued { cancel_at, .. } = &mut self.groups[group].state {
                *cancel_at = None;
            }
        }
        Ok(())
    }

    /// `cancel()` for the group: one call takes a whole party out, so a member's call
    /// is made only while some members are unaccounted for (a member whose entry already
    /// left the queue cancels nothing). Returns the entries cancelled.
    async fn cancel_group(&mut self, db: &PgPool, group: usize) -> Result<u64, SimError> {
        let members = self.groups[group].members.clone();
        let mut cancelled = 0;
        for m in members.iter().copied() {
            if cancelled >= members.len() as u64 {
                break;
            }
            let player = &self.profiles[m].id;
            cancelled += db::enqueue::cancel(db, Some(&self.options.queue), player).await?;
        }
        Ok(cancelled)
    }

    fn set_state(&mut self, group: usize, state: GroupState) {
        if let GroupState::Queued { entries, .. } = &self.groups[group].state {
            for id in entries {
                self.entries.remove(id);
            }
        }
        let becomes_idle = matches!(state, GroupState::Idle);
        let was_idle = matches!(self.groups[group].state, GroupState::Idle);
        self.groups[group].state = state;
        if becomes_idle && !was_idle {
            self.idle.push(group);
        }
    }
}

/// Cancels every still-queued entry of this simulator's players (ids with `prefix`) in
/// one statement: `cancel()` for each player `player_status` shows queued (a party's
/// first call cancels its mates, whose own calls then find nothing).
async fn cancel_prefix(db: &PgPool, queue: &str, prefix: &str) -> Result<u64, SimError> {
    // starts_with, not LIKE: it is leakproof, so the filter reaches the rows inside the
    // security_barrier view (and the prefix needs no escaping).
    let cancelled: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(cancel(player_id, $1)), 0)::int8 FROM player_status
          WHERE queue = $1 AND status = 'queued' AND starts_with(player_id, $2)",
    )
    .bind(queue)
    .bind(prefix)
    .fetch_one(db)
    .await?;
    Ok(cancelled as u64)
}

/// The message of a contract refusal (SQLSTATE 22023), else `None`.
fn refusal(e: &DbError) -> Option<String> {
    match e {
        DbError::Sql(sqlx::Error::Database(e)) if e.code().as_deref() == Some(REFUSED) => {
            Some(e.message().to_string())
        }
        _ => None,
    }
}

/// A Poisson-distributed count with this mean (Knuth's method; normal approximation for
/// large means).
fn poisson<R: rand::Rng + ?Sized>(rng: &mut R, mean: f64) -> u64 {
    if mean <= 0.0 {
        return 0;
    }
    if mean > 30.0 {
        let u: f64 = rng.random();
        let v: f64 = rng.random();
        let z = (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos();
        return (mean + mean.sqrt() * z).round().max(0.0) as u64;
    }
    let limit = (-mean).exp();
    let mut k = 0;
    let mut p: f64 = rng.random();
    while p > limit {
        k += 1;
        p *= rng.random::<f64>();
    }
    k
}

/// Each profile's attributes: a build per group (a party shares it), a platform per
/// player (console players may opt out of crossplay), one or two languages.
fn meet_attributes(
    spec: &MeetSpec,
    groups: &[Group],
    profiles: usize,
    rng: &mut Xoshiro256PlusPlus,
) -> Vec<BTreeMap<String, Attribute>> {
    let mut out = vec![BTreeMap::new(); profiles];
    if !spec.attributes {
        return out;
    }
    const LANGUAGES: [&str; 6] = ["en", "de", "fr", "es", "pt", "ja"];
    for g in groups {
        let build = if rng.random_bool(spec.old_build_share) {
            "1.4"
        } else {
            "1.5"
        };
        for &m in &g.members {
            let a = &mut out[m];
            a.insert("build".into(), Attribute::One(build.into()));
            let platform = match rng.random_range(0..10) {
                0..5 => "pc",
                5..8 => "ps5",
                _ => "xbox",
            };
            a.insert("platform".into(), Attribute::One(platform.into()));
            if platform != "pc" && rng.random_bool(spec.crossplay_off_share) {
                a.insert("crossplay".into(), Attribute::One("off".into()));
            }
            let first = LANGUAGES[rng.random_range(0..LANGUAGES.len())];
            let languages = if first != "en" && rng.random_bool(0.5) {
                vec![first.to_string(), "en".to_string()]
            } else {
                vec![first.to_string()]
            };
            a.insert("language".into(), Attribute::Many(languages));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sample mean of n Poisson draws has standard error sqrt(mean / n); a correct
    /// sampler lands within 4.5 of them but for a chance of 7 in a million.
    #[test]
    fn poisson_has_the_requested_mean() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let n = 20_000;
        for mean in [0.3, 4.0, 50.0] {
            let total: u64 = (0..n).map(|_| poisson(&mut rng, mean)).sum();
            let got = total as f64 / n as f64;
            let standard_error = (mean / n as f64).sqrt();
            assert!(
                (got - mean).abs() < 4.5 * standard_error,
                "{mean}: {got} is {:.1} standard errors off",
                (got - mean) / standard_error
            );
        }
    }

    #[test]
    fn the_catalog_caps_parties_and_names_roles_not_given() {
        let catalog = CatalogQueue {
            keep_alive_every: Duration::from_secs(10),
            max_party_size: 2,
            roles: vec!["tank".into(), "healer".into()],
            max_avoids: 10,
            rating_pool: None,
        };
        let mut spec = PopulationSpec::default();
        catalog.fit(&mut spec);
        assert_eq!(spec.max_party_size, 2);
        assert_eq!(spec.roles, ["tank", "healer"]);
        let mut spec = PopulationSpec {
            roles: vec!["damage".into()],
            max_party_size: 1,
            ..PopulationSpec::default()
        };
        catalog.fit(&mut spec);
        assert_eq!(
            (spec.max_party_size, spec.roles),
            (1, vec!["damage".into()])
        );
    }

    #[test]
    fn base_is_built_of_groups_covering_the_population() {
        let population = Population::realistic();
        let options = SimulatorOptions {
            population: 1000,
            ..SimulatorOptions::default()
        };
        let sim = Simulation::new(&population, &options);
        assert_eq!(sim.profiles.len(), 1000);
        let members: usize = sim.groups.iter().map(|g| g.members.len()).sum();
        assert_eq!(members, 1000);
        assert!(sim.groups.iter().any(|g| g.party_id.is_some()));
        assert!(sim.profiles.iter().all(|p| p.id.starts_with("sim1-")));
        assert!(sim.peak_awake > 0.0 && sim.peak_awake <= 1.0);
    }

    #[test]
    fn players_send_builds_shared_by_parties_and_every_match_is_checked() {
        let population = Population::realistic();
        let options = SimulatorOptions {
            population: 1000,
            ..SimulatorOptions::default()
        };
        let mut sim = Simulation::new(&population, &options);
        let build = |sim: &Simulation, k: usize| sim.attributes[k]["build"].clone();
        for g in &sim.groups {
            assert!(
                g.members
                    .iter()
                    .all(|&m| build(&sim, m) == build(&sim, g.members[0]))
            );
        }
        let old = (0..1000)
            .filter(|&k| build(&sim, k) == Attribute::One("1.4".into()))
            .count();
        assert!((100..300).contains(&old), "{old} players on the old build");
        let off = |sim: &Simulation, k: usize| sim.attributes[k].contains_key("crossplay");
        assert!((0..1000).any(|k| off(&sim, k)));
        assert!(
            (0..1000)
                .all(|k| !off(&sim, k)
                    || sim.attributes[k]["platform"] != Attribute::One("pc".into()))
        );
        // The same base and arrivals without attributes.
        let plain = Simulation::new(
            &population,
            &SimulatorOptions {
                population: 1000,
                meet: MeetSpec::none(),
                ..SimulatorOptions::default()
            },
        );
        assert!(plain.attributes.iter().all(BTreeMap::is_empty));
        assert_eq!(
            plain.profiles.iter().map(|p| &p.id).collect::<Vec<_>>(),
            sim.profiles.iter().map(|p| &p.id).collect::<Vec<_>>()
        );

        // A match of one build, then one that mixes builds, a crossplay opt-out with
        // another platform, and a player with someone they avoid.
        let ids: Vec<String> = sim.profiles.iter().map(|p| p.id.clone()).collect();
        let id = |k: usize| ids[k].clone();
        let same: Vec<usize> = (0..1000)
            .filter(|&k| build(&sim, k) == build(&sim, 0))
            .collect();
        let pc: Vec<usize> = same
            .iter()
            .copied()
            .filter(|&k| sim.attributes[k]["platform"] == Attribute::One("pc".into()))
            .take(6)
            .collect();
        let roster: Vec<(String, i32)> = pc.iter().map(|&k| (id(k), (k % 2) as i32)).collect();
        sim.check_meet(&roster);
        assert_eq!(
            (
                sim.report.meet_checked,
                sim.report.build_mixes,
                sim.report.crossplay_breaks,
                sim.report.avoid_breaks
            ),
            (1, 0, 0, 0)
        );
        let other = (0..1000)
            .find(|&k| build(&sim, k) != build(&sim, 0) && !off(&sim, k))
            .unwrap();
        let console_off = (0..1000).find(|&k| off(&sim, k) && k != other).unwrap();
        sim.avoids.insert(id(pc[0]), vec![id(pc[1])]);
        let mut roster = roster;
        roster.push((id(other), 0));
        roster.push((id(console_off), 1));
        sim.check_meet(&roster);
        assert_eq!(sim.report.meet_checked, 2);
        assert_eq!(sim.report.build_mixes, 1);
        assert_eq!(sim.report.crossplay_breaks, 1);
        assert_eq!(sim.report.avoid_breaks, 1);
    }

    #[test]
    fn bad_options_are_refused_by_name() {
        let options = SimulatorOptions {
            cancel_share: 1.5,
            ..SimulatorOptions::default()
        };
        let err = validate(&options).unwrap_err().to_string();
        assert!(err.contains("cancel_share"), "{err}");
    }
}
