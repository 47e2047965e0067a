//! A fleet of simulated game servers for `matchmaker-lab simulate` and `peak`: the supply
//! a queue with `[queues.NAME.servers] required = true` places its matches on. The
//! servers speak only the server API (migration 12), as a fleet adapter does
//! (`examples/fleet.rs`):
//!
//! - **Announce**: every server calls `server_ready(server_id, region, address)` when it
//!   starts and again every `ttl / 3` while it is free, so it never ages out of the ttl.
//!   The fleet makes the calls of one tick in one statement.
//! - **Host**: each tick (a quarter of a second) the fleet reads `my_servers`; a server
//!   the commit allocated plays its match for the match length (80% to 120% of
//!   `match_length`, wall clock), then announces itself ready again naming the match it
//!   ended (`ended_match`), and is free again. A server whose match a ready check
//!   cancelled is free again at once (the daemon gave it back).
//! - **Crash**: with `crash_rate` per match, the server crashes at a random moment of its
//!   match: it goes silent (its row stays allocated to the match; a ready server that went
//!   silent would age out of the ttl), and comes back one to two ttls later under a new
//!   id, as a restarted server does.
//!
//! The servers of a run are `{id_prefix}{region}-{n}`. Before the first announcement the
//! fleet withdraws (`server_gone`) whatever servers of that prefix its login still has (a
//! killed run's), and at the end every server it ever announced, including crashed ones,
//! so that a later run starts from nothing. What the fleet lived through is its
//! [`FleetReport`]; what the rounds made of the supply is read from the database
//! afterwards ([`ServerFigures`], which needs a login that reads `matches` and `rounds`).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sqlx::PgPool;
use tokio::time::Instant;

use crate::sim::simulator::SimError;

/// Wall-clock period of the fleet's loop.
const TICK: Duration = Duration::from_millis(250);

/// The fleet as the command line gives it, before the run knows its regions and match
/// length. `servers_per_region` 0: no fleet.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetOptions {
    /// Servers per region at the start.
    pub servers_per_region: usize,
    /// The fleet's regions (empty: the run's default, see [`FleetOptions::spec`]).
    pub regions: Vec<String>,
    /// Regions with another number of servers: (region, servers).
    pub short_regions: Vec<(String, usize)>,
    /// Wall-clock length of a match on a server (None: the run's default, the players'
    /// mean match).
    pub match_length: Option<Duration>,
    /// Chance per match that its server crashes during it.
    pub crash_rate: f64,
    /// The ttl of the servers' announcements: `peak` writes it into its queues;
    /// `simulate` reads its queue's and uses this one when its login cannot.
    pub ttl: Duration,
}

impl Default for FleetOptions {
    fn default() -> Self {
        FleetOptions {
            servers_per_region: 0,
            regions: Vec::new(),
            short_regions: Vec::new(),
            match_length: None,
            crash_rate: 0.02,
            ttl: Duration::from_secs(30),
        }
    }
}

impl FleetOptions {
    /// Whether a fleet runs at all.
    pub fn enabled(&self) -> bool {
        self.servers_per_region > 0
    }

    /// The fleet of a run: `servers_per_region` in each of the options' regions (else
    /// `default_regions`), the short regions' own numbers, `default_match_length` unless
    /// the options give one. None: no fleet. A short region must be one of the fleet's.
    pub fn spec(
        &self,
        default_regions: &[String],
        default_match_length: Duration,
        ttl: Duration,
        seed: u64,
        id_prefix: &str,
    ) -> Result<Option<FleetSpec>, SimError> {
        let bad = |option, reason: String| Err(SimError::InvalidOption { option, reason });
        if !self.enabled() {
            if !self.short_regions.is_empty() || !self.regions.is_empty() {
                return bad(
                    "short_region",
                    "a fleet needs --servers-per-region (at least 1)".into(),
                );
            }
            return Ok(None);
        }
        if !(0.0..=1.0).contains(&self.crash_rate) {
            return bad("server_crash_rate", "must be between 0 and 1".into());
        }
        let regions = if self.regions.is_empty() {
            default_regions
        } else {
            &self.regions
        };
        let mut servers: BTreeMap<String, usize> = regions
            .iter()
            .map(|r| (r.clone(), self.servers_per_region))
            .collect();
        if servers.is_empty() {
            return bad("server_regions", "the fleet has no region".into());
        }
        for (region, n) in &self.short_regions {
            match servers.get_mut(region) {
                Some(count) => *count = *n,
                None => {
                    return bad(
                        "short_region",
                        format!(
                            "{region:?} is not a region of the fleet ({})",
                            servers.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    );
                }
            }
        }
        let match_length = self.match_length.unwrap_or(default_match_length);
        if match_length.is_zero() {
            return bad("match_length", "must be positive".into());
        }
        Ok(Some(FleetSpec {
            servers,
            match_length,
            crash_rate: self.crash_rate,
            ttl,
            seed,
            id_prefix: id_prefix.to_string(),
        }))
    }
}

/// Parses `NAME=K` (`--short-region`).
pub fn parse_short_region(s: &str) -> Result<(String, usize), String> {
    let (name, k) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected REGION=SERVERS, e.g. us-east=2"))?;
    let k: usize = k
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: the number of servers is not a whole number"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("{s:?}: the region is empty"));
    }
    Ok((name.to_string(), k))
}

