//! The daemon's configuration (`config/matchmaker.toml`): typed, validated before use.
//!
//! ```toml
//! default_queue = "ranked_3v3"
//! [daemon]               # poll interval, lease TTL / renewal
//! [queues.ranked_3v3]    # the core's QueueModel: format, network, weights, factors
//! [queues.ranked_3v3.round]  # this daemon's RoundConfig: schedule, sizes, budget, seed
//! [queues.ranked_3v3.tickets]  # what clients may enqueue: ticket TTL, known regions
//! [retention]            # how long past rounds, matches and entries are kept
//! ```
//!
//! [`Config::load`] / [`Config::from_toml_str`] refuse a bad file with a message naming
//! the queue and the key; the daemon's hot reload keeps the old config in that case. Each
//! queue's effective config has a [`QueueConfig::hash`] stored with every round, so a past
//! round can be traced to the exact settings that produced it.

pub mod rating;
pub mod schedule;
pub mod servers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use matchmaker_optimizer::model::Network;
use matchmaker_optimizer::{Budget, QueueModel, Strategy};
pub use rating::RatingConfig;
pub use schedule::Schedule;
pub use servers::ServersConfig;

/// The embedded default configuration (`config/matchmaker.toml`).
pub const DEFAULT_TOML: &str = include_str!("../../config/matchmaker.toml");

/// The schedule of a queue that sets neither `every` nor `cron`.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(120);

/// Environment variable naming the config file.
pub const CONFIG_ENV: &str = "MATCHMAKER_CONFIG";

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config is not valid TOML: {0}")]
    Toml(String),
    /// A value is refused; `key` is the full dotted path, e.g. `queues.ranked_3v3.round.min_pool`.
    #[error("config key `{key}`: {problem}")]
    Invalid { key: String, problem: String },
}

fn invalid(key: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        problem: problem.into(),
    }
}

/// The table at `key` as a `T`; a refusal names the key at fault inside it (e.g.
/// `queues.ranked_3v3.round.every`, or an unknown `queues.ranked_3v3.round.evry`), found
/// by the path the deserializer had reached.
fn typed<T: serde::de::DeserializeOwned>(key: &str, value: toml::Value) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let problem = e.into_inner().message().to_string();
        let full = if path.is_empty() || path == "." {
            key.to_string()
        } else {
            format!("{key}.{path}")
        };
        invalid(full, problem)
    })
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// The queue clients use when they do not name one (and the simulator's default).
    pub default_queue: String,
    pub daemon: DaemonConfig,
    pub queues: BTreeMap<String, QueueConfig>,
    pub retention: RetentionConfig,
}

/// `[retention]`: bounded history. Each queue's leader deletes what ended before the
/// horizon (rounds, matches, match players, entries that are no longer queued), in
/// batches of short transactions, every `interval`; `matchmaker prune` does the same on
/// demand. Each player's last `history_matches` matches in a queue are kept whatever their
/// age: the next round's opponent-variation history reads them (src/db/retention.rs).
/// Read again at every pass, so a reload applies from the next one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    /// Keep this long. Absent: keep all history (a pass deletes only the enqueue buckets
    /// that have refilled, which hold nothing).
    #[serde(
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub horizon: Option<Duration>,
    /// At most this many matches (with their players and entries), entries or rounds per
    /// transaction.
    pub batch_size: usize,
    /// Time between two pruning passes of a queue's leader.
    #[serde(with = "humantime_serde")]
    pub interval: Duration,
}

/// The shortest horizon a config may set: a typo such as `"30m"` for thirty days must
/// not wipe the history, and operators read the last hour's rounds at the very least.
pub const MIN_RETENTION_HORIZON: Duration = Duration::from_secs(3600);
/// The largest batch: a batch is one transaction, which must stay short.
pub const MAX_RETENTION_BATCH: usize = 10_000;

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            horizon: None,
            batch_size: 500,
            interval: Duration::from_secs(600),
        }
    }
}

impl RetentionConfig {
    /// The rules of `[retention]`; the error names the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(horizon) = self.horizon {
            check_retention_horizon(horizon).map_err(|p| invalid("retention.horizon", p))?;
        }
        if self.batch_size == 0 || self.batch_size > MAX_RETENTION_BATCH {
            return Err(invalid(
                "retention.batch_size",
                format!("must be between 1 and {MAX_RETENTION_BATCH}"),
            ));
        }
        if self.interval < Duration::from_secs(1) {
            return Err(invalid("retention.interval", "must be at least 1s"));
        }
        Ok(())
    }
}

