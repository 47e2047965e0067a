//! The commit of a round: one transaction, fenced by the lease term.
//!
//! Round row, matches, match players, queued -> matched for entries that are STILL queued,
//! the matched players' entries in other queues -> withdrawn, rejected rows, the queue
//! state for the countdown, a NOTIFY per match on its players' logins' channels (see
//! `notify`), and (by trigger) the countdown's and the round's NOTIFY. A player who cancelled, expired,
//! was matched in another queue or is locked by a client call while the solver ran wins:
//! the whole match is dropped and its other players stay queued, untouched, keeping their
//! original `enqueued_at`. Left-over players stay queued; the entries the commit holds
//! get the round's left-over outcome and reason (`queue_entries.left_over`, read by
//! clients through `player_status`).
//!
//! No statement waits for a row a client holds (SKIP LOCKED), and two queues' commits
//! never both match one player: each locks every queued entry of the players it matches,
//! in every queue, and drops a player whose entries it cannot all lock.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

use super::DbError;
use super::notify::{MatchEvent, notify_matches};
use super::queue_state::write_queue_state;
use super::round_record::{BackfillFill, RoundRecord};
use super::round_snapshot::{ReplayRecord, StoredLeftOver, write_round_snapshot};
use matchmaker_optimizer::{LeftOverKind, MatchOutcome, Rejection, RoundOutcome};

/// Why a round ran; `rounds.trigger`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundTrigger {
    /// The schedule's tick (interval or cron).
    Schedule,
    /// The pool reached the target size: early start.
    PoolSize,
    /// The longest-waiting player reached the queue's max wait.
    MaxWait,
    /// An operator asked for it.
    Manual,
    /// A backfill request arrived: a round that only fills backfill requests, the
    /// countdown of the scheduled rounds untouched.
    Backfill,
}

impl RoundTrigger {
    pub fn as_str(self) -> &'static str {
        match self {
            RoundTrigger::Schedule => "schedule",
            RoundTrigger::PoolSize => "pool_size",
            RoundTrigger::MaxWait => "max_wait",
            RoundTrigger::Manual => "manual",
            RoundTrigger::Backfill => "backfill",
        }
    }
}

impl std::fmt::Display for RoundTrigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the commit wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitReport {
    pub round_id: i64,
    pub match_count: usize,
    pub matched: usize,
    pub left_over: usize,
    pub rejected: usize,
    /// Players whose match was dropped because a match-mate left during the solve
    /// (cancelled, expired, matched in another queue, or locked by a client call).
    pub dropped_by_cancel: usize,
    /// Entries of the matched players in other queues, withdrawn by this commit.
    pub withdrawn: usize,
    pub score: Option<f64>,
    pub commit_ms: f64,
    /// The score of each committed match (for the metrics).
    pub match_scores: Vec<f64>,
    /// Each matched player's wait, enqueue to commit, in seconds (for the metrics).
    pub wait_seconds: Vec<f64>,
    /// Per-factor means over the committed matches (`rounds.factor_averages`).
    pub factor_averages: BTreeMap<String, f64>,
    /// Backfill requests filled by this round (their matches count in `match_count`).
    pub backfilled: usize,
    /// The left-over players by outcome (`no_valid_match`, `filtered`, `avoided`,
    /// `floor`...), as `queue_entries.left_over` holds them; rejected players are not
    /// left over.
    pub left_over_by_kind: BTreeMap<&'static str, usize>,
    /// Matches formed but not placed for want of a ready server (the round's placement
    /// and the commit's).
    pub no_server_matches: usize,
    /// Seconds each server this commit allocated had been free (`ready_since` to the
    /// commit).
    pub server_idle_seconds: Vec<f64>,
}

/// Pools up to this size commit with PostgreSQL's generic plans. Each statement of the
/// commit is planned again at every execution while PostgreSQL keeps custom plans (a
/// connection runs a round's statements too rarely to switch by itself): about 0.2-0.3 ms
/// a statement, 15% of a 300-player commit (`bench-db --sizes 300`: 21.5 against 25.2 ms
/// a round). On 10,000 players the custom plans' joins over the round's arrays win (the
/// commit about 4% slower with generic plans), so large pools keep them. Measured at those
/// two sizes only; the bound between them is a round number, not a measured crossover.
const GENERIC_PLANS_UP_TO: usize = 1000;

