//! The reads behind `matchmaker report`: the rounds of a time window, their matches and
//! matched players, and how often opponents repeated. Read-only (plain SELECTs, no
//! locks taken); an operator's `matchmaker_ops` login is enough.
//!
//! The window is half-open, `from <= rounds.committed_at < to`, so consecutive reports
//! never count a round twice; a round's matches and players come with it whatever their
//! own times.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{PgConnection, PgPool, Row};

/// Everything the report shows, as read from the database.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportInput {
    /// The window: rounds committed at or after `from` and before `to`.
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// `--queue`, when one was asked for.
    pub queue_filter: Option<String>,
    /// When the report was made (shown on the page).
    pub generated_at: DateTime<Utc>,
    /// The window's rounds, oldest first.
    pub rounds: Vec<RoundRow>,
    /// Every player placed by those rounds.
    pub players: Vec<PlacedPlayer>,
    /// The matches of those rounds (region and score).
    pub matches: Vec<MatchRow>,
    /// Opponent repeats per round (rounds without matches are absent).
    pub repeats: Vec<RepeatRow>,
    /// Per queue with a ready check: its matches of the window by outcome, the accept
    /// rate and the time to accept.
    pub ready_checks: Vec<ReadyCheckStats>,
}

/// One committed round (`rounds`).
#[derive(Debug, Clone, PartialEq)]
pub struct RoundRow {
    pub round_id: i64,
    pub queue: String,
    /// `schedule`, `pool_size`, `max_wait` or `manual`.
    pub trigger: String,
    pub committed_at: DateTime<Utc>,
    pub pool_size: i64,
    pub match_count: i64,
    pub matched: i64,
    pub left_over: i64,
    /// The left-over players by outcome (`no_host`, `avoided`, `floor`, ...), from the
    /// round's snapshot (empty for a round without one).
    pub left_over_by_reason: BTreeMap<String, i64>,
    pub rejected: i64,
    /// The round score (mean match score); `None` for a round without matches.
    pub score: Option<f64>,
    /// Factor name -> mean score over the round's matches.
    pub factor_averages: BTreeMap<String, f64>,
    /// How the round's config estimates pings (for the enemy ping in ms).
    pub ping: PingModel,
}

/// The part of a round's stored config that turns latencies into a ping (the same rules
/// as the `enemy_ping` factor, `src/core/factors/enemy_ping.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct PingModel {
    /// Dedicated servers: a player's ping is their latency to the match's region.
    pub dedicated: bool,
    /// Added to the relay estimate lat(a, r) + lat(b, r).
    pub relay_overhead_ms: f64,
    /// Assumed when nothing is known.
    pub unknown_ms: f64,
}

impl Default for PingModel {
    fn default() -> Self {
        let p = matchmaker_optimizer::model::PingParams::default();
        PingModel {
            dedicated: false,
            relay_overhead_ms: p.relay_overhead_ms,
            unknown_ms: p.unknown_ms,
        }
    }
}

/// One match (`matches`).
#[derive(Debug, Clone, PartialEq)]
pub struct MatchRow {
    pub match_id: i64,
    pub round_id: i64,
    pub score: f64,
    /// Dedicated servers: the region the match is played in.
    pub region: Option<String>,
}

/// One placed player (`match_players` and their `queue_entries` row).
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedPlayer {
    pub match_id: i64,
    pub player_id: String,
    pub team: i32,
    pub skill: f64,
    /// Seconds from enqueue to match.
    pub wait_s: f64,
    /// Round-trip ms to regions, as enqueued.
    pub latencies: BTreeMap<String, f64>,
    /// Measured pings to other players, as enqueued.
    pub peer_pings: BTreeMap<String, f64>,
}

