//! The ready check: the queue's leader resolves each pending match once.
//!
//! A round of a queue with `[queues.NAME.ready_check]` commits its matches `pending`
//! (`commit`); players answer with `accept_match` / `decline_match` (or `cancel`, a
//! decline). At each look at the queue its leader resolves the pending matches that are
//! decided, in one transaction fenced by its lease like a round's commit:
//!
//! - every player accepted: the match is `ready` (final) and enters the players'
//!   opponent-variation history (`recent_matches`), which a pending match is not in;
//! - a player declined, or `answer_by` passed: the match is `cancelled` with its reason,
//!   its `match_players` rows deleted (their answers kept in `matches.answers`). Every
//!   player who accepted, with their party, is queued again on their own entry row, so
//!   with their original `enqueued_at` and everything they enqueued with; their entries
//!   in other queues that this match withdrew are queued again too. The others (and the
//!   party mates of a decliner) end `declined`; the decliners themselves get the queue's
//!   `decline_cooldown` (`declined_until`), which `enqueue` enforces.
//!
//! Exactly once: a match leaves `pending` only here, only from `pending`, under the
//! match's row lock and the lease held FOR UPDATE, all in one transaction. A daemon
//! killed halfway, a leader change or a PostgreSQL restart rolls the transaction back,
//! and the next leader resolves the match from the rows as they are.
//!
//! No client holds it up: answers are rows of their own (`ready_answers`), which no
//! client can lock the match or its players' rows through. The resolution reads the
//! committed answers and skips a row an answer in flight holds: no answer yet, and
//! silence at `answer_by`. Who fails pays: each login's record (`ready_records`) counts
//! its players' failures, and the players another login's failure sent back to the queue
//! are marked `bounced_at` for the rounds to place first (`daemon::ready_record`).

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

use super::DbError;
use super::lease::Lease;
use super::notify::{MatchEvent, notify_matches};

/// What the resolution needs from the queue's config.
#[derive(Debug, Clone, Copy)]
pub struct ReadyCheckRules {
    /// `round.history_matches`: the depth of `recent_matches`.
    pub history_matches: usize,
    /// `ready_check.decline_cooldown` (None or zero: none).
    pub decline_cooldown: Option<Duration>,
    /// `ready_check.isolate_half_life`: how fast a login's record forgets.
    pub record_half_life: Duration,
}

/// One cancelled match.
#[derive(Debug, Clone, PartialEq)]
pub struct CancelledMatch {
    pub match_id: i64,
    pub reason: String,
    /// Queued again with their original enqueue time.
    pub requeued: Vec<String>,
    /// Declined, did not answer, or in the party of one who did.
    pub declined: Vec<String>,
    /// Per login: its players of `requeued` and of `declined` (each login is told of its
    /// own players only).
    pub by_login: BTreeMap<String, (Vec<String>, Vec<String>)>,
    /// Per login: the reason as that login reads it, naming only its own players
    /// (`reason`, which names everyone, is for operators).
    pub reason_by_login: BTreeMap<String, String>,
}

/// What one resolution did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resolved {
    pub ready: Vec<i64>,
    pub cancelled: Vec<CancelledMatch>,
    /// Seconds from the match to each accept, of the matches resolved (for the metrics).
    pub accept_seconds: Vec<f64>,
    /// Answers given, of the matches resolved: accepted and declined (for the accept
    /// rate; a player who did not answer counts in neither).
    pub accepted: usize,
    pub declined: usize,
    pub unanswered: usize,
    /// Matches of the queue still pending after this resolution.
    pub pending: i64,
}

/// One player of a pending match, as the resolution reads it.
#[derive(Debug, Clone, sqlx::FromRow)]
struct Seat {
    match_id: i64,
    entry_id: i64,
    owner: String,
    player_id: String,
    answer: Option<String>,
    party_key: Option<i64>,
    accept_secs: Option<f64>,
}

fn accepted(s: &Seat) -> bool {
    s.answer.as_deref() == Some("accepted")
}

