//! A round's replay record (`round_snapshots`): the exact pool its solver
//! saw (LZ4-compressed JSON of the core's `Pool`), its effective config as a config file,
//! its budget and strategy, and why each pooled player who was not matched was left over.
//! Written by the round's commit ([`super::commit_round`]), in its transaction; read back
//! by `matchmaker replay` and `matchmaker explain`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use super::DbError;
use matchmaker_optimizer::{Budget, LeftOver, LeftOverKind, Pool, Strategy};

/// The layout of `round_snapshots.pool` this build writes.
pub const FORMAT: i16 = 1;

/// What the round hands its commit to store.
#[derive(Debug, Clone)]
pub struct ReplayRecord {
    /// The pool's JSON, LZ4-compressed ([`compress_pool`]).
    pub pool_lz4: Vec<u8>,
    pub pool_players: usize,
    pub pool_json_bytes: usize,
    /// The queue's effective config as a config file (`QueueConfig::to_toml`).
    pub config_toml: String,
    pub budget: BudgetRecord,
    pub strategy: Strategy,
    pub threads: Option<usize>,
    /// The solver's left-over players, explained by the core (`matchmaker_optimizer::explain_left_over`).
    pub left_over: Vec<LeftOver>,
    /// Queues that require servers: the ready servers per region the round placed its
    /// matches on.
    pub servers: Option<matchmaker_optimizer::servers::Supply>,
}

/// The solver's budget as stored: a time, or a number of restarts (deterministic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarts: Option<u64>,
    #[serde(default)]
    pub moves_per_restart: Option<u64>,
}

impl BudgetRecord {
    pub fn new(budget: Budget, moves_per_restart: Option<u64>) -> Self {
        match budget {
            Budget::Time(d) => BudgetRecord {
                time_ms: Some(d.as_millis() as u64),
                restarts: None,
                moves_per_restart,
            },
            Budget::Restarts(n) => BudgetRecord {
                time_ms: None,
                restarts: Some(n),
                moves_per_restart,
            },
        }
    }

    pub fn budget(&self) -> Budget {
        match (self.restarts, self.time_ms) {
            (Some(n), _) => Budget::Restarts(n),
            (None, ms) => Budget::Time(std::time::Duration::from_millis(ms.unwrap_or(2_000))),
        }
    }

    /// `3000 ms` or `8 restarts` (and the restart length when fixed).
    pub fn describe(&self) -> String {
        let base = match (self.restarts, self.time_ms) {
            (Some(n), _) => format!("{n} restarts (deterministic)"),
            (None, ms) => format!("{} ms (wall clock)", ms.unwrap_or(2_000)),
        };
        match self.moves_per_restart {
            Some(m) => format!("{base}, {m} moves per restart"),
            None => base,
        }
    }
}

/// The pool as LZ4-compressed JSON, and the JSON's size.
pub fn compress_pool(pool: &Pool) -> (Vec<u8>, usize) {
    let json = serde_json::to_vec(pool).expect("a pool serializes");
    (lz4_flex::compress_prepend_size(&json), json.len())
}

/// The pool back from [`compress_pool`]'s bytes.
pub fn decompress_pool(bytes: &[u8]) -> Result<Pool, String> {
    let json = lz4_flex::decompress_size_prepended(bytes)
        .map_err(|e| format!("the stored pool does not decompress: {e}"))?;
    serde_json::from_slice(&json).map_err(|e| format!("the stored pool is not a pool: {e}"))
}

/// Why one player was not matched, as stored in `round_snapshots.left_over`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredLeftOver {
    pub outcome: LeftOverKind,
    pub reason: String,
}

/// A committed match as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMatch {
    pub match_id: i64,
    pub score: f64,
    pub factors: BTreeMap<String, f64>,
    /// Player ids per team, sorted within a team.
    pub teams: Vec<Vec<String>>,
}

/// A round with its replay record: what `matchmaker replay` compares against.
#[derive(Debug, Clone)]
pub struct StoredRound {
    pub round_id: i64,
    pub queue: String,
    pub trigger: String,
    pub committed_at: DateTime<Utc>,
    pub pool_size: i32,
    pub matched: i32,
    pub left_over_count: i32,
    pub rejected: i32,
    pub dropped_by_cancel: i32,
    pub score: Option<f64>,
    pub factor_averages: BTreeMap<String, f64>,
    pub seed: u64,
    pub config_hash: String,
    pub solve_ms: f64,
    pub pool: Pool,
    pub config_toml: String,
    pub budget: BudgetRecord,
    pub strategy: Strategy,
    pub threads: Option<usize>,
    pub left_over: BTreeMap<String, StoredLeftOver>,
    pub dropped_matches: Vec<Vec<Vec<String>>>,
    pub matches: Vec<StoredMatch>,
    /// Queues that require servers: the ready servers per region the round saw.
    pub servers: Option<matchmaker_optimizer::servers::Supply>,
}

/// The `rounds` row of a stored round (`round_snapshot_round.sql`).
#[derive(sqlx::FromRow)]
struct RoundRow {
    round_id: i64,
    queue: String,
    trigger: String,
    committed_at: DateTime<Utc>,
    pool_size: i32,
    matched: i32,
    left_over: i32,
    rejected: i32,
    dropped_by_cancel: i32,
    score: Option<f64>,
    factor_averages: sqlx::types::Json<BTreeMap<String, f64>>,
    seed: String,
    config_hash: String,
    solve_ms: f64,
}

