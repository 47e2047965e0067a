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
use sqlx::{PgConnection, PgPool};

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
    /// Per queue: the results reported for the window's matches, and how the predicted
    /// win probabilities came true.
    pub results: Vec<ResultStats>,
    /// Per queue and factor: how the factor's value related to early leavers and to
    /// surprises in the window's reported matches.
    pub factor_results: Vec<FactorResultStats>,
    /// Per queue whose matches were placed on game servers: the supply as rounds used it.
    pub servers: Vec<ServerStats>,
    /// Per queue with maps and map: the matches played on it, vetoes kept and replays.
    pub maps: Vec<MapStats>,
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
    /// How the wait estimates of the players it matched came true (None: none of them
    /// had one).
    pub wait_estimates: Option<WaitEstimates>,
}

/// `rounds.wait_estimates`: the estimates the matched players read when they enqueued
/// against the waits they had.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
pub struct WaitEstimates {
    pub players: i64,
    pub mean_abs_error_s: f64,
    /// Positive: the estimates were too long.
    pub mean_error_s: f64,
    /// Within half the wait, or 15 s.
    pub within_share: f64,
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
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
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
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
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

/// A report query: the window's rounds (`window_rounds`, $1 queue or NULL, $2 from, $3
/// to) followed by the query's own SQL.
macro_rules! window_query {
    ($file:literal) => {
        concat!(
            include_str!("sql/report_window_rounds.sql"),
            include_str!($file)
        )
    };
}

/// Run a window query, its rows as `R`.
async fn fetch_window<R>(
    db: &mut PgConnection,
    w: &ReportWindow,
    sql: &'static str,
) -> Result<Vec<R>, sqlx::Error>
where
    R: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    sqlx::query_as(sql)
        .bind(w.queue.as_deref())
        .bind(w.from)
        .bind(w.to)
        .fetch_all(&mut *db)
        .await
}

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
    let results = result_stats(&mut tx, window).await?;
    let factor_results = fetch_window(
        &mut tx,
        window,
        include_str!("sql/report_factor_results.sql"),
    )
    .await?;
    let servers = fetch_window(&mut tx, window, include_str!("sql/report_servers.sql")).await?;
    let maps = fetch_window(&mut tx, window, include_str!("sql/report_maps.sql")).await?;
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
        results,
        factor_results,
        servers,
        maps,
    })
}

/// A row of `report_rounds.sql`.
#[derive(sqlx::FromRow)]
struct RoundRecordRow {
    round_id: i64,
    queue: String,
    trigger: String,
    committed_at: DateTime<Utc>,
    pool_size: i64,
    match_count: i64,
    matched: i64,
    left_over: i64,
    rejected: i64,
    score: Option<f64>,
    factor_averages: Json<BTreeMap<String, serde_json::Value>>,
    dedicated: bool,
    relay_overhead_ms: f64,
    unknown_ms: f64,
    left_over_by_reason: Json<BTreeMap<String, i64>>,
    wait_estimates: Json<serde_json::Value>,
}

impl From<RoundRecordRow> for RoundRow {
    fn from(r: RoundRecordRow) -> Self {
        RoundRow {
            round_id: r.round_id,
            queue: r.queue,
            trigger: r.trigger,
            committed_at: r.committed_at,
            pool_size: r.pool_size,
            match_count: r.match_count,
            matched: r.matched,
            left_over: r.left_over,
            left_over_by_reason: r.left_over_by_reason.0,
            rejected: r.rejected,
            score: r.score,
            factor_averages: factor_means(&r.factor_averages.0).collect(),
            ping: PingModel {
                dedicated: r.dedicated,
                relay_overhead_ms: r.relay_overhead_ms,
                unknown_ms: r.unknown_ms,
            },
            wait_estimates: serde_json::from_value(r.wait_estimates.0).ok(),
        }
    }
}

/// The factor means of a round's `factor_averages` (a JSON object of factor name to
/// mean); a value that is not a number is skipped.
pub(crate) fn factor_means<'a>(
    factors: impl IntoIterator<Item = (&'a String, &'a serde_json::Value)>,
) -> impl Iterator<Item = (String, f64)> {
    factors
        .into_iter()
        .filter_map(|(k, v)| v.as_f64().map(|v| (k.clone(), v)))
}

async fn read_rounds(
    db: &mut PgConnection,
    w: &ReportWindow,
) -> Result<Vec<RoundRow>, sqlx::Error> {
    let rows: Vec<RoundRecordRow> =
        fetch_window(db, w, window_query!("sql/report_rounds.sql")).await?;
    Ok(rows.into_iter().map(RoundRow::from).collect())
}

async fn read_matches(
    db: &mut PgConnection,
    w: &ReportWindow,
) -> Result<Vec<MatchRow>, sqlx::Error> {
    fetch_window(db, w, window_query!("sql/report_matches.sql")).await
}

/// A row of `report_players.sql`.
#[derive(sqlx::FromRow)]
struct PlacedPlayerRow {
    match_id: i64,
    player_id: String,
    team: i32,
    skill: f64,
    wait_s: f64,
    latencies: Json<BTreeMap<String, f64>>,
    peer_pings: Json<BTreeMap<String, f64>>,
}