/// A horizon as an operator writes it: whole days as `30d` (humantime would print
/// `1month 9days 13h 26m 24s` for 40 days), anything else in humantime's format.
pub fn format_horizon(horizon: Duration) -> String {
    let secs = horizon.as_secs();
    if secs > 0 && secs.is_multiple_of(86_400) && horizon.subsec_nanos() == 0 {
        format!("{}d", secs / 86_400)
    } else {
        humantime::format_duration(horizon).to_string()
    }
}

/// A retention horizon is at least [`MIN_RETENTION_HORIZON`] (also `prune --horizon`).
pub fn check_retention_horizon(horizon: Duration) -> Result<(), String> {
    if horizon < MIN_RETENTION_HORIZON {
        return Err(format!(
            "{} is shorter than the minimum of 1h (a horizon of days is usual: \"30d\")",
            format_horizon(horizon)
        ));
    }
    Ok(())
}

/// Process-wide settings of `matchmaker run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DaemonConfig {
    /// How often each queue looks at its pool even without a NOTIFY (the fallback when
    /// notifications are lost) and re-checks its lease.
    #[serde(with = "humantime_serde")]
    pub poll_interval: Duration,
    /// A leader that stops renewing loses its queues after this long; the other replicas
    /// take over within it. Also how long a replica's heartbeat counts it as live
    /// (balanced leadership, `daemon::leadership`).
    #[serde(with = "humantime_serde")]
    pub lease_ttl: Duration,
    /// How often each replica heartbeats, renews its leases and rebalances the queues
    /// (well below `lease_ttl`).
    #[serde(with = "humantime_serde")]
    pub lease_renew: Duration,
    /// The longest the daemon waits for a lock; a statement that would wait longer fails
    /// and is retried at the next look (read at start).
    #[serde(with = "humantime_serde")]
    pub lock_timeout: Duration,
    /// The longest any one statement of the daemon may run (read at start).
    #[serde(with = "humantime_serde")]
    pub statement_timeout: Duration,
    /// Serve `/metrics`, `/healthz` and `/readyz` on this address (`IP:PORT`; port 0: any
    /// free port, logged). `run --metrics-addr` overrides it. Absent: not served. Read at
    /// start: a reload that changes it logs that it takes effect at the next restart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Cores the solves of all queues of this replica share (rounds that overlap split
    /// them; a round that finds none free runs on one thread of its own, see
    /// `daemon::cores`). A queue's `round.threads` caps its share. Absent: the machine's
    /// cores. Read at start: a reload that changes it logs that a restart is needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solver_threads: Option<usize>,
    /// Refuse to start unless every client and server login has a connection limit and
    /// the limits leave the daemon its connections (`db::login_limits`). Off (a pooler
    /// bounds the clients instead): the same facts are logged as a warning and the daemon
    /// starts. Read at start.
    pub check_login_limits: bool,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            poll_interval: Duration::from_secs(5),
            lease_ttl: Duration::from_secs(15),
            lease_renew: Duration::from_secs(5),
            lock_timeout: Duration::from_secs(2),
            statement_timeout: Duration::from_secs(60),
            metrics_addr: None,
            solver_threads: None,
            check_login_limits: true,
        }
    }
}

/// One queue: the core's model (`[queues.NAME]`), when / how its rounds run
/// (`[queues.NAME.round]`) and what clients may enqueue (`[queues.NAME.tickets]`).
#[derive(Debug, Clone, PartialEq)]
pub struct QueueConfig {
    pub model: QueueModel,
    pub round: RoundConfig,
    pub tickets: TicketConfig,
    pub backfill: BackfillConfig,
    pub limits: LimitsConfig,
    /// `[queues.NAME.ready_check]`; None (no table): a round's matches are final.
    pub ready_check: Option<ReadyCheckConfig>,
    /// `[queues.NAME.rating]`; None (no table): skill is the client's to give, and
    /// results move no rating.
    pub rating: Option<RatingConfig>,
    /// `[queues.NAME.servers]`; None (no table): a dedicated match names its region and
    /// the game backend finds it a server.
    pub servers: Option<ServersConfig>,
}