/// How a seat ends when its match is cancelled.
enum Fate {
    Requeued,
    /// With the decline cooldown (declined or did not answer).
    Declined(String),
    /// Sent out with a party mate who declined: no cooldown of their own.
    PartyOut(String),
}

/// Resolve the decided pending matches of `queue`. Fails with [`DbError::LeaseLost`]
/// (writing nothing) when `lease` is not the queue's current lease.
pub async fn resolve_ready_checks(
    db: &PgPool,
    queue: &str,
    lease: &Lease,
    lease_now: Option<DateTime<Utc>>,
    rules: ReadyCheckRules,
) -> Result<Resolved, DbError> {
    if !any_decided(db, queue).await? {
        return Ok(Resolved {
            pending: count_pending(db, queue).await?,
            ..Resolved::default()
        });
    }
    let mut tx = db.begin().await?;
    hold_lease(&mut tx, queue, lease, lease_now).await?;
    let locked = lock_pending(&mut tx, queue).await?;
    let seats = read_seats(&mut tx, &locked).await?;
    let verdict = judge(&locked, &seats);
    make_ready(&mut tx, &verdict.resolved.ready, rules.history_matches).await?;
    cancel_matches(&mut tx, queue, &verdict.cancel_rows, &verdict.fates, rules).await?;
    for c in &verdict.resolved.cancelled {
        notify_cancelled(&mut tx, queue, c).await?;
    }
    release_servers(&mut tx, queue, &verdict.resolved.cancelled).await?;
    forget_answers(&mut tx, &locked).await?;
    record_logins(&mut tx, queue, &verdict, &seats, rules.record_half_life).await?;
    tx.commit().await?;
    let mut out = verdict.resolved;
    out.pending = count_pending(db, queue).await?;
    Ok(out)
}

/// Whether a pending match of `queue` is decided. Most looks find nothing to decide: one
/// cheap read of the partial index, no transaction holding the lease row.
async fn any_decided(db: &PgPool, queue: &str) -> Result<bool, DbError> {
    Ok(
        sqlx::query_scalar(include_str!("sql/ready_check_any_decided.sql"))
            .bind(queue)
            .fetch_one(db)
            .await?,
    )
}

/// One pending match, locked: its id and whether its `answer_by` passed.
type LockedMatch = (i64, bool);

/// The pending matches, locked: a client answering one right now holds it FOR SHARE and
/// it waits for the next look (the leader never waits for a client).
async fn lock_pending(tx: &mut PgConnection, queue: &str) -> Result<Vec<LockedMatch>, DbError> {
    Ok(
        sqlx::query_as(include_str!("sql/ready_check_lock_pending.sql"))
            .bind(queue)
            .fetch_all(&mut *tx)
            .await?,
    )
}

/// The locked matches' players, read after the lock: every answer committed before it
/// is here.
async fn read_seats(tx: &mut PgConnection, locked: &[LockedMatch]) -> Result<Vec<Seat>, DbError> {
    let ids: Vec<i64> = locked.iter().map(|(id, _)| *id).collect();
    Ok(
        sqlx::query_as(include_str!("sql/ready_check_read_seats.sql"))
            .bind(&ids)
            .fetch_all(&mut *tx)
            .await?,
    )
}

/// What the resolution writes: the matches made ready or cancelled, each cancelled
/// match's row (id, reason, answers) and each of its seats' fate with the match's reason.
#[derive(Default)]
struct Verdict<'a> {
    resolved: Resolved,
    cancel_rows: Vec<(i64, String, serde_json::Value)>,
    fates: Vec<(&'a Seat, Fate, String)>,
}

/// Decide every locked match from its seats' answers.
fn judge<'a>(locked: &[LockedMatch], seats: &'a [Seat]) -> Verdict<'a> {
    let mut by_match: BTreeMap<i64, Vec<&Seat>> = BTreeMap::new();
    for s in seats {
        by_match.entry(s.match_id).or_default().push(s);
    }
    let mut verdict = Verdict::default();
    for (match_id, timed_out) in locked {
        if let Some(seats) = by_match.get(match_id) {
            judge_match(&mut verdict, *match_id, *timed_out, seats);
        }
    }
    verdict
}