async fn read_players(
    db: &mut PgConnection,
    w: &ReportWindow,
) -> Result<Vec<PlacedPlayer>, sqlx::Error> {
    let rows: Vec<PlacedPlayerRow> =
        fetch_window(db, w, window_query!("sql/report_players.sql")).await?;
    Ok(rows
        .into_iter()
        .map(|r| PlacedPlayer {
            match_id: r.match_id,
            player_id: r.player_id,
            team: r.team,
            skill: r.skill,
            wait_s: r.wait_s,
            latencies: r.latencies.0,
            peer_pings: r.peer_pings.0,
        })
        .collect())
}

async fn read_repeats(
    db: &mut PgConnection,
    w: &ReportWindow,
) -> Result<Vec<RepeatRow>, sqlx::Error> {
    fetch_window(db, w, window_query!("sql/report_repeats.sql")).await
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
    fetch_window(db, w, include_str!("sql/report_ready_checks.sql")).await
}

/// Per queue: its matches of the window, their reported results, and how the predicted
/// win probability of each two-team match came true.
#[derive(Debug, Clone, Default, PartialEq, sqlx::FromRow)]
pub struct ResultStats {
    pub queue: String,
    pub matches: i64,
    pub reported: i64,
    pub disputed: i64,
    /// Players reported as leaving early, of the reported matches' players.
    pub left_early_share: Option<f64>,
    /// Mean squared gap between the prediction and the outcome (a coin flip: 0.25).
    pub brier: Option<f64>,
    /// Matches predicted at 70% or more for one team, and those the favourite won.
    pub lopsided: i64,
    pub stomps: i64,
    /// Per tenth of predicted probability: matches, mean prediction, observed win rate.
    pub calibration: Json<Vec<CalibrationBucket>>,
}

/// Per queue and factor of its reported two-team matches (`report_factor_results.sql`):
/// the matches split at the factor's median, and how each half went.
#[derive(Debug, Clone, Default, PartialEq, sqlx::FromRow)]
pub struct FactorResultStats {
    pub queue: String,
    pub factor: String,
    pub matches: i64,
    pub median: Option<f64>,
    /// Share of players who left early, in the matches at or below the median and above.
    pub left_early_low: Option<f64>,
    pub left_early_high: Option<f64>,
    /// Share of stomps (a team predicted at 70% or more won), same halves.
    pub stomps_low: Option<f64>,
    pub stomps_high: Option<f64>,
    /// Correlation of the factor with leaving early, and with the prediction's squared
    /// error (None: too few matches, or the factor never varied).
    pub left_early_corr: Option<f64>,
    pub surprise_corr: Option<f64>,
}

/// A reported two-team match of a round (`replay_round_results.sql`).
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ReportedOutcome {
    /// The two teams' ranks (1 the best; equal: a draw).
    pub team_ranks: Vec<i32>,
    /// The first team's predicted chance at match time.
    pub predicted: Option<f64>,
}

impl ReportedOutcome {
    /// 1 the first team won, 0.5 a draw, 0 it lost, as the report counts it.
    pub fn outcome(&self) -> f64 {
        match self.team_ranks.first().cmp(&self.team_ranks.get(1)) {
            std::cmp::Ordering::Less => 1.0,
            std::cmp::Ordering::Equal => 0.5,
            std::cmp::Ordering::Greater => 0.0,
        }
    }
}

/// The reported results of round `round_id`'s two-team matches.
pub async fn round_results(
    db: &PgPool,
    round_id: i64,
) -> Result<Vec<ReportedOutcome>, sqlx::Error> {
    sqlx::query_as(include_str!("sql/replay_round_results.sql"))
        .bind(round_id)
        .fetch_all(db)
        .await
}

/// Per queue placed on game servers (`report_servers.sql`).
#[derive(Debug, Clone, Default, PartialEq, sqlx::FromRow)]
pub struct ServerStats {
    pub queue: String,
    /// Matches of the window placed on a server.
    pub placed: i64,
    /// Matches rounds formed but could not place for want of a ready server.
    pub waited_for_server: i64,
    /// Distinct servers that hosted them.
    pub servers: i64,
    /// Seconds a server sat free before its allocation: p50, p90.
    pub idle_p50_s: Option<f64>,
    pub idle_p90_s: Option<f64>,
}

/// Per queue and map (`report_maps.sql`).
#[derive(Debug, Clone, Default, PartialEq, sqlx::FromRow)]
pub struct MapStats {
    pub queue: String,
    pub map: String,
    /// Matches of the window played on it.
    pub matches: i64,
    /// Of those, matches on which a floor step had relaxed a player's veto.
    pub vetoes_relaxed: i64,
    /// Seats of those matches, and the seats whose player's previous match of the
    /// window in the queue was on this map too.
    pub seats: i64,
    pub replayed: i64,
}

/// One point of the reliability curve.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
pub struct CalibrationBucket {
    pub bucket: i32,
    pub matches: i64,
    pub predicted: f64,
    pub observed: f64,
}

/// Per queue with a match in the report's window.
pub async fn result_stats(
    db: &mut PgConnection,
    w: &ReportWindow,
) -> Result<Vec<ResultStats>, sqlx::Error> {
    fetch_window(db, w, include_str!("sql/report_results.sql")).await
}