/// `[queues.NAME.ready_check]`: every player of a match accepts it (`accept_match`)
/// before it is final. A match a round commits is pending until all accept (ready), or
/// someone declines or `timeout` passes (cancelled: the players who accepted are queued
/// again with their original enqueue time, the others end declined).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadyCheckConfig {
    /// How long players have to accept. 1s to 10m.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// A player who declined or did not answer may not enqueue in the queue again for
    /// this long (`enqueue` refuses with the time left). 0s (the default): no cooldown.
    /// At most 24h.
    #[serde(with = "humantime_serde", default)]
    pub decline_cooldown: Duration,
    /// A login whose players failed (declined, or did not answer) at least this many of
    /// their recent ready checks, and at least `isolate_share` of them, has its players
    /// matched among themselves: its failures cost nobody else. 0: never.
    #[serde(default = "default_isolate_after")]
    pub isolate_after: u32,
    /// The share of a login's recent ready-check seats that must have failed. (0, 1].
    #[serde(default = "default_isolate_share")]
    pub isolate_share: f64,
    /// How fast a login's record forgets: a failure counts half after this long. 1m to
    /// 24h.
    #[serde(with = "humantime_serde", default = "default_isolate_half_life")]
    pub isolate_half_life: Duration,
}

fn default_isolate_after() -> u32 {
    5
}

fn default_isolate_share() -> f64 {
    0.5
}

fn default_isolate_half_life() -> Duration {
    Duration::from_secs(10 * 60)
}

/// `[queues.NAME.limits]`: what one client login may take of the queue, so that no login
/// crowds out another's players. The daemon publishes the quotas in the `queues` table,
/// where the client functions read them; the daemon and operators are exempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Entries one login may have queued in this queue at once; more are refused.
    pub max_queued_per_login: u32,
    /// Open backfill requests one login may have in this queue at once.
    pub max_backfill_requests_per_login: u32,
    /// Players one client connection may enqueue per second (a token bucket), after a
    /// burst of `enqueue_burst`. A login's rate is this times its connection limit.
    pub enqueue_rate: f64,
    pub enqueue_burst: f64,
    /// Unexpired avoids one login may hold; `avoid` refuses a new one past it (a renewal
    /// still works). Avoids belong to no queue: `avoid` takes the largest of the active
    /// queues'.
    pub max_avoids_per_login: u32,
    /// An entry left over as no_host or no_valid_match for this many rounds in a row waits
    /// behind every other entry when the pool exceeds `round.max_round_size`; a round with
    /// room still tries it.
    pub sit_out_after: u32,
    /// The most a round's backfills may take of its pool (0 to 1): the requests a round
    /// tries have at most this share of the pool in open slots, taken from each login in
    /// turn.
    pub max_fill_share: f64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_queued_per_login: 2000,
            max_backfill_requests_per_login: 20,
            enqueue_rate: 200.0,
            enqueue_burst: 1000.0,
            max_avoids_per_login: 100_000,
            sit_out_after: 3,
            max_fill_share: 0.5,
        }
    }
}

/// `[queues.NAME.backfill]`: backfill requests of running sessions (`request_backfill`).
/// Every round fills the open requests before it forms new matches;
/// these keys add the immediate backfill round, so that a session does not wait for the
/// schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BackfillConfig {
    /// Fill backfill requests at all (rounds and immediate rounds). false: requests stay
    /// open until they expire.
    pub enabled: bool,
    /// A new request gets an immediate backfill round as soon as the leader wakes (its
    /// NOTIFY), so well within this; a request still open is tried again every `delay`
    /// while players are queued. 100ms to 60s.
    #[serde(with = "humantime_serde")]
    pub delay: Duration,
    /// A fill whose completed session scores below this (the match score, 0 to 1) is not
    /// made; the request stays open with that reason.
    pub min_score: f64,
    /// Immediate backfill rounds of the queue start at most once per this, however many
    /// requests arrive: a login re-requesting fake sessions cannot make the leader run a
    /// round (and store its snapshot) per request. 0s to 60s.
    #[serde(with = "humantime_serde")]
    pub spacing: Duration,
}

impl Default for BackfillConfig {
    fn default() -> Self {
        BackfillConfig {
            enabled: true,
            delay: Duration::from_secs(5),
            min_score: 0.0,
            spacing: Duration::from_secs(1),
        }
    }
}

/// `[queues.NAME.tickets]`: the entry rules the daemon publishes in the `queues` table,
/// which the enqueue functions enforce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TicketConfig {
    /// A queued entry that is not kept alive (`keep_alive()`) for this long expires and is
    /// never matched; clients refresh every `ttl / 3`.
    #[serde(with = "humantime_serde")]
    pub ttl: Duration,
    /// The names a latency map may use (datacenter regions or relays). Empty: any name
    /// (at most 32 per player either way).
    pub regions: Vec<String>,
    /// The skills the queue accepts, `[min, max]`: a skill outside is refused (class 22),
    /// so no entry far off the scale can ride the max-wait fallback into honest players'
    /// matches. None: any skill within the input rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill_range: Option<[f64; 2]>,
}

