//! What the console's JSON endpoints answer, each read through the operators' commands'
//! own functions: the status of `matchmaker status`, a stored round as `matchmaker
//! replay` compares it (without re-solving it), a player as `matchmaker explain` tells it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

use crate::daemon::health::QueueRole;
use crate::db::servers::FleetRegion;
use crate::db::status::{QueueLine, ReplicaLine, RoundLine, read_round_lines};
use crate::db::{self, DbError, StoredRound};
use crate::ops::explain::{self, Explanation};
use crate::ops::replay::{Side, stored_side};
use crate::ops::status::{self, read_status};

/// How many of the latest rounds the status shows (every queue together).
pub const RECENT_ROUNDS: i64 = 15;
/// How many of a player's rounds the search shows (as `matchmaker explain`'s default).
pub const PLAYER_ROUNDS: i64 = 10;

/// The page's live part: every queue, the latest rounds, the replicas and servers.
#[derive(Debug, Clone, Serialize)]
pub struct StatusView {
    /// The database's clock, against which the countdowns are counted.
    pub at: DateTime<Utc>,
    pub queues: Vec<QueueView>,
    /// The latest rounds of every queue, newest first.
    pub rounds: Vec<RoundLine>,
    pub replicas: Vec<ReplicaLine>,
    pub servers: Vec<FleetRegion>,
}

/// One queue: its `status` line, the countdown as `status` words it, and its latest round.
#[derive(Debug, Clone, Serialize)]
pub struct QueueView {
    #[serde(flatten)]
    pub line: QueueLine,
    pub countdown: String,
    /// This replica's part in the queue (`None`: not in this replica's config).
    pub here: Option<String>,
    pub latest: Option<RoundLine>,
}

/// Reads the status; `configured` are this replica's queues and its role in each, so a
/// configured queue shows even before it has a row.
pub async fn read_status_view(
    db: &PgPool,
    configured: &[(String, QueueRole)],
) -> Result<StatusView, sqlx::Error> {
    let view = read_status(db, None, RECENT_ROUNDS).await?;
    let mut lines = view.queues;
    for (name, _) in configured {
        if !lines.iter().any(|l| &l.queue == name) {
            lines.push(QueueLine {
                queue: name.clone(),
                pool_size: 0,
                seconds_to_next: None,
                waiting_for: "starting".into(),
                target_pool: None,
                min_pool: None,
                leader: None,
                pending_matches: 0,
            });
        }
    }
    lines.sort_by(|a, b| a.queue.cmp(&b.queue));
    let mut queues = Vec::with_capacity(lines.len());
    for line in lines {
        let latest = match view.rounds.iter().find(|r| r.queue == line.queue) {
            Some(r) => Some(r.clone()),
            // A quiet queue beside busy ones: its latest round is older than the list.
            None => read_round_lines(db, Some(&line.queue), 1).await?.pop(),
        };
        let here = configured
            .iter()
            .find(|(name, _)| name == &line.queue)
            .map(|(_, role)| describe_role(role));
        queues.push(QueueView {
            countdown: status::countdown(&line),
            here,
            latest,
            line,
        });
    }
    Ok(StatusView {
        at: view.at,
        queues,
        rounds: view.rounds,
        replicas: view.replicas,
        servers: view.servers,
    })
}

/// This replica's role in a queue, as `/readyz` words it.
fn describe_role(role: &QueueRole) -> String {
    match role {
        QueueRole::Starting => "starting".into(),
        QueueRole::Leading { term } => format!("leading (lease term {term})"),
        QueueRole::Standby => "standing by (another replica leads)".into(),
        QueueRole::Failing(e) => format!("failing: {e}"),
    }
}

/// A stored round: what it committed, match by match.
#[derive(Debug, Clone, Serialize)]
pub struct RoundView {
    pub round_id: i64,
    pub queue: String,
    pub trigger: String,
    pub committed_at: DateTime<Utc>,
    pub pool_size: i32,
    /// A string: a u64 does not fit a JavaScript number.
    pub seed: String,
    pub strategy: String,
    pub budget: String,
    pub config_hash: String,
    /// The round's figures, as `matchmaker replay` shows its stored side.
    pub stored: Side,
    pub dropped_by_cancel: i32,
    pub matches: Vec<MatchView>,
    pub left_over: Vec<LeftOverView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MatchView {
    pub match_id: i64,
    pub score: f64,
    pub factors: BTreeMap<String, f64>,
    pub teams: Vec<Vec<PlacedView>>,
}

/// A matched player with what the solver saw of them.
#[derive(Debug, Clone, Serialize)]
pub struct PlacedView {
    pub player: String,
    pub skill: Option<f64>,
    /// Enqueue to the round's clock, in seconds.
    pub waited_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LeftOverView {
    pub player: String,
    pub outcome: String,
    pub reason: String,
}

/// Round `round_id` as stored (`Ok(None)`: no such round).
pub async fn read_round_view(db: &PgPool, round_id: i64) -> Result<Option<RoundView>, DbError> {
    Ok(db::load_round(db, round_id).await?.map(|r| round_view(&r)))
}

fn round_view(r: &StoredRound) -> RoundView {
    let players: BTreeMap<&str, &matchmaker_optimizer::Player> =
        r.pool.players.iter().map(|p| (p.id.as_str(), p)).collect();
    let placed = |id: &String| {
        let p = players.get(id.as_str());
        PlacedView {
            player: id.clone(),
            skill: p.map(|p| p.skill),
            waited_s: p
                .and_then(|p| p.enqueued_at)
                .zip(r.pool.now)
                .map(|(at, now)| ((now - at).num_milliseconds() as f64 / 1000.0).max(0.0)),
        }
    };
    RoundView {
        round_id: r.round_id,
        queue: r.queue.clone(),
        trigger: r.trigger.clone(),
        committed_at: r.committed_at,
        pool_size: r.pool_size,
        seed: r.seed.to_string(),
        strategy: r.strategy.name().to_string(),
        budget: r.budget.describe(),
        config_hash: r.config_hash.clone(),
        stored: stored_side(r),
        dropped_by_cancel: r.dropped_by_cancel,
        matches: r
            .matches
            .iter()
            .map(|m| MatchView {
                match_id: m.match_id,
                score: m.score,
                factors: m.factors.clone(),
                teams: m
                    .teams
                    .iter()
                    .map(|t| t.iter().map(placed).collect())
                    .collect(),
            })
            .collect(),
        left_over: r
            .left_over
            .iter()
            .map(|(player, l)| LeftOverView {
                player: player.clone(),
                outcome: l.outcome.as_str().to_string(),
                reason: l.reason.clone(),
            })
            .collect(),
    }
}

/// A player's explanation, and the same as `matchmaker explain` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct PlayerView {
    #[serde(flatten)]
    pub explanation: Explanation,
    pub text: String,
}

pub async fn read_player_view(db: &PgPool, player: &str) -> Result<PlayerView, sqlx::Error> {
    let explanation = explain::explain_player(db, player, PLAYER_ROUNDS).await?;
    let text = explain::render(&explanation);
    Ok(PlayerView { explanation, text })
}