/// The `round_snapshots` row of a stored round (`round_snapshot_record.sql`).
#[derive(sqlx::FromRow)]
struct SnapshotRow {
    format: i16,
    pool: Vec<u8>,
    config: String,
    budget: sqlx::types::Json<BudgetRecord>,
    strategy: String,
    threads: Option<i32>,
    left_over: sqlx::types::Json<BTreeMap<String, StoredLeftOver>>,
    dropped_matches: sqlx::types::Json<Vec<Vec<Vec<String>>>>,
    servers: Option<sqlx::types::Json<matchmaker_optimizer::servers::Supply>>,
}

/// One player of a stored round's match (`round_snapshot_matches.sql`).
#[derive(sqlx::FromRow)]
struct MatchPlayerRow {
    match_id: i64,
    score: f64,
    factors: sqlx::types::Json<BTreeMap<String, f64>>,
    team: i32,
    player_id: String,
}

/// Read a round and its replay record. `Ok(None)`: no such round; a round without a
/// snapshot (committed without one, or written by an older build) is an error
/// that says so.
pub async fn load_round(db: &PgPool, round_id: i64) -> Result<Option<StoredRound>, DbError> {
    let row: Option<RoundRow> = sqlx::query_as(include_str!("sql/round_snapshot_round.sql"))
        .bind(round_id)
        .fetch_optional(db)
        .await?;
    let Some(r) = row else {
        return Ok(None);
    };
    let snap: Option<SnapshotRow> = sqlx::query_as(include_str!("sql/round_snapshot_record.sql"))
        .bind(round_id)
        .fetch_optional(db)
        .await?;
    let Some(s) = snap else {
        return Err(DbError::Invalid(format!(
            "round {round_id} has no snapshot (committed without one, or by an older build)"
        )));
    };
    if s.format != FORMAT {
        return Err(DbError::Invalid(format!(
            "round {round_id}: snapshot format {} is not known to this build (it reads {FORMAT})",
            s.format
        )));
    }
    let pool =
        decompress_pool(&s.pool).map_err(|e| DbError::Invalid(format!("round {round_id}: {e}")))?;
    let strategy: Strategy = s
        .strategy
        .parse()
        .map_err(|e| DbError::Invalid(format!("round {round_id}: {e}")))?;
    let seed: u64 = r
        .seed
        .parse()
        .map_err(|e| DbError::Invalid(format!("round {round_id}: seed {}: {e}", r.seed)))?;

    let rows: Vec<MatchPlayerRow> = sqlx::query_as(include_str!("sql/round_snapshot_matches.sql"))
        .bind(round_id)
        .fetch_all(db)
        .await?;
    let mut matches: Vec<StoredMatch> = Vec::new();
    for row in rows {
        if matches.last().is_none_or(|m| m.match_id != row.match_id) {
            matches.push(StoredMatch {
                match_id: row.match_id,
                score: row.score,
                factors: row.factors.0,
                teams: Vec::new(),
            });
        }
        let m = matches.last_mut().expect("pushed above");
        let team = row.team.max(0) as usize;
        if m.teams.len() <= team {
            m.teams.resize(team + 1, Vec::new());
        }
        m.teams[team].push(row.player_id);
    }
    Ok(Some(StoredRound {
        round_id: r.round_id,
        queue: r.queue,
        trigger: r.trigger,
        committed_at: r.committed_at,
        pool_size: r.pool_size,
        matched: r.matched,
        left_over_count: r.left_over,
        rejected: r.rejected,
        dropped_by_cancel: r.dropped_by_cancel,
        score: r.score,
        factor_averages: r.factor_averages.0,
        seed,
        config_hash: r.config_hash,
        solve_ms: r.solve_ms,
        pool,
        config_toml: s.config,
        budget: s.budget.0,
        strategy,
        threads: s.threads.map(|t| t.max(1) as usize),
        left_over: s.left_over.0,
        dropped_matches: s.dropped_matches.0,
        matches,
        servers: s.servers.map(|j| j.0),
    }))
}

/// The rounds with a snapshot committed in [from, to), oldest first, of one queue or all.
pub async fn rounds_between(
    db: &PgPool,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    queue: Option<&str>,
) -> Result<Vec<i64>, DbError> {
    Ok(
        sqlx::query_scalar(include_str!("sql/round_snapshot_rounds_between.sql"))
            .bind(from)
            .bind(to)
            .bind(queue)
            .fetch_all(db)
            .await?,
    )
}

/// Write the replay record of round `round_id` (inside the round's commit).
pub(super) async fn write_round_snapshot(
    conn: &mut sqlx::PgConnection,
    round_id: i64,
    queue: &str,
    record: &ReplayRecord,
    left_over: &BTreeMap<&str, StoredLeftOver>,
    dropped_matches: &[&Vec<Vec<String>>],
) -> Result<(), sqlx::Error> {
    sqlx::query(include_str!("sql/round_snapshot_write.sql"))
        .bind(round_id)
        .bind(queue)
        .bind(FORMAT)
        .bind(&record.pool_lz4)
        .bind(record.pool_players as i32)
        .bind(record.pool_json_bytes as i32)
        .bind(&record.config_toml)
        .bind(sqlx::types::Json(&record.budget))
        .bind(record.strategy.name())
        .bind(record.threads.map(|t| t as i32))
        .bind(sqlx::types::Json(left_over))
        .bind(sqlx::types::Json(dropped_matches))
        .bind(record.servers.as_ref().map(sqlx::types::Json))
        .execute(&mut *conn)
        .await?;
    Ok(())
}