/// Opponent pairs of one round that had met in a player's previous match (the Awesomenauts post's
/// opponent variation). Pairs are ordered (a with b and b with a both count), as in
/// `docs/ops-queries.sql`'s `opponent_repeats`.
#[derive(Debug, Clone, PartialEq)]
pub struct RepeatRow {
    pub round_id: i64,
    pub opponent_pairs: i64,
    /// Opponents now, opponents in the player's previous match too.
    pub opponents_again: i64,
    /// Opponents now, teammates in the player's previous match.
    pub teammates_before: i64,
}

/// Which rounds a report covers.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportWindow {
    /// Only this queue; `None`: every queue.
    pub queue: Option<String>,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// The rounds of the window, shared by every query below ($1 queue or NULL, $2 from,
/// $3 to); `rounds_by_queue_latest` does not cover committed_at, but a report reads a
/// window's worth of rounds once, so a scan of `rounds` (one row per round) is fine.
const WINDOW_ROUNDS: &str = "window_rounds AS (
    SELECT * FROM rounds
     WHERE ($1::text IS NULL OR queue = $1)
       AND committed_at >= $2 AND committed_at < $3)";

/// Reads everything the report shows for `window`; `generated_at` is stamped on the page.
pub async fn read_report(
    db: &PgPool,
    window: &ReportWindow,
    generated_at: DateTime<Utc>,
) -> Result<ReportInput, sqlx::Error> {
    // One snapshot for the four reads: a round committed meanwhile is in all or none.
    let mut tx = db.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(&mut *tx)
        .await?;
    let rounds = read_rounds(&mut tx, window).await?;
    let matches = read_matches(&mut tx, window).await?;
    let players = read_players(&mut tx, window).await?;
    let repeats = read_repeats(&mut tx, window).await?;
    let ready_checks = ready_check_stats(&mut tx, window).await?;
    tx.commit().await?;
    Ok(ReportInput {
        from: window.from,
        to: window.to,
        queue_filter: window.queue.clone(),
        generated_at,
        rounds,
        players,
        matches,
        repeats,
        ready_checks,
    })
}

async fn read_rounds(
    db: &mut PgConnection,
    w: &ReportWindow,
) -> Result<Vec<RoundRow>, sqlx::Error> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "WITH {WINDOW_ROUNDS}
         SELECT round_id, queue, trigger, committed_at, pool_size::int8, match_count::int8,
                matched::int8, left_over::int8, rejected::int8, score, factor_averages,
                -- The ping rules of the config the round ran with (the enemy ping in ms
                -- is estimated as its enemy_ping factor did); a config stored before a
                -- key existed falls back to the default.
                coalesce(config ->> 'network', 'peer_to_peer') = 'dedicated' AS dedicated,
                coalesce((config -> 'ping' ->> 'relay_overhead_ms')::float8, 0)
                    AS relay_overhead_ms,
                coalesce((config -> 'ping' ->> 'unknown_ms')::float8, 150) AS unknown_ms,
                (SELECT coalesce(jsonb_object_agg(o.outcome, o.n), '{{}}')
                   FROM (SELECT l.value ->> 'outcome' AS outcome, count(*) AS n
                           FROM round_snapshots s CROSS JOIN LATERAL jsonb_each(s.left_over) l
                          WHERE s.round_id = window_rounds.round_id
                            AND l.value ->> 'outcome' <> 'rejected'
                          GROUP BY 1) o) AS left_over_by_reason
           FROM window_rounds
          ORDER BY committed_at, round_id"
    )))
    .bind(w.queue.as_deref())
    .bind(w.from)
    .bind(w.to)
    .fetch_all(&mut *db)
    .await?;
    rows.iter()
        .map(|r| {
            let factors: Json<BTreeMap<String, serde_json::Value>> =
                r.try_get("factor_averages")?;
            Ok(RoundRow {
                round_id: r.try_get("round_id")?,
                queue: r.try_get("queue")?,
                trigger: r.try_get("trigger")?,
                committed_at: r.try_get("committed_at")?,
                pool_size: r.try_get("pool_size")?,
                match_count: r.try_get("match_count")?,
                matched: r.try_get("matched")?,
                left_over: r.try_get("left_over")?,
                left_over_by_reason: r
                    .try_get::<Json<BTreeMap<String, i64>>, _>("left_over_by_reason")?
                    .0,
                rejected: r.try_get("rejected")?,
                score: r.try_get("score")?,
                factor_averages: factors
                    .0
                    .into_iter()
                    .filter_map(|(k, v)| v.as_f64().map(|v| (k, v)))
                    .collect(),
                ping: PingModel {
                    dedicated: r.try_get("dedicated")?,
                    relay_overhead_ms: r.try_get("relay_overhead_ms")?,
                    unknown_ms: r.try_get("unknown_ms")?,
                },
            })
        })
        .collect()
}