impl Default for TicketConfig {
    fn default() -> Self {
        TicketConfig {
            ttl: Duration::from_secs(5 * 60),
            regions: Vec::new(),
            skill_range: None,
        }
    }
}

/// `[queues.NAME.round]`: the daemon's part of a queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoundConfig {
    /// A round this long after the previous one. At most one of `every` / `cron`;
    /// neither: every 2 minutes.
    #[serde(
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub every: Option<Duration>,
    /// A round at each tick of this cron expression (UTC; 5 fields, or 6 with seconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// Start a round early as soon as this many players are queued (the Awesomenauts matchmaker post: 100-300).
    /// Absent: no early start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_pool: Option<usize>,
    /// A scheduled round waits while fewer players are queued; it starts when the pool
    /// reaches this size, or when the longest-waiting player reaches the model's
    /// `max_wait` (if a match can be formed). Default: one match worth of players (of
    /// the smallest format a flexible queue allows: a 5v5 queue that allows 4v4 forms a
    /// match from 8 players).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_pool: Option<usize>,
    /// At most this many players per round, oldest first; the rest wait for the next.
    pub max_round_size: usize,
    /// Wall-clock time the solver may spend on one round.
    #[serde(with = "humantime_serde")]
    pub budget: Duration,
    /// A deterministic budget: exactly this many solver restarts instead of the time
    /// `budget`, so the round gives the same matches on any machine and any number of
    /// threads, and `matchmaker replay` reproduces it exactly. Absent: the time budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarts: Option<u64>,
    /// Steps of one annealing restart. Absent: 2,000 per unit of the pool (at least
    /// 20,000) with `restarts`, the whole time budget without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moves_per_restart: Option<u64>,
    /// Search strategy of the core.
    pub strategy: Strategy,
    /// Fixed solver seed. Absent: each round derives its seed from its start time. Either
    /// way the seed used is stored with the round, so it can be replayed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Solver threads of this queue's rounds, at most (the daemon grants what is free of
    /// `[daemon] solver_threads`). Absent: every free core of that budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// How many recent matches per pooled player the snapshot reads as history for
    /// opponent variation. Absent: the model's `opponent_variation.depth` (the Awesomenauts matchmaker post looks
    /// at the previous match: 1); never less than that.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_matches: Option<usize>,
}

impl Default for RoundConfig {
    fn default() -> Self {
        RoundConfig {
            every: None,
            cron: None,
            target_pool: None,
            min_pool: None,
            max_round_size: 10_000,
            budget: Duration::from_secs(2),
            restarts: None,
            moves_per_restart: None,
            strategy: Strategy::Default,
            seed: None,
            threads: None,
            history_matches: None,
        }
    }
}

impl RoundConfig {
    /// The solver's budget: `restarts` when set (deterministic), else the time `budget`.
    pub fn solve_budget(&self) -> Budget {
        match self.restarts {
            Some(n) => Budget::Restarts(n),
            None => Budget::Time(self.budget),
        }
    }

    /// The schedule (valid once the config was validated).
    pub fn schedule(&self) -> Result<Schedule, String> {
        match (&self.every, &self.cron) {
            (Some(every), None) => Ok(Schedule::every(*every)),
            (None, Some(cron)) => Schedule::cron(cron),
            (Some(_), Some(_)) => Err("set either `every` or `cron`, not both".into()),
            (None, None) => Ok(Schedule::every(DEFAULT_EVERY)),
        }
    }
}

impl QueueConfig {
    /// `min_pool`, defaulting to one match worth of players of the smallest format (a
    /// flexible queue's round can form a smaller match; waiting for a full one would hold
    /// back the very players the smaller formats are for).
    pub fn min_pool(&self) -> usize {
        self.round
            .min_pool
            .unwrap_or_else(|| self.model.min_players_per_match())
    }

    /// Recent matches per player the snapshot reads (see `round.history_matches`).
    pub fn history_matches(&self) -> usize {
        let mut depth = self.model.opponent_variation.depth;
        if !self.model.maps.is_absent() {
            depth = depth.max(self.model.maps.repeat_depth);
        }
        self.round.history_matches.unwrap_or(depth).max(depth)
    }