/// Write the round. Fails with [`DbError::LeaseLost`] (writing nothing) if `lease` is no
/// longer the current, unexpired lease of the queue at `committed_at`.
///
/// One transaction, its steps in order; each step below holds its statement.
pub async fn commit_round(db: &PgPool, r: &RoundRecord<'_>) -> Result<CommitReport, DbError> {
    let started = Instant::now();
    let queue = r.snapshot.queue.as_str();
    let mut tx = db.begin().await?;

    check_lease(&mut tx, r).await?;
    let open_requests = lock_open_requests(&mut tx, r).await?;
    let all_matches = candidate_matches(r, &open_requests);
    let pool = lock_pool(&mut tx, r).await?;
    let others = lock_other_queues(&mut tx, r, &all_matches, &pool).await?;
    let free = |player: &str| !others.busy.contains(player) && pool.holds(player);
    let (kept, dropped, mut dropped_by_cancel) = keep_free_matches(&all_matches, &free);
    let (kept, no_server, servers) = hold_servers(&mut tx, r, kept).await?;
    let rejected = rejections(r, &pool);
    let pool_size = r.snapshot.entries.len();

    let (round_id, match_ids) = insert_round(&mut tx, r, kept.len()).await?;
    let mut rejected: Vec<Rejection> = rejected.into_iter().cloned().collect();
    let written: Vec<(&MatchOutcome, i64)> = kept.iter().copied().zip(match_ids).collect();
    let (written, failed) = write_matches_isolating(
        &mut tx,
        round_id,
        r,
        written,
        &pool.entry_ids,
        &mut rejected,
        &mut dropped_by_cancel,
    )
    .await?;
    let kept: Vec<&MatchOutcome> = written.iter().map(|(m, _)| *m).collect();
    let match_ids: Vec<i64> = written.iter().map(|(_, id)| *id).collect();
    let allocations: Vec<(i64, &super::servers::ReadyServer)> = written
        .iter()
        .filter_map(|(m, id)| servers.get(&address(m)).map(|s| (*id, s)))
        .collect();
    super::servers::allocate(&mut tx, &allocations).await?;
    let fills = close_fills(&mut tx, r, round_id, &written).await?;
    record_unfilled(&mut tx, r, &open_requests, &fills.requests).await?;
    // Each standing match, on its players' logins' channels: sent at COMMIT, or never.
    let new_event = match r.ready_timeout {
        Some(_) => MatchEvent::ReadyCheck,
        None => MatchEvent::Match,
    };
    notify_matches(&mut tx, &fills.new_ids, new_event).await?;
    notify_matches(&mut tx, &fills.match_ids, MatchEvent::Backfill).await?;
    let matched: usize = kept.iter().map(|m| m.teams.iter().flatten().count()).sum();
    let left_over = pool_size - matched - rejected.len();
    // A fill is not in the search's round score: with fills, the plain mean of what stands.
    let (score, factor_averages) = summarize(
        r.outcome,
        &kept,
        dropped_by_cancel > 0 || !fills.match_ids.is_empty(),
    );
    let withdrawn = withdraw_other_entries(&mut tx, r, &kept, &match_ids, &others.held).await?;
    reject_entries(&mut tx, r, round_id, &rejected, &pool.entry_ids).await?;
    let mut left_over_by_kind = BTreeMap::new();
    if let Some(replay) = r.replay {
        let left_over =
            left_over_record(r, replay, &dropped, &failed, &no_server, &free, &rejected);
        for l in left_over.values() {
            if l.outcome != LeftOverKind::Rejected {
                *left_over_by_kind.entry(l.outcome.as_str()).or_default() += 1;
            }
        }
        let dropped_teams: Vec<&Vec<Vec<String>>> = dropped
            .iter()
            .chain(&failed)
            .chain(&no_server)
            .map(|m| &m.teams)
            .collect();
        write_round_snapshot(&mut tx, round_id, queue, replay, &left_over, &dropped_teams).await?;
        mark_left_over(&mut tx, r, round_id, &left_over, &pool).await?;
    }
    if !r.keep_countdown {
        write_queue_state(
            &mut *tx,
            r.next_state,
            Some((round_id, r.committed_at)),
            r.committed_at,
        )
        .await?;
    }
    let totals = RoundTotals {
        commit_ms: started.elapsed().as_secs_f64() * 1000.0,
        match_count: kept.len(),
        matched,
        left_over,
        rejected: rejected.len(),
        dropped_by_cancel,
        no_server_matches: r.unplaced_matches + no_server.len(),
        score,
        factor_averages: &factor_averages,
    };
    finish_round_row(&mut tx, round_id, &totals).await?;
    tx.commit().await?;

    Ok(CommitReport {
        round_id,
        match_count: kept.len(),
        matched,
        left_over,
        rejected: rejected.len(),
        dropped_by_cancel,
        withdrawn,
        score,
        commit_ms: started.elapsed().as_secs_f64() * 1000.0,
        match_scores: kept.iter().map(|m| m.score).collect(),
        wait_seconds: wait_seconds(r, &kept),
        factor_averages,
        backfilled: fills.match_ids.len(),
        left_over_by_kind,
        no_server_matches: r.unplaced_matches + no_server.len(),
        server_idle_seconds: allocations
            .iter()
            .map(|(_, s)| {
                ((r.committed_at - s.ready_since).num_milliseconds() as f64 / 1e3).max(0.0)
            })
            .collect(),
    })
}

/// The fence: a paused or deposed leader must not commit, so the lease term is checked
/// and held inside the round's transaction.
///
/// FOR UPDATE: a standby's takeover (which bumps the term) waits until this transaction
/// ends, so the lease cannot change hands between this check and COMMIT. The database's
/// clock decides expiry (see `lease`). The same statement picks this transaction's plan
/// cache mode (see `GENERIC_PLANS_UP_TO`).
async fn check_lease(tx: &mut PgConnection, r: &RoundRecord<'_>) -> Result<(), DbError> {
    let queue = r.snapshot.queue.as_str();
    let plan_cache_mode = if r.snapshot.entries.len() <= GENERIC_PLANS_UP_TO {
        "force_generic_plan"
    } else {
        "auto"
    };
    let held: Option<(i64, String)> = sqlx::query_as(include_str!("sql/commit_check_lease.sql"))
        .bind(queue)
        .bind(&r.lease.holder)
        .bind(r.lease.term)
        .bind(r.lease_now)
        .bind(plan_cache_mode)
        .fetch_optional(&mut *tx)
        .await?;
    if held.is_none() {
        return Err(DbError::LeaseLost {
            queue: queue.to_string(),
            term: r.lease.term,
        });
    }
    Ok(())
}