/// One match: ready when every player accepted, cancelled at a decline or at its
/// timeout, else left pending.
fn judge_match<'a>(verdict: &mut Verdict<'a>, match_id: i64, timed_out: bool, seats: &[&'a Seat]) {
    let declined: Vec<&str> = seats
        .iter()
        .filter(|s| s.answer.as_deref() == Some("declined"))
        .map(|s| s.player_id.as_str())
        .collect();
    let silent: Vec<&str> = seats
        .iter()
        .filter(|s| s.answer.is_none())
        .map(|s| s.player_id.as_str())
        .collect();
    let all_accepted = seats.iter().all(|s| accepted(s));
    if !all_accepted && declined.is_empty() && !timed_out {
        return; // still waiting for answers
    }
    let out = &mut verdict.resolved;
    out.accepted += seats.iter().filter(|s| accepted(s)).count();
    out.declined += declined.len();
    out.accept_seconds.extend(
        seats
            .iter()
            .filter(|s| accepted(s))
            .filter_map(|s| s.accept_secs.map(|x| x.max(0.0))),
    );
    if all_accepted {
        out.ready.push(match_id);
        return;
    }
    // The timeout counts only the players who had not answered by then.
    let silent: Vec<&str> = if timed_out { silent } else { Vec::new() };
    out.unanswered += silent.len();
    cancel_match(verdict, match_id, seats, &declined, &silent);
}

/// Why a match is cancelled: who declined, who did not answer in time. With `login`,
/// as that login reads it: its own players by name, the others counted.
fn cancel_reason(
    seats: &[&Seat],
    declined: &[&str],
    silent: &[&str],
    login: Option<&str>,
) -> String {
    let named = |players: &[&str]| -> String {
        let Some(login) = login else {
            return name_list(players);
        };
        let own: Vec<&str> = players
            .iter()
            .copied()
            .filter(|p| seats.iter().any(|s| s.player_id == *p && s.owner == login))
            .collect();
        let others = players.len() - own.len();
        let others = match others {
            0 => String::new(),
            1 => "a player of another login".to_string(),
            n => format!("{n} players of other logins"),
        };
        match (own.is_empty(), others.is_empty()) {
            (false, false) => format!("{} and {others}", name_list(&own)),
            (false, true) => name_list(&own),
            _ => others,
        }
    };
    let mut why = Vec::new();
    if !declined.is_empty() {
        why.push(format!("declined by {}", named(declined)));
    }
    if !silent.is_empty() {
        why.push(format!("no answer in time from {}", named(silent)));
    }
    if why.is_empty() {
        // Timed out with every answer in and none a decline: cannot be (all
        // accepted is ready above), but a reason is required.
        why.push("the ready check timed out".into());
    }
    why.join("; ")
}

/// A cancelled match: its row, and each seat's fate.
fn cancel_match<'a>(
    verdict: &mut Verdict<'a>,
    match_id: i64,
    seats: &[&'a Seat],
    declined: &[&str],
    silent: &[&str],
) {
    let reason = cancel_reason(seats, declined, silent, None);
    let out_parties: HashSet<i64> = seats
        .iter()
        .filter(|s| !accepted(s))
        .filter_map(|s| s.party_key)
        .collect();
    let mut cancelled = CancelledMatch {
        match_id,
        reason: reason.clone(),
        requeued: Vec::new(),
        declined: Vec::new(),
        by_login: BTreeMap::new(),
        reason_by_login: BTreeMap::new(),
    };
    let mut answers = serde_json::Map::new();
    for &s in seats {
        // Two logins' "alice" may share a match: the later entry keeps its own key.
        let key = if answers.contains_key(&s.player_id) {
            format!("{}#{}", s.player_id, s.entry_id)
        } else {
            s.player_id.clone()
        };
        answers.insert(
            key,
            s.answer.clone().map_or(serde_json::Value::Null, Into::into),
        );
        let theirs = cancelled
            .reason_by_login
            .entry(s.owner.clone())
            .or_insert_with(|| cancel_reason(seats, declined, silent, Some(&s.owner)))
            .clone();
        let fate = seat_fate(s, &theirs, silent, &out_parties);
        let login = cancelled.by_login.entry(s.owner.clone()).or_default();
        match fate {
            Fate::Requeued => {
                cancelled.requeued.push(s.player_id.clone());
                login.0.push(s.player_id.clone());
            }
            _ => {
                cancelled.declined.push(s.player_id.clone());
                login.1.push(s.player_id.clone());
            }
        }
        verdict.fates.push((s, fate, theirs));
    }
    verdict
        .cancel_rows
        .push((match_id, reason, serde_json::Value::Object(answers)));
    verdict.resolved.cancelled.push(cancelled);
}

