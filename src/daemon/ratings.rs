//! Results applied to ratings, before each round of a rated queue: every reported result
//! of the queue's rating pool not yet applied moves its players' ratings, in report
//! order, in one transaction (see `db::ratings`). A leader that dies mid-way has applied
//! nothing; the next round, of this leader or another, applies it.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::config::RatingConfig;
use crate::db::DbError;
use crate::db::ratings::{self, PendingResult, RatingChange, StoredRating};
use matchmaker_optimizer::rating::{DEFAULT_VOLATILITY, Rating, RatingModel, Seat};

/// Results applied per transaction; the rest wait for the next call.
const BATCH: i64 = 2000;

/// What one call applied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    pub results: usize,
    /// Results the model could not rate (recorded in `match_results.rating_error`).
    pub refused: usize,
}

/// Apply the pending results of `queue`'s rating pool, at `now`, until none is left.
pub async fn apply_results(
    db: &PgPool,
    queue: &str,
    rating: &RatingConfig,
    now: DateTime<Utc>,
) -> Result<Applied, DbError> {
    let pool = rating.pool_name(queue);
    let model = rating.model();
    let mut total = Applied::default();
    loop {
        let mut tx = db.begin().await?;
        if !ratings::lock_pool(&mut tx, pool).await? {
            return Ok(total);
        }
        let (results, stored) = ratings::pending_results(&mut tx, pool, BATCH).await?;
        if results.is_empty() {
            return Ok(total);
        }
        let idle = |r: &StoredRating| {
            let idle = (now - r.updated_at).to_std().unwrap_or_default();
            idle.as_secs_f64() / rating.idle_to_initial.as_secs_f64()
        };
        let start: HashMap<(String, String), Rating> = stored
            .iter()
            .map(|(k, r)| {
                let held = Rating {
                    rating: r.rating,
                    uncertainty: r.uncertainty,
                    volatility: r.volatility,
                };
                (k.clone(), model.after_idle(held, idle(r)))
            })
            .collect();
        let (changes, applied, refused) = rate_in_order(&model, &results, start);
        ratings::write_applied(&mut tx, pool, &changes, &applied, &refused, now).await?;
        tx.commit().await?;
        for (match_id, why) in &refused {
            tracing::warn!(queue, pool, match_id, reason = %why, "a result moved no rating");
        }
        super::metrics::record_results_applied(pool, applied.len(), refused.len());
        total.results += applied.len();
        total.refused += refused.len();
        if results.len() < BATCH as usize {
            return Ok(total);
        }
    }
}

/// The results one after the other, each from the ratings the ones before left: the
/// changes, the results rated and those the model refused (with why).
fn rate_in_order(
    model: &RatingModel,
    results: &[PendingResult],
    mut current: HashMap<(String, String), Rating>,
) -> (Vec<RatingChange>, Vec<i64>, Vec<(i64, String)>) {
    let mut changes = Vec::new();
    let mut applied = Vec::new();
    let mut refused = Vec::new();
    for result in results {
        // Seats by team, teams in ascending order (the order of team_ranks).
        let mut teams: Vec<(i32, Vec<&ratings::ResultSeat>)> = Vec::new();
        for s in &result.seats {
            match teams.iter_mut().find(|(t, _)| *t == s.team) {
                Some((_, seats)) => seats.push(s),
                None => teams.push((s.team, vec![s])),
            }
        }
        teams.sort_by_key(|(t, _)| *t);
        let rating_of = |s: &ratings::ResultSeat| {
            current
                .get(&(s.owner.clone(), s.player_id.clone()))
                .copied()
                .unwrap_or_else(|| model.initial())
        };
        let seats: Vec<Vec<Seat>> = teams
            .iter()
            .map(|(_, t)| {
                t.iter()
                    .map(|s| Seat {
                        rating: rating_of(s),
                        left_early: s.left_early,
                    })
                    .collect()
            })
            .collect();
        let ranks: Vec<u32> = result
            .team_ranks
            .iter()
            .map(|&r| u32::try_from(r).unwrap_or(0))
            .collect();
        match model.rate(&seats, &ranks) {
            Ok(after) => {
                for ((_, team), (seats, after)) in teams.iter().zip(seats.iter().zip(after)) {
                    for ((s, seat), new) in team.iter().zip(seats).zip(after) {
                        changes.push(RatingChange {
                            match_id: result.match_id,
                            entry_id: s.entry_id,
                            owner: s.owner.clone(),
                            player_id: s.player_id.clone(),
                            team: s.team,
                            left_early: s.left_early,
                            before: (seat.rating.rating, seat.rating.uncertainty),
                            after: (new.rating, new.uncertainty),
                            volatility: if new.volatility.is_finite() {
                                new.volatility
                            } else {
                                DEFAULT_VOLATILITY
                            },
                        });
                        current.insert((s.owner.clone(), s.player_id.clone()), new);
                    }
                }
                applied.push(result.match_id);
            }
            Err(e) => refused.push((result.match_id, e.to_string())),
        }
    }
    (changes, applied, refused)
}