    /// The effective config as JSON: the `[queues.NAME]` table with its `round` table,
    /// every default filled in. Stored with each round.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(&self.model).expect("queue model serializes");
        let round = serde_json::to_value(&self.round).expect("round config serializes");
        let tickets = serde_json::to_value(&self.tickets).expect("ticket config serializes");
        if let serde_json::Value::Object(map) = &mut value {
            map.insert("round".into(), round);
            map.insert("tickets".into(), tickets);
            // Only when set: the stored config (and hash) of a queue without it is
            // unchanged.
            if self.backfill != BackfillConfig::default() {
                let backfill =
                    serde_json::to_value(&self.backfill).expect("backfill config serializes");
                map.insert("backfill".into(), backfill);
            }
            if self.limits != LimitsConfig::default() {
                let limits = serde_json::to_value(&self.limits).expect("limits serialize");
                map.insert("limits".into(), limits);
            }
            if let Some(ready_check) = &self.ready_check {
                let ready_check =
                    serde_json::to_value(ready_check).expect("ready check config serializes");
                map.insert("ready_check".into(), ready_check);
            }
            if let Some(rating) = &self.rating {
                let rating = serde_json::to_value(rating).expect("rating config serializes");
                map.insert("rating".into(), rating);
            }
            if let Some(servers) = &self.servers {
                let servers = serde_json::to_value(servers).expect("servers config serializes");
                map.insert("servers".into(), servers);
            }
        }
        value
    }

    /// The effective config as a config file that holds this queue only (named `name`,
    /// every default written out), which `Config::from_toml_str`, `optimize --config` and
    /// `replay --config` read back to the same [`QueueConfig`] (and the same hash).
    pub fn to_toml(&self, name: &str) -> String {
        let mut queue = without_nulls(self.to_json());
        // The round table last: TOML writes plain keys before sub-tables either way, but
        // a reader finds the scoring keys first.
        if let serde_json::Value::Object(map) = &mut queue
            && let Some(round) = map.remove("round")
        {
            map.insert("round".into(), round);
        }
        let file = serde_json::json!({
            "default_queue": name,
            "queues": { name: queue },
        });
        let text = toml::to_string(&file).expect("a queue config is representable in TOML");
        format!(
            "# The effective config of queue {name} as a round used it (every default \
             written out).\n{text}"
        )
    }

    /// A short version tag of the effective config: FNV-1a 64 of its JSON (hex). Stable
    /// across builds (unlike std's hasher), which is all a version tag needs.
    pub fn hash(&self) -> String {
        let json = self.to_json().to_string();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in json.bytes() {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{h:016x}")
    }
}

/// TOML has no null: optional keys that are unset are left out.
fn without_nulls(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => map
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k, without_nulls(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        serde_json::Value::Array(items) => items.into_iter().map(without_nulls).collect(),
        other => other,
    }
}