/// How one seat of a cancelled match ends: queued again when they accepted (and no
/// party mate failed to); declined with the cooldown when they declined or were silent
/// at the timeout; otherwise out with their party, without a cooldown of their own.
fn seat_fate(s: &Seat, reason: &str, silent: &[&str], out_parties: &HashSet<i64>) -> Fate {
    let match_id = s.match_id;
    match s.answer.as_deref() {
        Some("accepted") if s.party_key.is_none_or(|k| !out_parties.contains(&k)) => Fate::Requeued,
        Some("accepted") => Fate::PartyOut(format!(
            "match {match_id} was cancelled ({reason}): your party goes out with the \
             party member who did not accept"
        )),
        Some(_) => Fate::Declined(format!("declined match {match_id}")),
        None if silent.contains(&s.player_id.as_str()) => Fate::Declined(format!(
            "did not answer the ready check of match {match_id} in time"
        )),
        // Cancelled by another's decline before this player answered: not theirs
        // to be penalised for, and they did not accept.
        None => Fate::PartyOut(format!(
            "match {match_id} was cancelled ({reason}) before you answered"
        )),
    }
}

/// Matches of `queue` waiting for their ready check.
pub async fn count_pending(db: &PgPool, queue: &str) -> Result<i64, DbError> {
    Ok(
        sqlx::query_scalar("SELECT count(*) FROM matches WHERE queue = $1 AND status = 'pending'")
            .bind(queue)
            .fetch_one(db)
            .await?,
    )
}

/// At most five names, then how many more.
fn name_list(names: &[&str]) -> String {
    let mut text = names.iter().take(5).copied().collect::<Vec<_>>().join(", ");
    if names.len() > 5 {
        text.push_str(&format!(" and {} more", names.len() - 5));
    }
    text
}

/// The fence, as the round's commit holds it (`commit::check_lease`): the lease row
/// FOR UPDATE, so a takeover waits until this transaction ends.
async fn hold_lease(
    tx: &mut PgConnection,
    queue: &str,
    lease: &Lease,
    lease_now: Option<DateTime<Utc>>,
) -> Result<(), DbError> {
    let held: Option<i64> = sqlx::query_scalar(include_str!("sql/ready_check_hold_lease.sql"))
        .bind(queue)
        .bind(&lease.holder)
        .bind(lease.term)
        .bind(lease_now)
        .fetch_optional(&mut *tx)
        .await?;
    if held.is_none() {
        return Err(DbError::LeaseLost {
            queue: queue.to_string(),
            term: lease.term,
        });
    }
    Ok(())
}

/// Every player accepted: final, and in the players' history from now on.
async fn make_ready(tx: &mut PgConnection, ids: &[i64], history: usize) -> Result<(), DbError> {
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query(include_str!("sql/ready_check_make_ready.sql"))
        .bind(ids)
        .execute(&mut *tx)
        .await?;
    // The answers stay with the match's players (its history and the report read them).
    sqlx::query(include_str!("sql/ready_check_keep_answers.sql"))
        .bind(ids)
        .execute(&mut *tx)
        .await?;
    // As the round's commit writes it (see `commit::write_matches`).
    sqlx::query(include_str!("sql/ready_check_record_history.sql"))
        .bind(ids)
        .bind(history as i32)
        .execute(&mut *tx)
        .await?;
    notify_matches(tx, ids, MatchEvent::Ready).await?;
    Ok(())
}

