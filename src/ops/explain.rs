//! `matchmaker explain PLAYER`: a player's last rounds and why.
//!
//! For each round that pooled the player, newest first: the queue and round, the pool's
//! size, and matched (match id, team) or what became of them and why (no valid match,
//! outscored, party sat out, rejected, left during the solve...: `round_snapshots`).
//! Then the player's latest entries (queued, cancelled, expired,
//! withdrawn...), which say what happened outside rounds, and the player's built-in
//! ratings with how their last results moved them: a player whose rating jumps by a
//! large step at each result is one the model is still learning (a new account, a
//! returning player). The rows come from [`crate::db::explain`].

use serde::Serialize;
use sqlx::PgPool;

use crate::db::explain;
pub use crate::db::explain::{PlayerEntry, PlayerRating, PlayerRound};
use crate::ops::require_ops_database;

#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub player: String,
    pub rounds: Vec<PlayerRound>,
    pub entries: Vec<PlayerEntry>,
    pub ratings: Vec<PlayerRating>,
}

/// Whose rounds to explain.
#[derive(Debug, Clone)]
pub struct ExplainOptions {
    pub player: String,
    /// How many of the player's rounds.
    pub rounds: i64,
}

/// `matchmaker explain`: the login and schema checked, then [`explain_player`].
pub async fn explain(db: &PgPool, options: &ExplainOptions) -> anyhow::Result<Explanation> {
    require_ops_database(db, "explain").await?;
    Ok(explain_player(db, &options.player, options.rounds).await?)
}

/// The player's last `rounds` rounds and latest entries.
pub async fn explain_player(
    db: &PgPool,
    player: &str,
    rounds: i64,
) -> Result<Explanation, sqlx::Error> {
    let rows = explain::read_player_rounds(db, player, rounds).await?;
    let entries = explain::read_player_entries(db, player).await?;
    let ratings = explain::read_player_ratings(db, player).await?;
    Ok(Explanation {
        player: player.to_string(),
        rounds: rows,
        entries,
        ratings,
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
    for r in &e.ratings {
        let moves: Vec<String> = r
            .recent
            .iter()
            .map(|(m, before, after, left)| {
                format!(
                    "match {m} {:+.0}{}",
                    after - before,
                    if *left { " (left early)" } else { "" }
                )
            })
            .collect();
        out.push_str(&format!(
            "rating in pool {} (login {}): {:.0} ± {:.0} after {} match{} ({})\n",
            r.pool,
            r.owner,
            r.rating,
            r.uncertainty,
            r.matches,
            if r.matches == 1 { "" } else { "es" },
            if moves.is_empty() {
                "no result applied yet".to_string()
            } else {
                format!("last results, newest first: {}", moves.join(", "))
            }
        ));
    }
    out
}