/// The fleet of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetSpec {
    /// Servers per region at the start (a crashed server comes back in its region).
    pub servers: BTreeMap<String, usize>,
    /// Mean wall-clock length of a match on a server (each 80% to 120% of it).
    pub match_length: Duration,
    /// Chance per match that its server crashes during it.
    pub crash_rate: f64,
    /// The queues' ttl: servers announce every third of it; a crashed server is back
    /// one to two of it later.
    pub ttl: Duration,
    pub seed: u64,
    /// Server ids are `{id_prefix}{region}-{n}`.
    pub id_prefix: String,
}

impl FleetSpec {
    pub fn announce_every(&self) -> Duration {
        self.ttl / 3
    }

    /// "eu-west 6, us-east 2".
    pub fn servers_line(&self) -> String {
        self.servers
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// How one hosting ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostEnd {
    /// Played to its end; the server announced itself ready naming the match.
    Ended,
    /// The server crashed during the match.
    Crashed,
    /// The daemon gave the server back before the match ended (its ready check cancelled
    /// the match).
    GivenBack,
    /// Still playing when the run ended.
    RunEnded,
}

/// One match a server hosted.
#[derive(Debug, Clone, PartialEq)]
pub struct Hosted {
    pub server_id: String,
    pub region: String,
    pub match_id: i64,
    /// When the commit allocated it (`my_servers.allocated_at`, the database's clock).
    pub allocated_at: Option<DateTime<Utc>>,
    /// When the fleet saw the allocation, and when the hosting ended (its wall clock).
    pub seen: Instant,
    pub ended: Option<Instant>,
    pub end: HostEnd,
}

/// What the fleet lived through.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetReport {
    /// Servers per region at the start.
    pub servers: BTreeMap<String, usize>,
    /// Every match hosted, in the order the fleet saw them.
    pub hosted: Vec<Hosted>,
    /// `server_ready` calls (periodic, first and after a match).
    pub announcements: u64,
    /// Crashes, and crashed servers back under a new id.
    pub crashes: u64,
    pub comebacks: u64,
    /// Servers withdrawn (`server_gone`) at the start (a previous run's) and at the end.
    pub withdrawn_at_start: u64,
    pub withdrawn_at_end: u64,
}

impl FleetReport {
    pub fn count(&self, end: HostEnd) -> usize {
        self.hosted.iter().filter(|h| h.end == end).count()
    }
}

impl fmt::Display for FleetReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "game servers {}: hosted {} matches ({} played to the end, {} still playing at \
             the end, {} given back by a cancelled ready check), {} crashes ({} back under a \
             new id), {} server_ready calls",
            self.servers
                .iter()
                .map(|(r, n)| format!("{r} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            self.hosted.len(),
            self.count(HostEnd::Ended),
            self.count(HostEnd::RunEnded),
            self.count(HostEnd::GivenBack),
            self.crashes,
            self.comebacks,
            self.announcements
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Ready {
        next_announce: Instant,
    },
    Hosting {
        match_id: i64,
        until: Instant,
        crash_at: Option<Instant>,
        /// Its entry in the report's `hosted`.
        log: usize,
    },
    Down {
        back_at: Instant,
    },
}

#[derive(Debug, Clone)]
struct Server {
    id: String,
    region: String,
    address: String,
    state: State,
}

/// A server's row in `my_servers`: status, match, allocated_at.
type Row = (String, Option<i64>, Option<DateTime<Utc>>);

/// The same with the server's id first, as read.
type MyServer = (String, String, Option<i64>, Option<DateTime<Utc>>);

struct Fleet<'s> {
    spec: &'s FleetSpec,
    rng: Xoshiro256PlusPlus,
    servers: Vec<Server>,
    /// Per region: the next server number.
    next: BTreeMap<String, usize>,
    /// Every id announced, for the withdrawal at the end.
    ids: Vec<String>,
    report: FleetReport,
}