/// The backfill requests this round fills, if still open: a request cancelled or expired
/// meanwhile (or locked by its client's cancel right now) drops its fill, whose players
/// stay queued.
async fn lock_open_requests(
    tx: &mut PgConnection,
    r: &RoundRecord<'_>,
) -> Result<HashSet<i64>, DbError> {
    let fill_requests: Vec<i64> = r.backfill.fills.iter().map(|f| f.request_id).collect();
    if fill_requests.is_empty() {
        return Ok(HashSet::new());
    }
    Ok(
        sqlx::query_scalar(include_str!("sql/commit_lock_open_requests.sql"))
            .bind(&fill_requests)
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .collect(),
    )
}

/// The matches the round proposes: fills first (their sessions are running, and only the
/// open requests' fills), then the new matches.
fn candidate_matches<'a>(
    r: &'a RoundRecord<'_>,
    open_requests: &HashSet<i64>,
) -> Vec<&'a MatchOutcome> {
    r.backfill
        .fills
        .iter()
        .filter(|f| open_requests.contains(&f.request_id))
        .map(|f| &f.outcome)
        .chain(&r.outcome.matches)
        .collect()
}

/// By address: a fill is told apart from a new match by the very value its reference
/// points at (the fills' outcomes are the values `kept` and `written` point at).
fn address(m: &MatchOutcome) -> usize {
    m as *const MatchOutcome as usize
}

/// The pool's rows this commit holds.
struct Pool<'a> {
    entry_ids: HashMap<&'a str, i64>,
    /// Still queued, live, locked by this commit, without a match.
    available: HashSet<i64>,
    /// Queued rows that already have a match: held, and rejected with the reason.
    isolated_ids: HashSet<i64>,
    isolated: Vec<Rejection>,
}

impl Pool<'_> {
    /// The player's entry is held by this commit and can be matched.
    fn holds(&self, player: &str) -> bool {
        self.entry_ids
            .get(player)
            .is_some_and(|id| self.available.contains(id))
    }

    /// The player's entry is held by this commit (matchable or to be rejected): its row is
    /// ours to mark.
    fn queued(&self, player: &str) -> bool {
        self.entry_ids
            .get(player)
            .is_some_and(|id| self.available.contains(id) || self.isolated_ids.contains(id))
    }
}

/// Lock the pool's rows that are still queued and live, so no client changes them under
/// the commit.
///
/// SKIP LOCKED: a row locked now is in a client's call (a cancel in flight) or in another
/// queue's commit; it is not ours this round, and the commit never waits for a client.
/// In the same statement: a queued row that already has a match cannot be matched again;
/// a row in that state was written around the daemon. It is rejected with the reason, not
/// retried forever.
async fn lock_pool<'a>(tx: &mut PgConnection, r: &'a RoundRecord<'_>) -> Result<Pool<'a>, DbError> {
    let entry_ids = r.snapshot.entry_ids();
    let all_ids: Vec<i64> = entry_ids.values().copied().collect();
    let locked: Vec<(i64, Option<i64>)> = sqlx::query_as(include_str!("sql/commit_lock_pool.sql"))
        .bind(&all_ids)
        .fetch_all(&mut *tx)
        .await?;
    let mut available: HashSet<i64> = locked.iter().map(|(entry, _)| *entry).collect();
    let inconsistent: Vec<(i64, i64)> = locked
        .iter()
        .filter_map(|(entry, m)| m.map(|m| (*entry, m)))
        .collect();
    let mut isolated: Vec<Rejection> = Vec::new();
    for (entry, match_id) in &inconsistent {
        available.remove(entry);
        if let Some((player, _)) = entry_ids.iter().find(|(_, id)| *id == entry) {
            isolated.push(Rejection {
                id: player.to_string(),
                reason: format!("entry {entry} is already in match {match_id}"),
            });
        }
    }
    // Those rows are ours to mark, so they count as available for the rejection below.
    let isolated_ids: HashSet<i64> = inconsistent.iter().map(|(e, _)| *e).collect();
    Ok(Pool {
        entry_ids,
        available,
        isolated_ids,
        isolated,
    })
}

/// The candidate players' queued entries in other queues.
struct OtherQueues {
    /// Rows this commit now holds: (entry id, player).
    held: Vec<(i64, String)>,
    /// Players with a row this commit could not lock: not ours this round.
    busy: HashSet<String>,
}

/// A candidate player's queued entry in another queue.
#[derive(sqlx::FromRow)]
struct ElsewhereRow {
    entry_id: i64,
    /// The player's entry in the pool.
    pooled: i64,
    /// Whether this commit now holds the row.
    held: bool,
}