impl Serialize for QueueConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl Config {
    /// Read and validate a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::from_toml_str(&text)
    }

    /// The embedded default (`config/matchmaker.toml` as built into the binary).
    pub fn embedded_default() -> Config {
        Config::from_toml_str(DEFAULT_TOML).expect("the embedded default config is valid")
    }

    /// Parse and validate.
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        let mut table: toml::Table =
            toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string()))?;

        let default_queue = match table.remove("default_queue") {
            None => None,
            Some(toml::Value::String(s)) => Some(s),
            Some(_) => return Err(invalid("default_queue", "must be a string")),
        };
        let daemon: DaemonConfig = match table.remove("daemon") {
            None => DaemonConfig::default(),
            Some(v) => typed("daemon", v)?,
        };
        let retention: RetentionConfig = match table.remove("retention") {
            None => RetentionConfig::default(),
            Some(v) => typed("retention", v)?,
        };
        let queues_value = table
            .remove("queues")
            .ok_or_else(|| invalid("queues", "at least one [queues.NAME] table is required"))?;
        if let Some(key) = table.keys().next() {
            return Err(invalid(
                key.clone(),
                "unknown key (expected default_queue, daemon, queues, retention)",
            ));
        }
        let toml::Value::Table(queue_tables) = queues_value else {
            return Err(invalid("queues", "must be a table of [queues.NAME] tables"));
        };

        let mut queues = BTreeMap::new();
        for (name, value) in queue_tables {
            let key = format!("queues.{name}");
            let toml::Value::Table(mut queue_table) = value else {
                return Err(invalid(key, "must be a table"));
            };
            let round: RoundConfig = match queue_table.remove("round") {
                None => RoundConfig::default(),
                Some(v) => typed(&format!("{key}.round"), v)?,
            };
            let tickets: TicketConfig = match queue_table.remove("tickets") {
                None => TicketConfig::default(),
                Some(v) => typed(&format!("{key}.tickets"), v)?,
            };
            let backfill: BackfillConfig = match queue_table.remove("backfill") {
                None => BackfillConfig::default(),
                Some(v) => typed(&format!("{key}.backfill"), v)?,
            };
            let limits: LimitsConfig = match queue_table.remove("limits") {
                None => LimitsConfig::default(),
                Some(v) => typed(&format!("{key}.limits"), v)?,
            };
            let ready_check: Option<ReadyCheckConfig> = match queue_table.remove("ready_check") {
                None => None,
                Some(v) => Some(typed(&format!("{key}.ready_check"), v)?),
            };
            let rating: Option<RatingConfig> = match queue_table.remove("rating") {
                None => None,
                Some(v) => Some(typed(&format!("{key}.rating"), v)?),
            };
            let servers: Option<ServersConfig> = match queue_table.remove("servers") {
                None => None,
                Some(v) => Some(typed(&format!("{key}.servers"), v)?),
            };
            let model: QueueModel = typed(&key, toml::Value::Table(queue_table))?;
            queues.insert(
                name,
                QueueConfig {
                    model,
                    round,
                    tickets,
                    backfill,
                    limits,
                    ready_check,
                    rating,
                    servers,
                },
            );
        }

        let default_queue = match default_queue {
            Some(q) => q,
            None if queues.len() == 1 => queues.keys().next().cloned().unwrap_or_default(),
            None => {
                return Err(invalid(
                    "default_queue",
                    "required when more than one queue is configured",
                ));
            }
        };
        let config = Config {
            default_queue,
            daemon,
            queues,
            retention,
        };
        config.validate()?;
        Ok(config)
    }

    /// Every rule a config must satisfy; the error names the queue and key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.queues.is_empty() {
            return Err(invalid("queues", "at least one queue is required"));
        }
        if !self.queues.contains_key(&self.default_queue) {
            return Err(invalid(
                "default_queue",
                format!("no queue named {:?} is configured", self.default_queue),
            ));
        }
        let d = &self.daemon;
        if d.poll_interval.is_zero() {
            return Err(invalid("daemon.poll_interval", "must be greater than 0"));
        }
        if d.lease_renew.is_zero() || d.lease_renew >= d.lease_ttl {
            return Err(invalid(
                "daemon.lease_renew",
                "must be greater than 0 and less than daemon.lease_ttl",
            ));
        }
        if d.lock_timeout < Duration::from_millis(10) || d.lock_timeout >= d.lease_ttl {
            return Err(invalid(
                "daemon.lock_timeout",
                "must be at least 10ms and less than daemon.lease_ttl",
            ));
        }
        if d.statement_timeout < Duration::from_secs(1) {
            return Err(invalid("daemon.statement_timeout", "must be at least 1s"));
        }
        if d.solver_threads == Some(0) {
            return Err(invalid("daemon.solver_threads", "must be at least 1"));
        }
        for (name, queue) in &self.queues {
            queue.validate(name)?;
        }
        self.validate_rating_pools()?;
        self.retention.validate()
    }
}