async fn read_matches(
    db: &mut PgConnection,
    w: &ReportWindow,
) -> Result<Vec<MatchRow>, sqlx::Error> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "WITH {WINDOW_ROUNDS}
         SELECT m.match_id, m.round_id, m.score, m.region
           FROM window_rounds r
           JOIN matches m ON m.round_id = r.round_id
          ORDER BY m.match_id"
    )))
    .bind(w.queue.as_deref())
    .bind(w.from)
    .bind(w.to)
    .fetch_all(&mut *db)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(MatchRow {
                match_id: r.try_get("match_id")?,
                round_id: r.try_get("round_id")?,
                score: r.try_get("score")?,
                region: r.try_get("region")?,
            })
        })
        .collect()
}

async fn read_players(
    db: &mut PgConnection,
    w: &ReportWindow,
) -> Result<Vec<PlacedPlayer>, sqlx::Error> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "WITH {WINDOW_ROUNDS}
         SELECT mp.match_id, mp.player_id, mp.team, mp.skill,
                extract(epoch FROM mp.matched_at - mp.enqueued_at)::float8 AS wait_s,
                -- The latencies and peer pings the player enqueued with: the solver's
                -- input for the match's ping.
                e.latencies, e.peer_pings
           FROM window_rounds r
           JOIN matches m ON m.round_id = r.round_id
           JOIN match_players mp ON mp.match_id = m.match_id
           JOIN queue_entries e ON e.entry_id = mp.entry_id
          ORDER BY mp.match_id, mp.team, mp.player_id"
    )))
    .bind(w.queue.as_deref())
    .bind(w.from)
    .bind(w.to)
    .fetch_all(&mut *db)
    .await?;
    rows.iter()
        .map(|r| {
            let latencies: Json<BTreeMap<String, f64>> = r.try_get("latencies")?;
            let peer_pings: Json<BTreeMap<String, f64>> = r.try_get("peer_pings")?;
            Ok(PlacedPlayer {
                match_id: r.try_get("match_id")?,
                player_id: r.try_get("player_id")?,
                team: r.try_get("team")?,
                skill: r.try_get("skill")?,
                wait_s: r.try_get("wait_s")?,
                latencies: latencies.0,
                peer_pings: peer_pings.0,
            })
        })
        .collect()
}