/// Cancel the matches, requeue who accepted, decline the others.
async fn cancel_matches(
    tx: &mut PgConnection,
    queue: &str,
    rows: &[(i64, String, serde_json::Value)],
    fates: &[(&Seat, Fate, String)],
    rules: ReadyCheckRules,
) -> Result<(), DbError> {
    if rows.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let reasons: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    let answers: Vec<&serde_json::Value> = rows.iter().map(|r| &r.2).collect();
    sqlx::query(include_str!("sql/ready_check_cancel_matches.sql"))
        .bind(&ids)
        .bind(&reasons)
        .bind(&answers)
        .execute(&mut *tx)
        .await?;
    // The entries go back to the pool: the rows that said they were in the match go.
    sqlx::query("DELETE FROM match_players WHERE match_id = ANY($1)")
        .bind(&ids)
        .execute(&mut *tx)
        .await?;

    let (mut back, mut back_why, mut back_match) = (Vec::new(), Vec::new(), Vec::new());
    let (mut out, mut out_why, mut out_cooldown) = (Vec::new(), Vec::new(), Vec::new());
    for (seat, fate, reason) in fates {
        match fate {
            Fate::Requeued => {
                back.push(seat.entry_id);
                back_why.push(format!(
                    "match {} was cancelled ({reason}); queued again with your original \
                     enqueue time",
                    seat.match_id
                ));
                back_match.push(seat.match_id);
            }
            Fate::Declined(why) => {
                out.push(seat.entry_id);
                out_why.push(why.clone());
                out_cooldown.push(true);
            }
            Fate::PartyOut(why) => {
                out.push(seat.entry_id);
                out_why.push(why.clone());
                out_cooldown.push(false);
            }
        }
    }
    let cooldown = rules
        .decline_cooldown
        .filter(|d| !d.is_zero())
        .map(|d| d.as_secs_f64());
    // Queued again, on the same row: its enqueued_at, party and everything the client
    // sent stay; a fresh ticket lifetime. A player queued again by another call
    // meanwhile (one queued row per player and queue) keeps that row instead.
    sqlx::query(include_str!("sql/ready_check_requeue.sql"))
        .bind(&back)
        .bind(&back_why)
        .execute(&mut *tx)
        .await?;
    sqlx::query(include_str!("sql/ready_check_decline.sql"))
        .bind(&out)
        .bind(&out_why)
        .bind(cooldown)
        .bind(&out_cooldown)
        .execute(&mut *tx)
        .await?;
    // Their entries in other queues that this match withdrew: queued again as well.
    sqlx::query(include_str!("sql/ready_check_requeue_withdrawn.sql"))
        .bind(&back_match)
        .bind(&back)
        .bind(queue)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Who pays for a failed ready check: each login's record gains its seats of the resolved
/// matches and those of its seats that failed (declined, or silent at the deadline); the
/// players queued again because another login's player failed are marked bounced, for
/// the rounds to place first.
async fn record_logins(
    tx: &mut PgConnection,
    queue: &str,
    verdict: &Verdict<'_>,
    seats: &[Seat],
    half_life: Duration,
) -> Result<(), DbError> {
    let ready: HashSet<i64> = verdict.resolved.ready.iter().copied().collect();
    let mut record: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for s in seats.iter().filter(|s| ready.contains(&s.match_id)) {
        record.entry(s.owner.as_str()).or_default().0 += 1.0;
    }
    let mut failing: BTreeMap<i64, HashSet<&str>> = BTreeMap::new();
    for (s, fate, _) in &verdict.fates {
        let r = record.entry(s.owner.as_str()).or_default();
        r.0 += 1.0;
        if matches!(fate, Fate::Declined(_)) {
            r.1 += 1.0;
            failing
                .entry(s.match_id)
                .or_default()
                .insert(s.owner.as_str());
        }
    }
    let bounced: Vec<i64> = verdict
        .fates
        .iter()
        .filter(|(s, fate, _)| {
            matches!(fate, Fate::Requeued)
                && failing
                    .get(&s.match_id)
                    .is_some_and(|owners| !owners.contains(s.owner.as_str()))
        })
        .map(|(s, _, _)| s.entry_id)
        .collect();
    if !bounced.is_empty() {
        sqlx::query(include_str!("sql/ready_check_mark_bounced.sql"))
            .bind(&bounced)
            .execute(&mut *tx)
            .await?;
    }
    if record.is_empty() {
        return Ok(());
    }
    let owners: Vec<&str> = record.keys().copied().collect();
    let seats_n: Vec<f64> = record.values().map(|r| r.0).collect();
    let failures: Vec<f64> = record.values().map(|r| r.1).collect();
    // Decay: a count halves every half-life.
    sqlx::query(include_str!("sql/ready_check_record_logins.sql"))
        .bind(queue)
        .bind(&owners)
        .bind(&seats_n)
        .bind(&failures)
        .bind(half_life.as_secs_f64())
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// The logins of `queue` whose recent ready checks failed at least `after` times (decayed)
/// and at least `share` of their seats: their players are matched among themselves.
pub async fn failing_logins(
    db: &PgPool,
    queue: &str,
    after: u32,
    share: f64,
    half_life: Duration,
) -> Result<Vec<String>, DbError> {
    if after == 0 {
        return Ok(Vec::new());
    }
    Ok(
        sqlx::query_scalar(include_str!("sql/ready_check_failing_logins.sql"))
            .bind(queue)
            .bind(f64::from(after))
            .bind(share)
            .bind(half_life.as_secs_f64())
            .fetch_all(db)
            .await?,
    )
}

/// The answers of the matches this look resolved, now kept with them: deleted, except a
/// row a client's open transaction holds (never waited for), which a later look or
/// retention deletes.
async fn forget_answers(tx: &mut PgConnection, locked: &[LockedMatch]) -> Result<(), DbError> {
    let ids: Vec<i64> = locked.iter().map(|(id, _)| *id).collect();
    sqlx::query(include_str!("sql/ready_check_forget_answers.sql"))
        .bind(&ids)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// The cancelled matches' game servers are free again; each server's login hears that
/// its match was cancelled: {"event":"cancelled","queue":"q","match_id":42,
/// "server_id":"s1","reason":"..."}.
async fn release_servers(
    tx: &mut PgConnection,
    queue: &str,
    cancelled: &[CancelledMatch],
) -> Result<(), DbError> {
    let ids: Vec<i64> = cancelled.iter().map(|c| c.match_id).collect();
    for s in super::servers::release(tx, &ids).await? {
        let reason = cancelled
            .iter()
            .find(|c| c.match_id == s.match_id)
            .map_or("", |c| c.reason.as_str());
        let payload = serde_json::json!({
            "event": "cancelled",
            "queue": queue,
            "match_id": s.match_id,
            "server_id": s.server_id,
            "reason": reason,
        });
        sqlx::query("SELECT matchmaker_notify(matchmaker_login_channel($1, $2), $3)")
            .bind(&s.owner)
            .bind(queue)
            .bind(payload.to_string())
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

/// The cancellation, on the channel of each login with a player in the match, naming that
/// login's players (layout in the migration, section 6).
async fn notify_cancelled(
    tx: &mut PgConnection,
    queue: &str,
    c: &CancelledMatch,
) -> Result<(), DbError> {
    for (login, (requeued, declined)) in &c.by_login {
        let mut payload = serde_json::json!({
            "event": "cancelled",
            "queue": queue,
            "match_id": c.match_id,
            "reason": c.reason_by_login.get(login).unwrap_or(&c.reason),
            "requeued": requeued,
            "declined": declined,
        });
        // PostgreSQL's payload limit (8000 bytes with the default block size).
        if payload.to_string().len() >= 7800 {
            payload = serde_json::json!({
                "event": "cancelled",
                "queue": queue,
                "match_id": c.match_id,
                "players_omitted": true,
            });
        }
        sqlx::query("SELECT matchmaker_notify(matchmaker_login_channel($1, $2), $3)")
            .bind(login)
            .bind(queue)
            .bind(payload.to_string())
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}