impl<'s> Fleet<'s> {
    fn new(spec: &'s FleetSpec, now: Instant) -> Fleet<'s> {
        let mut fleet = Fleet {
            spec,
            rng: Xoshiro256PlusPlus::seed_from_u64(spec.seed ^ 0x7365_7276),
            servers: Vec::new(),
            next: BTreeMap::new(),
            ids: Vec::new(),
            report: FleetReport {
                servers: spec.servers.clone(),
                ..FleetReport::default()
            },
        };
        for (region, &n) in &spec.servers {
            for _ in 0..n {
                let id = fleet.new_id(region);
                fleet.servers.push(Server {
                    address: format!("{id}.lab.invalid:7777"),
                    id,
                    region: region.clone(),
                    state: State::Ready { next_announce: now },
                });
            }
        }
        fleet
    }

    fn new_id(&mut self, region: &str) -> String {
        let n = self.next.entry(region.to_string()).or_insert(0);
        *n += 1;
        let id = format!("{}{region}-{n}", self.spec.id_prefix);
        self.ids.push(id.clone());
        id
    }

    fn start_hosting(&mut self, k: usize, match_id: i64, at: Option<DateTime<Utc>>, now: Instant) {
        let length = self
            .spec
            .match_length
            .mul_f64(self.rng.random_range(0.8..1.2));
        let crash_at = self
            .rng
            .random_bool(self.spec.crash_rate)
            .then(|| now + length.mul_f64(self.rng.random::<f64>()));
        let s = &mut self.servers[k];
        self.report.hosted.push(Hosted {
            server_id: s.id.clone(),
            region: s.region.clone(),
            match_id,
            allocated_at: at,
            seen: now,
            ended: None,
            end: HostEnd::RunEnded,
        });
        s.state = State::Hosting {
            match_id,
            until: now + length,
            crash_at,
            log: self.report.hosted.len() - 1,
        };
    }

    fn end_hosting(&mut self, log: usize, end: HostEnd, now: Instant) {
        let h = &mut self.report.hosted[log];
        h.ended = Some(now);
        h.end = end;
    }

    /// One tick: read what the database says of our servers, move each server along,
    /// and make the tick's announcements in one statement.
    async fn tick(&mut self, db: &PgPool, now: Instant) -> Result<(), SimError> {
        let rows: Vec<MyServer> = sqlx::query_as(
            "SELECT server_id, status, match_id, allocated_at FROM my_servers
              WHERE starts_with(server_id, $1)",
        )
        .bind(&self.spec.id_prefix)
        .fetch_all(db)
        .await?;
        let rows: HashMap<String, Row> = rows
            .into_iter()
            .map(|(id, status, m, at)| (id, (status, m, at)))
            .collect();
        // (server index, the match it names as ended)
        let mut announce: Vec<(usize, Option<i64>)> = Vec::new();
        for k in 0..self.servers.len() {
            let row = rows.get(&self.servers[k].id);
            let allocated = row.and_then(|(status, m, at)| match (status.as_str(), m) {
                ("allocated", Some(m)) => Some((*m, *at)),
                _ => None,
            });
            match self.servers[k].state {
                State::Ready { next_announce } => {
                    if let Some((m, at)) = allocated {
                        self.start_hosting(k, m, at, now);
                    } else if next_announce <= now || row.is_none() {
                        announce.push((k, None));
                    }
                }
                State::Hosting {
                    match_id,
                    until,
                    crash_at,
                    log,
                } => match allocated {
                    Some((m, _)) if m == match_id => {
                        if crash_at.is_some_and(|at| at <= now) {
                            self.end_hosting(log, HostEnd::Crashed, now);
                            self.report.crashes += 1;
                            let back = self.spec.ttl.mul_f64(self.rng.random_range(1.0..2.0));
                            self.servers[k].state = State::Down {
                                back_at: now + back,
                            };
                        } else if until <= now {
                            announce.push((k, Some(match_id)));
                        }
                    }
                    // Given back (its match's ready check cancelled it), and perhaps
                    // allocated again since.
                    Some((m, at)) => {
                        self.end_hosting(log, HostEnd::GivenBack, now);
                        self.start_hosting(k, m, at, now);
                    }
                    None => {
                        self.end_hosting(log, HostEnd::GivenBack, now);
                        self.servers[k].state = State::Ready { next_announce: now };
                        announce.push((k, None));
                    }
                },
                State::Down { back_at } => {
                    if back_at <= now {
                        let region = self.servers[k].region.clone();
                        let id = self.new_id(&region);
                        let s = &mut self.servers[k];
                        s.address = format!("{id}.lab.invalid:7777");
                        s.id = id;
                        s.state = State::Ready { next_announce: now };
                        self.report.comebacks += 1;
                        announce.push((k, None));
                    }
                }
            }
        }
        if announce.is_empty() {
            return Ok(());
        }
        let ids: Vec<&str> = announce
            .iter()
            .map(|&(k, _)| self.servers[k].id.as_str())
            .collect();
        let regions: Vec<&str> = announce
            .iter()
            .map(|&(k, _)| self.servers[k].region.as_str())
            .collect();
        let addresses: Vec<&str> = announce
            .iter()
            .map(|&(k, _)| self.servers[k].address.as_str())
            .collect();
        let ended: Vec<Option<i64>> = announce.iter().map(|&(_, m)| m).collect();
        let answers: Vec<String> = sqlx::query_scalar(
            "SELECT server_ready(a.id, a.region, a.address, a.ended)
               FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[])
                    WITH ORDINALITY AS a(id, region, address, ended, i)
              ORDER BY a.i",
        )
        .bind(&ids)
        .bind(&regions)
        .bind(&addresses)
        .bind(&ended)
        .fetch_all(db)
        .await?;
        self.report.announcements += answers.len() as u64;
        let next_announce = now + self.spec.announce_every();
        for (&(k, ended), _answer) in announce.iter().zip(&answers) {
            // An 'allocated' answer: the next read of my_servers starts the hosting.
            if ended.is_some()
                && let State::Hosting { log, .. } = self.servers[k].state
            {
                self.end_hosting(log, HostEnd::Ended, now);
            }
            self.servers[k].state = State::Ready { next_announce };
        }
        Ok(())
    }
}