async fn read_repeats(
    db: &mut PgConnection,
    w: &ReportWindow,
) -> Result<Vec<RepeatRow>, sqlx::Error> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "WITH {WINDOW_ROUNDS},
         placed AS (
             SELECT r.round_id, mp.queue, mp.match_id, mp.entry_id, mp.player_id, mp.team
               FROM window_rounds r
               JOIN matches m ON m.round_id = r.round_id
               JOIN match_players mp ON mp.match_id = m.match_id),
         -- Each placed player's match before this one in the same queue (the Awesomenauts post's
         -- opponent variation looks one match back), found once per player rather than
         -- once per pair, through the player's entries (queue_entries_player_latest): a
         -- player has one queued entry per queue at a time, so their entries in a queue
         -- are in the order of their matches. It may lie before the window.
         previous AS (
             SELECT p.*, pm.match_id AS prev_match, pm.team AS prev_team
               FROM placed p
               LEFT JOIN LATERAL (
                     SELECT x.match_id, x.team FROM queue_entries x
                      WHERE x.player_id = p.player_id AND x.entry_id < p.entry_id
                        AND x.queue = p.queue AND x.status = 'matched'
                      ORDER BY x.entry_id DESC
                      LIMIT 1) pm ON true),
         -- Every (player, opponent) pair of the round, and the team the opponent had in
         -- the player's previous match (NULL: not in it).
         pairs AS (
             SELECT pr.round_id, pr.prev_team, o.team AS opponent_prev_team
               FROM previous pr
               JOIN match_players b ON b.match_id = pr.match_id AND b.team <> pr.team
               LEFT JOIN match_players o
                      ON o.match_id = pr.prev_match AND o.player_id = b.player_id)
         SELECT round_id, count(*) AS opponent_pairs,
                count(*) FILTER (WHERE opponent_prev_team <> prev_team) AS opponents_again,
                count(*) FILTER (WHERE opponent_prev_team = prev_team) AS teammates_before
           FROM pairs
          GROUP BY round_id
          ORDER BY round_id"
    )))
    .bind(w.queue.as_deref())
    .bind(w.from)
    .bind(w.to)
    .fetch_all(&mut *db)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(RepeatRow {
                round_id: r.try_get("round_id")?,
                opponent_pairs: r.try_get("opponent_pairs")?,
                opponents_again: r.try_get("opponents_again")?,
                teammates_before: r.try_get("teammates_before")?,
            })
        })
        .collect()
}

/// Ready checks answered and resolved over a period, for the report and `status`.
#[derive(Debug, Clone, Default, PartialEq, sqlx::FromRow)]
pub struct ReadyCheckStats {
    pub queue: String,
    pub pending: i64,
    pub ready: i64,
    pub cancelled: i64,
    /// Accepts over the answers due (accepted + declined + unanswered) of the resolved
    /// matches; None: none resolved.
    pub accept_rate: Option<f64>,
    /// Median seconds from the match to an accept.
    pub median_accept_s: Option<f64>,
}

/// Per queue with a ready-checked match in the report's window.
pub async fn ready_check_stats(
    db: &mut PgConnection,
    w: &ReportWindow,
) -> Result<Vec<ReadyCheckStats>, sqlx::Error> {
    sqlx::query_as(
        "WITH m AS (
             SELECT * FROM matches
              WHERE answer_by IS NOT NULL AND created_at >= $2 AND created_at < $3
                AND ($1::text IS NULL OR queue = $1)),
         answers AS (
             -- Ready and pending matches keep their answers in match_players, cancelled
             -- ones in matches.answers.
             SELECT m.queue, mp.answer,
                    extract(epoch FROM mp.answered_at - m.created_at)::float8 AS secs
               FROM m JOIN match_players mp ON mp.match_id = m.match_id
              WHERE m.status = 'ready'
             UNION ALL
             SELECT m.queue, a.value #>> '{}', NULL
               FROM m CROSS JOIN LATERAL jsonb_each(m.answers) a
              WHERE m.status = 'cancelled')
         SELECT q.queue,
                (SELECT count(*) FROM m WHERE m.queue = q.queue AND m.status = 'pending') AS pending,
                (SELECT count(*) FROM m WHERE m.queue = q.queue AND m.status = 'ready') AS ready,
                (SELECT count(*) FROM m WHERE m.queue = q.queue AND m.status = 'cancelled')
                    AS cancelled,
                (SELECT avg(CASE WHEN a.answer = 'accepted' THEN 1.0 ELSE 0.0 END)::float8
                   FROM answers a WHERE a.queue = q.queue) AS accept_rate,
                (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a.secs)
                   FROM answers a WHERE a.queue = q.queue AND a.secs IS NOT NULL)
                    AS median_accept_s
           FROM (SELECT DISTINCT queue FROM m) q
          ORDER BY q.queue",
    )
    .bind(w.queue.as_deref())
    .bind(w.from)
    .bind(w.to)
    .fetch_all(db)
    .await
}