impl Config {
    /// Queues that share a rating pool rate it one way: the same system and scale.
    fn validate_rating_pools(&self) -> Result<(), ConfigError> {
        let mut pools: BTreeMap<&str, (&str, RatingConfig)> = BTreeMap::new();
        for (name, queue) in &self.queues {
            let Some(rating) = &queue.rating else {
                continue;
            };
            let scale = rating.scale_of_pool();
            match pools.get(rating.pool_name(name)) {
                Some((first, theirs)) if *theirs != scale => {
                    return Err(invalid(
                        format!("queues.{name}.rating"),
                        format!(
                            "shares pool {:?} with queue {first}, whose rating table differs \
                             (queues of one pool need the same system, scale and settings)",
                            rating.pool_name(name)
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    pools.insert(rating.pool_name(name), (name, scale));
                }
            }
        }
        Ok(())
    }
}

/// The longest queue name: its notification channel, `matchmaker:` and the name, stays
/// within PostgreSQL's 63-byte identifiers unhashed, and every payload
/// that carries it stays far below the 8000-byte limit.
pub const MAX_QUEUE_NAME: usize = 52;

impl QueueConfig {
    /// Validate one queue named `name`.
    pub fn validate(&self, name: &str) -> Result<(), ConfigError> {
        let key = |k: &str| format!("queues.{name}.{k}");
        if name.is_empty()
            || name.len() > MAX_QUEUE_NAME
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(invalid(
                format!("queues.{name:?}"),
                format!("queue names are 1-{MAX_QUEUE_NAME} letters, digits, '_' and '-'"),
            ));
        }
        validate_model(&self.model)
            .map_err(|problem| invalid(format!("queues.{name}"), problem))?;
        self.validate_round(key)?;
        self.validate_tickets(key)?;
        self.validate_backfill(key)?;
        self.validate_limits(key)?;
        self.validate_ready_check(key)?;
        if let Some(rating) = &self.rating {
            rating
                .validate(|k| key(&format!("rating.{k}")))
                .map_err(|(k, problem)| invalid(k, problem))?;
        }
        if let Some(servers) = &self.servers {
            servers
                .validate(self.model.network == matchmaker_optimizer::Network::Dedicated)
                .map_err(|(k, problem)| invalid(key(&format!("servers.{k}")), problem))?;
        }
        self.validate_roles(key)?;
        Ok(())
    }

    /// The round's schedule, sizes and search budget.
    fn validate_round(&self, key: impl Fn(&str) -> String) -> Result<(), ConfigError> {
        let r = &self.round;
        r.schedule().map_err(|p| {
            let k = if r.cron.is_some() && r.every.is_none() {
                "round.cron"
            } else {
                "round.every"
            };
            invalid(key(k), p)
        })?;
        if r.every.is_some_and(|e| e < Duration::from_secs(1)) {
            return Err(invalid(key("round.every"), "must be at least 1s"));
        }
        let per_match = self.model.players_per_match();
        if r.max_round_size < per_match {
            return Err(invalid(
                key("round.max_round_size"),
                format!("must be at least one match ({per_match} players)"),
            ));
        }
        if let Some(min) = r.min_pool {
            let smallest = self.model.min_players_per_match();
            if min < smallest {
                let what = if self.model.is_flexible() {
                    format!("the smallest format the alliance allows ({smallest} players)")
                } else {
                    format!("one match ({smallest} players)")
                };
                return Err(invalid(
                    key("round.min_pool"),
                    format!("must be at least {what}"),
                ));
            }
            if min > r.max_round_size {
                return Err(invalid(
                    key("round.min_pool"),
                    "must not exceed round.max_round_size",
                ));
            }
        }
        if let Some(target) = r.target_pool
            && target < self.min_pool()
        {
            return Err(invalid(
                key("round.target_pool"),
                format!("must be at least round.min_pool ({})", self.min_pool()),
            ));
        }
        if r.budget.is_zero() {
            return Err(invalid(key("round.budget"), "must be greater than 0"));
        }
        if r.restarts == Some(0) {
            return Err(invalid(key("round.restarts"), "must be at least 1"));
        }
        if r.moves_per_restart == Some(0) {
            return Err(invalid(
                key("round.moves_per_restart"),
                "must be at least 1",
            ));
        }
        if r.threads == Some(0) {
            return Err(invalid(key("round.threads"), "must be at least 1"));
        }
        Ok(())
    }

    /// Ticket lifetime and the regions a ticket may name.
    fn validate_tickets(&self, key: impl Fn(&str) -> String) -> Result<(), ConfigError> {
        let t = &self.tickets;
        if t.ttl < Duration::from_secs(3) {
            return Err(invalid(key("tickets.ttl"), "must be at least 3s"));
        }
        if let Some([lo, hi]) = t.skill_range
            && !(lo.is_finite() && hi.is_finite() && lo < hi && lo >= -1e6 && hi <= 1e6)
        {
            return Err(invalid(
                key("tickets.skill_range"),
                "must be [min, max], finite, min below max, within [-1000000, 1000000]",
            ));
        }
        if t.regions.len() > 256 {
            return Err(invalid(key("tickets.regions"), "at most 256 regions"));
        }
        for region in &t.regions {
            if region.is_empty()
                || region.chars().count() > 64
                || region.chars().any(char::is_control)
            {
                return Err(invalid(
                    key("tickets.regions"),
                    format!(
                        "{region:?}: a region name has 1-64 characters, none a control character"
                    ),
                ));
            }
        }
        // A dedicated-server match is played in one of the queue's regions: with none
        // listed, any name a client sends ("mars") would be a region to place it in.
        if self.model.network == Network::Dedicated && t.regions.is_empty() {
            return Err(invalid(
                key("tickets.regions"),
                "a dedicated-server queue must list its regions (the datacenters a match may \
                 be placed in; latencies may name only these)",
            ));
        }
        Ok(())
    }

    /// When backfill runs and what it accepts.
    fn validate_backfill(&self, key: impl Fn(&str) -> String) -> Result<(), ConfigError> {
        let b = &self.backfill;
        if b.delay < Duration::from_millis(100) || b.delay > Duration::from_secs(60) {
            return Err(invalid(
                key("backfill.delay"),
                "must be between 100ms and 60s",
            ));
        }
        if !(0.0..=1.0).contains(&b.min_score) {
            return Err(invalid(key("backfill.min_score"), "must be in [0, 1]"));
        }
        if b.spacing > Duration::from_secs(60) {
            return Err(invalid(key("backfill.spacing"), "must be at most 60s"));
        }
        Ok(())
    }

    /// What one login may do.
    fn validate_limits(&self, key: impl Fn(&str) -> String) -> Result<(), ConfigError> {
        let l = &self.limits;
        if !(1..=1_000_000).contains(&l.max_queued_per_login) {
            return Err(invalid(
                key("limits.max_queued_per_login"),
                "must be between 1 and 1000000",
            ));
        }
        if !(1..=100_000).contains(&l.max_backfill_requests_per_login) {
            return Err(invalid(
                key("limits.max_backfill_requests_per_login"),
                "must be between 1 and 100000",
            ));
        }
        if !(l.enqueue_rate.is_finite() && l.enqueue_rate > 0.0 && l.enqueue_rate <= 1e6) {
            return Err(invalid(
                key("limits.enqueue_rate"),
                "must be a number of players per second in (0, 1000000]",
            ));
        }
        let party = self.model.team_size as f64;
        if !(l.enqueue_burst.is_finite() && l.enqueue_burst >= party && l.enqueue_burst <= 1e7) {
            return Err(invalid(
                key("limits.enqueue_burst"),
                format!("must be between the largest party ({party}) and 10000000"),
            ));
        }
        if !(1..=1_000_000).contains(&l.max_avoids_per_login) {
            return Err(invalid(
                key("limits.max_avoids_per_login"),
                "must be between 1 and 1000000",
            ));
        }
        if !(1..=1000).contains(&l.sit_out_after) {
            return Err(invalid(
                key("limits.sit_out_after"),
                "must be between 1 and 1000 rounds",
            ));
        }
        if !(l.max_fill_share > 0.0 && l.max_fill_share <= 1.0) {
            return Err(invalid(key("limits.max_fill_share"), "must be in (0, 1]"));
        }
        Ok(())
    }

    /// The ready check's timeout and decline cooldown.
    fn validate_ready_check(&self, key: impl Fn(&str) -> String) -> Result<(), ConfigError> {
        if let Some(rc) = &self.ready_check {
            if rc.timeout < Duration::from_secs(1) || rc.timeout > Duration::from_secs(600) {
                return Err(invalid(
                    key("ready_check.timeout"),
                    "must be between 1s and 10m",
                ));
            }
            if rc.decline_cooldown > Duration::from_secs(24 * 3600) {
                return Err(invalid(
                    key("ready_check.decline_cooldown"),
                    "must be at most 24h (0s: no cooldown)",
                ));
            }
            if !(rc.isolate_share > 0.0 && rc.isolate_share <= 1.0) {
                return Err(invalid(
                    key("ready_check.isolate_share"),
                    "must be above 0 and at most 1",
                ));
            }
            if rc.isolate_half_life < Duration::from_secs(60)
                || rc.isolate_half_life > Duration::from_secs(24 * 3600)
            {
                return Err(invalid(
                    key("ready_check.isolate_half_life"),
                    "must be between 1m and 24h",
                ));
            }
        }
        Ok(())
    }

    /// Role names short enough to store.
    fn validate_roles(&self, key: impl Fn(&str) -> String) -> Result<(), ConfigError> {
        for role in &self.model.roles {
            if role.chars().count() > 64 {
                return Err(invalid(
                    key("roles"),
                    format!("{role:?}: longer than 64 characters"),
                ));
            }
        }
        Ok(())
    }
}

/// The model's own rules, checked by the core. The message starts with the key inside the
/// queue table.
fn validate_model(model: &QueueModel) -> Result<(), String> {
    model.validate().map_err(|e| match e {
        matchmaker_optimizer::PoolError::Model(message) => message,
        other => other.to_string(),
    })
}

/// Where the config comes from: `--config`, else `MATCHMAKER_CONFIG`, else
/// `config/matchmaker.toml` if it exists, else the embedded default (None).
pub fn resolve_path(flag: Option<PathBuf>) -> Option<PathBuf> {
    flag.or_else(|| std::env::var_os(CONFIG_ENV).map(PathBuf::from))
        .or_else(|| {
            let local = PathBuf::from("config/matchmaker.toml");
            local.exists().then_some(local)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_config_reads_back_from_its_toml() {
        let config = Config::embedded_default();
        for (name, queue) in &config.queues {
            let mut queue = queue.clone();
            queue.round.restarts = Some(4);
            queue.model.equal_teams.p = matchmaker_optimizer::model::Exponent::INFINITE;
            let text = queue.to_toml(name);
            let back = Config::from_toml_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(back.default_queue, *name);
            assert_eq!(back.queues[name], queue, "{text}");
            assert_eq!(back.queues[name].hash(), queue.hash());
        }
    }
}