/// One player, one match across queues: lock the candidate players' queued entries in
/// other queues, since a player is ours only if we hold every one of those rows too. A
/// player is a login's player id: another login's entries of the same id are another
/// player's, neither locked nor withdrawn here.
///
/// A row we cannot lock may be in another queue's commit right now. One statement: every
/// such row, and whether we now hold it. A row that left 'queued' since the statement's
/// snapshot (another queue's commit matched the player, or a cancel) is not held either,
/// so its player is busy: the conservative side.
async fn lock_other_queues(
    tx: &mut PgConnection,
    r: &RoundRecord<'_>,
    all_matches: &[&MatchOutcome],
    pool: &Pool<'_>,
) -> Result<OtherQueues, DbError> {
    let candidates: Vec<i64> = all_matches
        .iter()
        .flat_map(|m| m.teams.iter().flatten())
        .filter(|p| pool.holds(p))
        .map(|p| pool.entry_ids[p.as_str()])
        .collect();
    let player_of: HashMap<i64, &str> = pool.entry_ids.iter().map(|(p, id)| (*id, *p)).collect();
    let elsewhere: Vec<ElsewhereRow> = if candidates.is_empty() {
        Vec::new()
    } else {
        sqlx::query_as(include_str!("sql/commit_lock_other_queues.sql"))
            .bind(&candidates)
            .bind(r.snapshot.queue.as_str())
            .fetch_all(&mut *tx)
            .await?
    };
    // By pool id, as the matches name their players.
    let elsewhere: Vec<(i64, String, bool)> = elsewhere
        .into_iter()
        .map(|e| (e.entry_id, player_of[&e.pooled].to_string(), e.held))
        .collect();
    let held: Vec<(i64, String)> = elsewhere
        .iter()
        .filter(|(_, _, held)| *held)
        .map(|(id, player, _)| (*id, player.clone()))
        .collect();
    let busy: HashSet<String> = elsewhere
        .into_iter()
        .filter(|(_, _, held)| !held)
        .map(|(_, player, _)| player)
        .collect();
    Ok(OtherQueues { held, busy })
}

/// Keep a match only if every one of its players is still ours: a player who left during
/// the solve drops the whole match. Returns (kept, dropped, players of dropped matches
/// still queued).
fn keep_free_matches<'a>(
    all_matches: &[&'a MatchOutcome],
    free: &dyn Fn(&str) -> bool,
) -> (Vec<&'a MatchOutcome>, Vec<&'a MatchOutcome>, usize) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let mut dropped_by_cancel = 0;
    for &m in all_matches {
        let players = m.teams.iter().flatten();
        if players.clone().all(|p| free(p)) {
            kept.push(m);
        } else {
            dropped_by_cancel += players.filter(|p| free(p)).count();
            dropped.push(m);
        }
    }
    (kept, dropped, dropped_by_cancel)
}

/// The kept matches that can be placed, when the queue requires servers: a fill stays on
/// its session's server; each new match gets one ready server of its region, locked
/// until COMMIT. A new match left without one (its server withdrawn, or taken by a call
/// in flight, since the snapshot) is dropped, its players staying queued. Returns (kept,
/// dropped for want of a server, each kept new match's server by `address`).
async fn hold_servers<'a>(
    tx: &mut PgConnection,
    r: &RoundRecord<'_>,
    kept: Vec<&'a MatchOutcome>,
) -> Result<
    (
        Vec<&'a MatchOutcome>,
        Vec<&'a MatchOutcome>,
        HashMap<usize, super::servers::ReadyServer>,
    ),
    DbError,
> {
    let Some(ttl) = r.servers_ttl else {
        return Ok((kept, Vec::new(), HashMap::new()));
    };
    let fills: HashSet<usize> = r
        .backfill
        .fills
        .iter()
        .map(|f| address(&f.outcome))
        .collect();
    let is_new = |m: &MatchOutcome| !fills.contains(&address(m));
    let mut needs: BTreeMap<&str, usize> = BTreeMap::new();
    for m in kept.iter().filter(|m| is_new(m)) {
        *needs.entry(m.region.as_deref().unwrap_or("")).or_default() += 1;
    }
    let mut ready = super::servers::lock_ready(tx, &needs, ttl).await?;
    for servers in ready.values_mut() {
        servers.reverse(); // popped from the back: the most recently heard from first
    }
    let (mut placed, mut without, mut servers) = (Vec::new(), Vec::new(), HashMap::new());
    for m in kept {
        if !is_new(m) {
            placed.push(m);
            continue;
        }
        let region = m.region.as_deref().unwrap_or("");
        match ready.get_mut(region).and_then(Vec::pop) {
            Some(server) => {
                servers.insert(address(m), server);
                placed.push(m);
            }
            None => without.push(m),
        }
    }
    Ok((placed, without, servers))
}

/// The rejections this commit can write: the round's and the rows already in a match,
/// once per player, only for rows the commit holds.
fn rejections<'a>(r: &'a RoundRecord<'_>, pool: &'a Pool<'_>) -> Vec<&'a Rejection> {
    let rejected: Vec<&Rejection> = r
        .rejected
        .iter()
        .chain(&pool.isolated)
        .filter(|x| pool.queued(&x.id))
        .collect();
    let mut seen = HashSet::new();
    rejected
        .into_iter()
        .filter(|x| seen.insert(x.id.as_str()))
        .collect()
}

/// The round row, so every later row can name it; the kept matches' ids come with it
/// (one round trip for both). The counts and the score are known once the matches are
/// written: set by [`finish_round_row`].
async fn insert_round(
    tx: &mut PgConnection,
    r: &RoundRecord<'_>,
    match_count: usize,
) -> Result<(i64, Vec<i64>), DbError> {
    let pool_size = r.snapshot.entries.len();
    Ok(sqlx::query_as(include_str!("sql/commit_insert_round.sql"))
        .bind(r.snapshot.queue.as_str())
        .bind(r.trigger.as_str())
        .bind(&r.lease.holder)
        .bind(r.lease.term)
        .bind(r.started_at)
        .bind(r.snapshot_at)
        .bind(r.committed_at)
        .bind(pool_size as i32)
        .bind(0)
        .bind(0)
        .bind(0)
        .bind(0)
        .bind(0)
        .bind(None::<f64>)
        .bind(sqlx::types::Json(serde_json::json!({})))
        .bind(sqlx::types::Json(&r.outcome.stats))
        .bind(r.snapshot_ms)
        .bind(r.solve_ms)
        // commit_ms is not known before COMMIT; set below, inside the same transaction.
        .bind(0.0_f64)
        .bind(r.seed.to_string())
        .bind(r.config_hash)
        .bind(r.config)
        .bind(match_count as i64)
        .fetch_one(&mut *tx)
        .await?)
}