/// Withdraws every server of this login whose id starts with `prefix`; returns how many.
async fn withdraw_prefix(db: &PgPool, prefix: &str) -> Result<u64, SimError> {
    let n: i64 = sqlx::query_scalar(
        "SELECT count(*) FILTER (WHERE server_gone(server_id)) FROM my_servers
          WHERE starts_with(server_id, $1)",
    )
    .bind(prefix)
    .fetch_one(db)
    .await?;
    Ok(n as u64)
}

/// Runs the fleet against `db` until `stop` resolves, then withdraws its servers.
pub async fn run_fleet(
    db: &PgPool,
    spec: &FleetSpec,
    stop: impl Future<Output = ()>,
) -> Result<FleetReport, SimError> {
    let withdrawn_at_start = withdraw_prefix(db, &spec.id_prefix).await?;
    let mut fleet = Fleet::new(spec, Instant::now());
    fleet.report.withdrawn_at_start = withdrawn_at_start;
    tokio::pin!(stop);
    let mut ticker = tokio::time::interval(TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = &mut stop => break,
        }
        fleet.tick(db, Instant::now()).await?;
    }
    let ids = std::mem::take(&mut fleet.ids);
    let withdrawn: i64 = sqlx::query_scalar(
        "SELECT count(*) FILTER (WHERE server_gone(id)) FROM unnest($1::text[]) AS id",
    )
    .bind(&ids)
    .fetch_one(db)
    .await?;
    fleet.report.withdrawn_at_end = withdrawn as u64;
    Ok(fleet.report)
}

/// A run's fleet: what it was, what it lived through, and what the rounds made of it.
#[derive(Debug, Clone)]
pub struct FleetOutcome {
    pub spec: FleetSpec,
    pub report: FleetReport,
    /// None: the login cannot read `matches` and `rounds` (a client or server login).
    pub figures: Option<ServerFigures>,
}

impl fmt::Display for FleetOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} (match length {} +-20%, crash rate {} per match, announcing every {})",
            self.report,
            humantime::format_duration(self.spec.match_length),
            self.spec.crash_rate,
            humantime::format_duration(self.spec.announce_every())
        )?;
        match &self.figures {
            Some(figures) => write!(f, "{figures}"),
            None => write!(
                f,
                "  (the rounds' figures need a login that reads matches and rounds: an ops \
                 login, or the database's owner)"
            ),
        }
    }
}

