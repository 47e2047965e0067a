//! `matchmaker explain PLAYER`: a player's last rounds and why.
//!
//! For each round that pooled the player, newest first: the queue and round, the pool's
//! size, and matched (match id, team) or what became of them and why (no valid match,
//! outscored, party sat out, rejected, left during the solve...: `round_snapshots`).
//! Then the player's latest entries (queued, cancelled, expired,
//! withdrawn...), which say what happened outside rounds. The same rows, for SQL: the
//! `player_rounds` view (operators only).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

/// One round that pooled the player.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct PlayerRound {
    pub queue: String,
    pub round_id: i64,
    pub committed_at: DateTime<Utc>,
    pub pool_size: i32,
    /// `matched`, or a left-over outcome (no_valid_match, outscored, not_found,
    /// party_sat_out, rejected, left_during_solve, match_dropped).
    pub outcome: String,
    pub match_id: Option<i64>,
    pub team: Option<i32>,
    pub reason: Option<String>,
}

/// One of the player's entries.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct PlayerEntry {
    pub entry_id: i64,
    pub queue: String,
    pub status: String,
    pub reason: Option<String>,
    pub enqueued_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub player: String,
    pub rounds: Vec<PlayerRound>,
    pub entries: Vec<PlayerEntry>,
}

/// The player's last `rounds` rounds and latest entries.
pub async fn explain_player(
    db: &PgPool,
    player: &str,
    rounds: i64,
) -> Result<Explanation, sqlx::Error> {
    // The two halves of the player_rounds view, each through its index: the player's
    // entries (queue_entries_player_latest) and `left_over ? player` (GIN).
    let rows: Vec<PlayerRound> = sqlx::query_as(
        "(SELECT r.queue, r.round_id, r.committed_at, r.pool_size, 'matched' AS outcome,
                 e.match_id, e.team, NULL::text AS reason
            FROM queue_entries e JOIN rounds r ON r.round_id = e.round_id
           WHERE e.player_id = $1 AND e.status = 'matched')
         UNION ALL
         (SELECT r.queue, r.round_id, r.committed_at, r.pool_size,
                 s.left_over -> $1 ->> 'outcome', NULL, NULL, s.left_over -> $1 ->> 'reason'
            FROM round_snapshots s JOIN rounds r USING (round_id)
           WHERE s.left_over ? $1)
         ORDER BY round_id DESC
         LIMIT $2",
    )
    .bind(player)
    .bind(rounds)
    .fetch_all(db)
    .await?;
    let entries: Vec<PlayerEntry> = sqlx::query_as(
        "SELECT entry_id, queue, status, reject_reason AS reason, enqueued_at, updated_at
           FROM queue_entries WHERE player_id = $1
          ORDER BY entry_id DESC LIMIT 5",
    )
    .bind(player)
    .fetch_all(db)
    .await?;
    Ok(Explanation {
        player: player.to_string(),
        rounds: rows,
        entries,
    })
}

/// The explanation as lines for a terminal.
pub fn render(e: &Explanation) -> String {
    let mut out = String::new();
    if e.rounds.is_empty() && e.entries.is_empty() {
        out.push_str(&format!("player {}: no entries and no rounds\n", e.player));
        return out;
    }
    let n = e.rounds.len();
    out.push_str(&format!(
        "player {}: {n} round{}, newest first\n",
        e.player,
        if n == 1 { "" } else { "s" }
    ));
    for r in &e.rounds {
        let what = match (r.outcome.as_str(), r.match_id) {
            ("matched", Some(m)) => {
                format!("matched: match {m}, team {}", r.team.unwrap_or_default())
            }
            (kind, _) => format!(
                "{kind}: {}",
                r.reason.as_deref().unwrap_or("(no reason stored)")
            ),
        };
        out.push_str(&format!(
            "  round {} · {} · {} · pool {} · {what}\n",
            r.round_id,
            r.queue,
            r.committed_at.format("%Y-%m-%d %H:%M:%S UTC"),
            r.pool_size
        ));
    }
    if !e.entries.is_empty() {
        out.push_str("latest entries\n");
        for x in &e.entries {
            out.push_str(&format!(
                "  entry {} · {} · {} since {} (enqueued {}){}\n",
                x.entry_id,
                x.queue,
                x.status,
                x.updated_at.format("%Y-%m-%d %H:%M:%S"),
                x.enqueued_at.format("%H:%M:%S"),
                x.reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ));
        }
    }
    out
}