/// Write the kept matches so one bad row does not fail the round: all matches in one go;
/// if a row makes that fail, match by match, and in a failing match, player by player, so
/// the row at fault is rejected with the database's reason and the rest of the round
/// commits without it. Returns the matches written and the matches that failed.
async fn write_matches_isolating<'a>(
    tx: &mut PgConnection,
    round_id: i64,
    r: &RoundRecord<'_>,
    written: Vec<(&'a MatchOutcome, i64)>,
    entry_ids: &HashMap<&str, i64>,
    rejected: &mut Vec<Rejection>,
    dropped_by_cancel: &mut usize,
) -> Result<(Vec<(&'a MatchOutcome, i64)>, Vec<&'a MatchOutcome>), DbError> {
    let queue = r.snapshot.queue.as_str();
    // Matches whose rows failed the commit, their players left queued.
    let mut failed: Vec<&MatchOutcome> = Vec::new();
    let all_at_once = {
        let mut sp = sqlx::Connection::begin(&mut *tx).await?;
        match write_matches(&mut sp, round_id, r, &written, entry_ids).await {
            Ok(()) => sp.commit().await.map(|_| None)?,
            Err(e) if is_row_error(&e) => {
                sp.rollback().await?;
                Some(e)
            }
            Err(e) => return Err(e.into()),
        }
    };
    let Some(error) = all_at_once else {
        return Ok((written, failed));
    };
    tracing::warn!(queue, error = %crate::db::describe_sql_error(&error), "a row failed the round's commit; isolating it");
    let mut ok = Vec::new();
    for (m, id) in written {
        let one = [(m, id)];
        let mut sp = sqlx::Connection::begin(&mut *tx).await?;
        let whole = match write_matches(&mut sp, round_id, r, &one, entry_ids).await {
            Ok(()) => {
                sp.commit().await?;
                ok.push((m, id));
                continue;
            }
            Err(e) if is_row_error(&e) => {
                sp.rollback().await?;
                e
            }
            Err(e) => return Err(e.into()),
        };
        // Each player alone in this match: whose own row fails? The others stay
        // queued for the next round, like players of a match dropped by a cancel.
        let before = rejected.len();
        for p in m.teams.iter().flatten() {
            let alone = MatchOutcome {
                teams: vec![vec![p.clone()]],
                ..m.clone()
            };
            let mut sp = sqlx::Connection::begin(&mut *tx).await?;
            let probe = write_matches(&mut sp, round_id, r, &[(&alone, id)], entry_ids).await;
            sp.rollback().await?;
            match probe {
                Ok(()) => {}
                Err(e) if is_row_error(&e) => rejected.push(Rejection {
                    id: p.clone(),
                    reason: format!(
                        "the round could not record this entry: {}",
                        crate::db::describe_sql_error(&e)
                    ),
                }),
                Err(e) => return Err(e.into()),
            }
        }
        if rejected.len() == before {
            // Every player passes alone: the match as a whole is refused (a rule over
            // its players together). Left queued, they would be proposed the same
            // match at every round; rejected, they are told why.
            let why = crate::db::describe_sql_error(&whole);
            for p in m.teams.iter().flatten() {
                rejected.push(Rejection {
                    id: p.clone(),
                    reason: format!("the round could not record this entry's match: {why}"),
                });
            }
        }
        *dropped_by_cancel += m.teams.iter().flatten().count() - (rejected.len() - before);
        failed.push(m);
    }
    Ok((ok, failed))
}

/// The written matches split into fills and new matches.
struct Fills {
    /// The fills' match ids.
    match_ids: Vec<i64>,
    /// The filled requests, in the order of `match_ids`.
    requests: Vec<i64>,
    /// The new matches' ids.
    new_ids: Vec<i64>,
}

/// The fills among the written matches: linked to their sessions, their requests closed,
/// so the game server reads the fill as its request's answer.
async fn close_fills(
    tx: &mut PgConnection,
    r: &RoundRecord<'_>,
    round_id: i64,
    written: &[(&MatchOutcome, i64)],
) -> Result<Fills, DbError> {
    let request_of: HashMap<usize, &BackfillFill> = r
        .backfill
        .fills
        .iter()
        .map(|f| (address(&f.outcome), f))
        .collect();
    let (mut fill_ids, mut new_ids) = (Vec::new(), Vec::new());
    let (mut fill_requests, mut fill_sessions) = (Vec::new(), Vec::new());
    for (m, id) in written {
        match request_of.get(&address(m)) {
            Some(f) => {
                fill_ids.push(*id);
                fill_requests.push(f.request_id);
                fill_sessions.push(f.session_id.as_str());
            }
            None => new_ids.push(*id),
        }
    }
    if !fill_ids.is_empty() {
        sqlx::query(include_str!("sql/commit_close_fills.sql"))
            .bind(&fill_ids)
            .bind(&fill_requests)
            .bind(&fill_sessions)
            .bind(round_id)
            .bind(r.committed_at)
            .execute(&mut *tx)
            .await?;
        if r.servers_ttl.is_some() {
            super::servers::fills_stay_on_their_server(tx, &fill_ids).await?;
        }
    }
    Ok(Fills {
        match_ids: fill_ids,
        requests: fill_requests,
        new_ids,
    })
}

/// Requests tried and not filled: why, for `backfill_status` (and their expiry reason).
async fn record_unfilled(
    tx: &mut PgConnection,
    r: &RoundRecord<'_>,
    open_requests: &HashSet<i64>,
    filled: &[i64],
) -> Result<(), DbError> {
    let mut tried: Vec<(i64, String)> = r.backfill.unfilled.clone();
    for f in r.backfill.fills.iter() {
        if !filled.contains(&f.request_id) && open_requests.contains(&f.request_id) {
            tried.push((
                f.request_id,
                "its fill was dropped: a chosen player left the queue or was busy during the round"
                    .into(),
            ));
        }
    }
    if tried.is_empty() {
        return Ok(());
    }
    let (ids, reasons): (Vec<i64>, Vec<String>) = tried.into_iter().unzip();
    sqlx::query(include_str!("sql/commit_record_unfilled.sql"))
        .bind(&ids)
        .bind(&reasons)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// The matched players' entries in other queues: withdrawn, naming the match that won,
/// so no player is matched twice. Returns how many.
async fn withdraw_other_entries(
    tx: &mut PgConnection,
    r: &RoundRecord<'_>,
    kept: &[&MatchOutcome],
    match_ids: &[i64],
    held_elsewhere: &[(i64, String)],
) -> Result<usize, DbError> {
    if kept.is_empty() || held_elsewhere.is_empty() {
        return Ok(0);
    }
    let match_of: HashMap<&str, i64> = kept
        .iter()
        .zip(match_ids)
        .flat_map(|(m, id)| m.teams.iter().flatten().map(move |p| (p.as_str(), *id)))
        .collect();
    let (ids, matches): (Vec<i64>, Vec<i64>) = held_elsewhere
        .iter()
        .filter_map(|(entry, player)| match_of.get(player.as_str()).map(|m| (*entry, *m)))
        .unzip();
    Ok(
        sqlx::query(include_str!("sql/commit_withdraw_other_entries.sql"))
            .bind(&ids)
            .bind(&matches)
            .bind(r.snapshot.queue.as_str())
            .bind(r.committed_at)
            .execute(&mut *tx)
            .await?
            .rows_affected() as usize,
    )
}

/// Rows the queue cannot use leave the pool as rejected, with the reason, instead of being
/// proposed again at every round.
async fn reject_entries(
    tx: &mut PgConnection,
    r: &RoundRecord<'_>,
    round_id: i64,
    rejected: &[Rejection],
    entry_ids: &HashMap<&str, i64>,
) -> Result<(), DbError> {
    if rejected.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = rejected.iter().map(|x| entry_ids[x.id.as_str()]).collect();
    let reasons: Vec<&str> = rejected.iter().map(|x| x.reason.as_str()).collect();
    sqlx::query(include_str!("sql/commit_reject_entries.sql"))
        .bind(&ids)
        .bind(&reasons)
        .bind(round_id)
        .bind(r.committed_at)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// The left-over entries this commit holds (locked above: no wait for a client) record
/// why, for clients reading `player_status`; the rest keep what they had. Each records
/// since which round its outcome holds: an entry no match could take (no_host,
/// no_valid_match) for `limits.sit_out_after` rounds is told that it now waits behind the
/// others when the pool is capped (the snapshot's rule).
async fn mark_left_over(
    tx: &mut PgConnection,
    r: &RoundRecord<'_>,
    round_id: i64,
    left_over: &BTreeMap<&str, StoredLeftOver>,
    pool: &Pool<'_>,
) -> Result<(), DbError> {
    let sit_out_after = r
        .config
        .get("limits")
        .and_then(|l| l.get("sit_out_after"))
        .and_then(|v| v.as_u64())
        .unwrap_or(u64::from(super::snapshot::SIT_OUT_AFTER))
        .max(1);
    let (mut ids, mut outcomes, mut reasons) = (Vec::new(), Vec::new(), Vec::new());
    for (player, l) in left_over {
        if let Some(id) = pool.entry_ids.get(player)
            && pool.available.contains(id)
        {
            ids.push(*id);
            outcomes.push(l.outcome.as_str());
            reasons.push(l.reason.as_str());
        }
    }
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query(include_str!("sql/commit_mark_left_over.sql"))
        .bind(&ids)
        .bind(&outcomes)
        .bind(&reasons)
        .bind(round_id)
        .bind(r.snapshot.queue.as_str())
        .bind(sit_out_after as i64)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// What the round row records once the matches are written.
struct RoundTotals<'a> {
    commit_ms: f64,
    match_count: usize,
    matched: usize,
    left_over: usize,
    rejected: usize,
    dropped_by_cancel: usize,
    no_server_matches: usize,
    score: Option<f64>,
    factor_averages: &'a BTreeMap<String, f64>,
}

/// The round row's counts, score and commit time, known only now, written in the same
/// transaction so the round reads whole or not at all.
async fn finish_round_row(
    tx: &mut PgConnection,
    round_id: i64,
    t: &RoundTotals<'_>,
) -> Result<(), DbError> {
    sqlx::query(include_str!("sql/commit_finish_round.sql"))
        .bind(round_id)
        .bind(t.commit_ms)
        .bind(t.match_count as i32)
        .bind(t.matched as i32)
        .bind(t.left_over as i32)
        .bind(t.rejected as i32)
        .bind(t.dropped_by_cancel as i32)
        .bind(t.score)
        .bind(sqlx::types::Json(t.factor_averages))
        .bind(t.no_server_matches as i32)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Each matched player's wait, enqueue to commit, in seconds, for the metrics.
fn wait_seconds(r: &RoundRecord<'_>, kept: &[&MatchOutcome]) -> Vec<f64> {
    let enqueued_at: HashMap<&str, DateTime<Utc>> = r
        .snapshot
        .entries
        .iter()
        .map(|e| (e.player_id.as_str(), e.enqueued_at))
        .collect();
    kept.iter()
        .flat_map(|m| m.teams.iter().flatten())
        .filter_map(|p| enqueued_at.get(p.as_str()))
        .map(|at| ((r.committed_at - *at).num_milliseconds() as f64 / 1000.0).max(0.0))
        .collect()
}

/// Every pooled player the round did not match, and why: the solver's left-overs as the
/// core explained them, then what the commit learnt (later entries win): players of
/// dropped matches, parties that sat out, rejections.
fn left_over_record<'a>(
    r: &'a RoundRecord<'_>,
    replay: &'a ReplayRecord,
    dropped: &[&'a MatchOutcome],
    failed: &[&'a MatchOutcome],
    no_server: &[&'a MatchOutcome],
    free: &dyn Fn(&str) -> bool,
    rejected: &'a [Rejection],
) -> BTreeMap<&'a str, StoredLeftOver> {
    let mut out: BTreeMap<&str, StoredLeftOver> = BTreeMap::new();
    let mut put = |player: &'a str, outcome: LeftOverKind, reason: String| {
        out.insert(player, StoredLeftOver { outcome, reason });
    };
    for l in &replay.left_over {
        put(&l.player, l.kind, l.reason.clone());
    }
    for m in dropped {
        let players: Vec<&String> = m.teams.iter().flatten().collect();
        let gone: Vec<&str> = players
            .iter()
            .filter(|p| !free(p))
            .map(|p| p.as_str())
            .collect();
        for p in players {
            if free(p) {
                put(
                    p,
                    LeftOverKind::MatchDropped,
                    format!(
                        "their match was dropped: {} left the queue or was busy while the solver ran; still queued",
                        gone.join(", ")
                    ),
                );
            } else {
                put(
                    p,
                    LeftOverKind::LeftDuringSolve,
                    "their entry left this queue (cancelled, expired, matched in another queue) or was held by a client call while the solver ran; their match was dropped".to_string(),
                );
            }
        }
    }
    for m in failed {
        for p in m.teams.iter().flatten() {
            put(
                p,
                LeftOverKind::MatchDropped,
                "their match was dropped: a row of it failed the commit (that player is rejected); still queued".to_string(),
            );
        }
    }
    for m in no_server {
        let region = m.region.as_deref().unwrap_or("");
        for p in m.teams.iter().flatten() {
            put(
                p,
                LeftOverKind::NoServer,
                format!(
                    "their match was dropped: the ready server it was to have in region \
                     {region} was withdrawn or busy at the commit; still queued"
                ),
            );
        }
    }
    for (p, why) in &r.snapshot.sat_out_players {
        put(p, LeftOverKind::PartySatOut, why.clone());
    }
    for x in rejected {
        put(&x.id, LeftOverKind::Rejected, x.reason.clone());
    }
    out
}

/// Round score and per-factor means of the kept matches. The core's round score stands
/// unless matches were dropped; then the plain mean of the kept matches replaces it.
fn summarize(
    outcome: &RoundOutcome,
    kept: &[&matchmaker_optimizer::MatchOutcome],
    dropped: bool,
) -> (Option<f64>, BTreeMap<String, f64>) {
    let mut sums: HashMap<&str, (f64, usize)> = HashMap::new();
    for m in kept {
        for (factor, value) in &m.factors {
            let entry = sums.entry(factor.as_str()).or_default();
            entry.0 += value;
            entry.1 += 1;
        }
    }
    let averages = sums
        .into_iter()
        .map(|(f, (sum, n))| (f.to_string(), sum / n as f64))
        .collect();
    let score = if kept.is_empty() {
        None
    } else if dropped {
        Some(kept.iter().map(|m| m.score).sum::<f64>() / kept.len() as f64)
    } else {
        Some(outcome.score)
    };
    (score, averages)
}

/// A failure caused by the data of a row (a constraint, a value, a trigger's refusal), as
/// opposed to the connection, a timeout or a conflict, which fail the round to be retried.
fn is_row_error(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            code.starts_with("22") || code.starts_with("23") || code.starts_with("P0")
        }),
        _ => false,
    }
}

/// Insert `matches` (with their ids), their players, and move the players' entries to
/// matched (only rows still queued).
async fn write_matches(
    conn: &mut sqlx::PgConnection,
    round_id: i64,
    r: &RoundRecord<'_>,
    matches: &[(&MatchOutcome, i64)],
    entry_ids: &HashMap<&str, i64>,
) -> Result<(), sqlx::Error> {
    if matches.is_empty() {
        return Ok(());
    }
    let columns = MatchColumns::of(r, matches);
    let players = PlayerColumns::of(r, matches, entry_ids);
    insert_matches(conn, round_id, r, &columns, &players).await
}

/// The columns of the matches a commit inserts, one array a column, in the order of the
/// matches.
struct MatchColumns<'a> {
    ids: Vec<i64>,
    scores: Vec<f64>,
    factors: Vec<serde_json::Value>,
    regions: Vec<Option<&'a str>>,
    hosts: Vec<serde_json::Value>,
    host: Vec<Option<&'a str>>,
    backup: Vec<Option<&'a str>>,
    relay: Vec<bool>,
    maps: Vec<Option<&'a str>>,
    vetoed_by: Vec<i32>,
    /// Whether each match waits for its ready check: with a ready check on, every match
    /// but a fill (its session runs).
    pending: Vec<bool>,
    /// The ids of the matches that wait for their ready check.
    pending_ids: Vec<i64>,
}