/// What the figures call a cross-region placement.
pub const CROSS_REGION_NOTE: &str = "(a cross-region placement: a match placed in a region \
     other than the one minimising its worst player's latency, the region the round formed \
     it for; among the queue's regions all its players measured)";

/// What the rounds of some queues made of the supply, from the database (matches,
/// rounds, their snapshots): a login that reads those tables (ops, or the database's
/// owner).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerFigures {
    /// Matches placed on a server (backfill fills apart), per region placed.
    pub placed: i64,
    pub placed_by_region: BTreeMap<String, i64>,
    /// Matches a round formed but could not place: `sum(rounds.no_server_matches)`.
    pub waited_for_server: i64,
    /// Players left over `no_server` by a round: player-rounds, and distinct players.
    pub no_server_left_over: i64,
    pub no_server_players: i64,
    /// Placed matches whose region is not the one that minimises their worst player's
    /// latency (the region the round forms a match for; among the queue's regions every
    /// player of the match measured): moved to a neighbour for want of a server.
    pub cross_region: i64,
    /// How long a server sat free before its allocation (matches.created_at -
    /// matches.server_ready_at), p50 and p90, seconds.
    pub idle_p50_s: Option<f64>,
    pub idle_p90_s: Option<f64>,
}

impl ServerFigures {
    /// The figures of `queues` for the rounds committed and matches created since
    /// `since`.
    pub async fn read(
        db: &PgPool,
        queues: &[String],
        since: DateTime<Utc>,
    ) -> Result<ServerFigures, SimError> {
        let by_region: Vec<(Option<String>, i64)> = sqlx::query_as(
            "SELECT region, count(*) FROM matches
              WHERE queue = ANY($1) AND created_at >= $2 AND server_id IS NOT NULL
                AND session_id IS NULL
              GROUP BY region ORDER BY region",
        )
        .bind(queues)
        .bind(since)
        .fetch_all(db)
        .await?;
        let (idle_p50_s, idle_p90_s): (Option<f64>, Option<f64>) = sqlx::query_as(
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY s),
                    percentile_cont(0.9) WITHIN GROUP (ORDER BY s)
               FROM (SELECT extract(epoch FROM created_at - server_ready_at)::float8 AS s
                       FROM matches
                      WHERE queue = ANY($1) AND created_at >= $2 AND server_id IS NOT NULL
                        AND session_id IS NULL) x",
        )
        .bind(queues)
        .bind(since)
        .fetch_one(db)
        .await?;
        let waited_for_server: i64 = sqlx::query_scalar(
            "SELECT coalesce(sum(no_server_matches), 0)::int8 FROM rounds
              WHERE queue = ANY($1) AND committed_at >= $2",
        )
        .bind(queues)
        .bind(since)
        .fetch_one(db)
        .await?;
        let (no_server_left_over, no_server_players): (i64, i64) = sqlx::query_as(
            "SELECT count(*), count(DISTINCT l.key)
               FROM rounds r
               JOIN round_snapshots s USING (round_id)
              CROSS JOIN LATERAL jsonb_each(s.left_over) l
              WHERE r.queue = ANY($1) AND r.committed_at >= $2
                AND l.value ->> 'outcome' = 'no_server'",
        )
        .bind(queues)
        .bind(since)
        .fetch_one(db)
        .await?;
        // The region each placed match would have had with servers everywhere: the
        // lowest worst latency, then the lowest sum, then the name (as the round picks
        // it), among the queue's regions that every player of the match measured.
        let cross_region: i64 = sqlx::query_scalar(
            "WITH placed AS (
                 SELECT m.match_id, m.region, q.regions,
                        (SELECT count(*) FROM match_players p
                          WHERE p.match_id = m.match_id) AS size
                   FROM matches m
                   JOIN queues q ON q.queue = m.queue
                  WHERE m.queue = ANY($1) AND m.created_at >= $2
                    AND m.server_id IS NOT NULL AND m.session_id IS NULL),
             per_region AS (
                 SELECT p.match_id, l.key AS region,
                        max(l.value::float8) AS worst, sum(l.value::float8) AS total
                   FROM placed p
                   JOIN match_players mp ON mp.match_id = p.match_id
                   JOIN queue_entries e ON e.entry_id = mp.entry_id
                  CROSS JOIN LATERAL jsonb_each_text(e.latencies) l
                  WHERE cardinality(p.regions) = 0 OR l.key = ANY (p.regions)
                  GROUP BY p.match_id, p.size, l.key
                 HAVING count(*) = p.size),
             best AS (
                 SELECT DISTINCT ON (match_id) match_id, region
                   FROM per_region
                  ORDER BY match_id, worst, total, region)
             SELECT count(*) FROM placed p JOIN best b USING (match_id)
              WHERE b.region IS DISTINCT FROM p.region",
        )
        .bind(queues)
        .bind(since)
        .fetch_one(db)
        .await?;
        let placed_by_region: BTreeMap<String, i64> = by_region
            .into_iter()
            .map(|(r, n)| (r.unwrap_or_else(|| "-".into()), n))
            .collect();
        Ok(ServerFigures {
            placed: placed_by_region.values().sum(),
            placed_by_region,
            waited_for_server,
            no_server_left_over,
            no_server_players,
            cross_region,
            idle_p50_s,
            idle_p90_s,
        })
    }

    /// The figures as table rows: (what, value).
    pub fn rows(&self) -> Vec<(String, String)> {
        let by_region = self
            .placed_by_region
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let share = if self.placed > 0 {
            format!(
                " ({:.1}%)",
                100.0 * self.cross_region as f64 / self.placed as f64
            )
        } else {
            String::new()
        };
        vec![
            (
                "matches placed on a server (per region)".into(),
                format!("{} ({by_region})", self.placed),
            ),
            (
                "matches that waited for a server (no_server_matches)".into(),
                self.waited_for_server.to_string(),
            ),
            (
                "players left over no_server (player-rounds / players)".into(),
                format!("{} / {}", self.no_server_left_over, self.no_server_players),
            ),
            (
                "cross-region placements (not the lowest-worst-ping region)".into(),
                format!("{}{share}", self.cross_region),
            ),
            (
                "server free before its allocation, p50 / p90".into(),
                match (self.idle_p50_s, self.idle_p90_s) {
                    (Some(a), Some(b)) => format!("{a:.1} / {b:.1} s"),
                    _ => "-".into(),
                },
            ),
        ]
    }
}