impl<'a> MatchColumns<'a> {
    fn of(r: &RoundRecord<'_>, matches: &[(&'a MatchOutcome, i64)]) -> Self {
        let pending: Vec<bool> = matches
            .iter()
            .map(|(m, _)| {
                r.ready_timeout.is_some()
                    && !r
                        .backfill
                        .fills
                        .iter()
                        .any(|f| std::ptr::eq(&f.outcome, *m))
            })
            .collect();
        let pending_ids = matches
            .iter()
            .zip(&pending)
            .filter(|(_, p)| **p)
            .map(|((_, id), _)| *id)
            .collect();
        MatchColumns {
            ids: matches.iter().map(|(_, id)| *id).collect(),
            scores: matches.iter().map(|(m, _)| m.score).collect(),
            factors: matches
                .iter()
                .map(|(m, _)| serde_json::to_value(&m.factors).expect("factors serialize"))
                .collect(),
            regions: matches.iter().map(|(m, _)| m.region.as_deref()).collect(),
            hosts: matches
                .iter()
                .map(|(m, _)| {
                    serde_json::to_value(m.hosts.clone().unwrap_or_default()).expect("hosts")
                })
                .collect(),
            host: matches.iter().map(|(m, _)| m.host.as_deref()).collect(),
            backup: matches
                .iter()
                .map(|(m, _)| m.backup_host.as_deref())
                .collect(),
            relay: matches.iter().map(|(m, _)| m.relay).collect(),
            maps: matches.iter().map(|(m, _)| m.map.as_deref()).collect(),
            vetoed_by: matches
                .iter()
                .map(|(m, _)| m.map_vetoed_by.min(i32::MAX as u32) as i32)
                .collect(),
            pending,
            pending_ids,
        }
    }
}

/// The columns of the placed players a commit writes, one array a column, a row a
/// player, match by match and team by team.
#[derive(Default)]
struct PlayerColumns {
    match_ids: Vec<i64>,
    entry_ids: Vec<i64>,
    teams: Vec<i32>,
    roles: Vec<Option<String>>,
    win: Vec<Option<f64>>,
    skill: Vec<Option<f64>>,
}

impl PlayerColumns {
    fn of(
        r: &RoundRecord<'_>,
        matches: &[(&MatchOutcome, i64)],
        entry_ids: &HashMap<&str, i64>,
    ) -> Self {
        let skills: HashMap<&str, (f64, f64)> = r
            .snapshot
            .entries
            .iter()
            .map(|e| {
                let rating = r.win_model.rating(e.skill, e.skill_sigma);
                (e.player_id.as_str(), rating)
            })
            .collect();
        let mut out = PlayerColumns::default();
        for (m, match_id) in matches {
            let win = win_probabilities(r, m, &skills);
            for (team, players) in m.teams.iter().enumerate() {
                for p in players {
                    out.match_ids.push(*match_id);
                    out.entry_ids.push(entry_ids[p.as_str()]);
                    out.teams.push(team as i32);
                    out.roles
                        .push(m.roles.as_ref().and_then(|roles| roles.get(p).cloned()));
                    out.win.push(win.as_ref().map(|w| w[team]));
                    out.skill.push(skills.get(p.as_str()).map(|s| s.0));
                }
            }
        }
        out
    }
}