impl fmt::Display for ServerFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, value) in self.rows() {
            writeln!(f, "  {name:<58} {value}")?;
        }
        write!(f, "  {CROSS_REGION_NOTE}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regions(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn no_fleet_without_servers_per_region() {
        let options = FleetOptions::default();
        let spec = options
            .spec(
                &regions(&["eu-west"]),
                Duration::from_secs(50),
                Duration::from_secs(30),
                1,
                "f-",
            )
            .unwrap();
        assert_eq!(spec, None);
        let stray = FleetOptions {
            short_regions: vec![("eu-west".into(), 1)],
            ..FleetOptions::default()
        };
        let err = stray
            .spec(
                &regions(&["eu-west"]),
                Duration::from_secs(50),
                Duration::from_secs(30),
                1,
                "f-",
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("--servers-per-region"), "{err}");
    }

    #[test]
    fn a_short_region_has_its_own_number_of_servers() {
        let options = FleetOptions {
            servers_per_region: 6,
            short_regions: vec![parse_short_region("us-east=2").unwrap()],
            ..FleetOptions::default()
        };
        let spec = options
            .spec(
                &regions(&["eu-west", "us-east"]),
                Duration::from_secs(50),
                Duration::from_secs(30),
                1,
                "f-",
            )
            .unwrap()
            .unwrap();
        assert_eq!(spec.servers_line(), "eu-west 6, us-east 2");
        assert_eq!(spec.match_length, Duration::from_secs(50));
        assert_eq!(spec.announce_every(), Duration::from_secs(10));
        let fleet = Fleet::new(&spec, Instant::now());
        assert_eq!(fleet.servers.len(), 8);
        assert_eq!(fleet.servers[0].id, "f-eu-west-1");
        assert_eq!(fleet.servers[7].id, "f-us-east-2");

        let elsewhere = FleetOptions {
            short_regions: vec![("mars".into(), 1)],
            ..options
        };
        let err = elsewhere
            .spec(
                &regions(&["eu-west"]),
                Duration::from_secs(50),
                Duration::from_secs(30),
                1,
                "f-",
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"mars\" is not a region of the fleet"),
            "{err}"
        );
        assert!(parse_short_region("us-east").is_err());
        assert!(parse_short_region("us-east=x").is_err());
    }
}