/// The one statement of `write_matches`.
async fn insert_matches(
    conn: &mut sqlx::PgConnection,
    round_id: i64,
    r: &RoundRecord<'_>,
    m: &MatchColumns<'_>,
    p: &PlayerColumns,
) -> Result<(), sqlx::Error> {
    let answer_secs = r.ready_timeout.map(|t| t.as_secs_f64()).unwrap_or(0.0);
    // The statement's own comments say how it keeps the links and the history.
    sqlx::query(include_str!("sql/commit_insert_matches.sql"))
        .bind(&p.match_ids)
        .bind(&p.entry_ids)
        .bind(&p.teams)
        .bind(&p.roles)
        .bind(round_id)
        .bind(r.committed_at)
        .bind(&m.ids)
        .bind(r.snapshot.queue.as_str())
        .bind(&m.scores)
        .bind(&m.factors)
        .bind(&m.regions)
        .bind(&m.hosts)
        .bind(&m.host)
        .bind(&m.backup)
        .bind(r.history_matches as i32)
        .bind(&m.pending)
        .bind(answer_secs)
        .bind(&m.pending_ids)
        .bind(&m.relay)
        .bind(&p.win)
        .bind(&p.skill)
        .bind(&m.maps)
        .bind(&m.vetoed_by)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Each team's predicted chance to win `m`, from its players' skills as the round read
/// them; None for a fill (its session's other players are not in the round).
fn win_probabilities(
    r: &RoundRecord<'_>,
    m: &MatchOutcome,
    skills: &HashMap<&str, (f64, f64)>,
) -> Option<Vec<f64>> {
    if r.backfill.fills.iter().any(|f| std::ptr::eq(&f.outcome, m)) {
        return None;
    }
    r.win_model.predict(&m.teams, |p| skills.get(p).copied())
}
