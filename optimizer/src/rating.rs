//! Built-in ratings (beyond the seeds, which take skill as given): a match's result moves
//! the ratings of its players, through the `skillratings` crate.
//!
//! Three systems, each on the queue's own skill scale (`initial` and
//! `initial_uncertainty` are a new player's rating and uncertainty on it):
//! - `weng_lin`: OpenSkill's Bradley-Terry model, made for teams and free-for-all;
//! - `trueskill`: TrueSkill's factor graph, with a draw probability and a dynamics factor;
//! - `glicko2`: Glicko-2, a one-on-one system; a team player meets each other team as one
//!   composite opponent (its mean rating and root-mean-square deviation). Its own scale is
//!   1500 / 350: ratings are mapped onto it and back.
//!
//! A player who left early loses as if their team had finished last, whatever the team
//! did; their team-mates are rated by the team's place. An idle player's uncertainty grows
//! back toward the initial uncertainty ([`RatingModel::after_idle`]), so a returning
//! player moves fast again, as a new one does: a strong player on a fresh account starts
//! at the initial uncertainty and climbs in a few matches (`tests/it/rating.rs` measures
//! how many).

use serde::{Deserialize, Serialize};
use skillratings::{
    MultiTeamOutcome, Outcomes,
    glicko2::{Glicko2Config, Glicko2Rating, glicko2_rating_period},
    trueskill::{TrueSkillConfig, TrueSkillRating, trueskill_multi_team},
    weng_lin::{
        WengLinConfig, WengLinRating, expected_score_multi_team, expected_score_two_teams,
        weng_lin_multi_team,
    },
};

/// The rating system of a queue's `[queues.NAME.rating]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RatingSystem {
    WengLin,
    Glicko2,
    #[serde(rename = "trueskill")]
    TrueSkill,
}

impl RatingSystem {
    pub fn as_str(self) -> &'static str {
        match self {
            RatingSystem::WengLin => "weng_lin",
            RatingSystem::Glicko2 => "glicko2",
            RatingSystem::TrueSkill => "trueskill",
        }
    }
}

/// A rating system and its scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatingModel {
    pub system: RatingSystem,
    /// A new player's rating.
    pub initial: f64,
    /// A new player's uncertainty (sigma; Glicko's deviation), the largest any has.
    pub initial_uncertainty: f64,
    /// Skill points of one class: a player this much better wins about two in three
    /// (Weng-Lin, TrueSkill; Glicko-2 has its own).
    pub beta: f64,
    /// TrueSkill: the chance of a draw.
    pub draw_probability: f64,
}

/// A player's rating as stored: `volatility` is Glicko-2's (the others keep its default).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rating {
    pub rating: f64,
    pub uncertainty: f64,
    pub volatility: f64,
}

/// Glicko-2's default volatility.
pub const DEFAULT_VOLATILITY: f64 = 0.06;

/// One player of a result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seat {
    pub rating: Rating,
    pub left_early: bool,
}

/// A result the model cannot rate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RatingError {
    #[error("a result needs at least two teams, each with a player")]
    TooFewTeams,
    #[error("{ranks} ranks for {teams} teams")]
    RankCount { ranks: usize, teams: usize },
    #[error("rank {0} is not 1 or more")]
    BadRank(u32),
    #[error("rating {0} is not a finite number")]
    NotFinite(f64),
}

impl RatingModel {
    /// A new player's rating.
    pub fn initial(&self) -> Rating {
        Rating {
            rating: self.initial,
            uncertainty: self.initial_uncertainty,
            volatility: DEFAULT_VOLATILITY,
        }
    }

    /// `r` after `idle_share` of the time in which an idle player's uncertainty grows back
    /// to the initial one: the variance grows linearly with idle time (Glicko's rule),
    /// capped at the initial uncertainty.
    pub fn after_idle(&self, r: Rating, idle_share: f64) -> Rating {
        let share = idle_share.clamp(0.0, 1.0);
        let grown = (r.uncertainty.powi(2) + self.initial_uncertainty.powi(2) * share).sqrt();
        Rating {
            uncertainty: grown.min(self.initial_uncertainty).max(r.uncertainty),
            ..r
        }
    }

    /// The ratings after one result: `teams[k]` its k-th team's players, `ranks[k]` that
    /// team's place (1 best; equal ranks a draw). Same shape as `teams`.
    pub fn rate(
        &self,
        teams: &[Vec<Seat>],
        ranks: &[u32],
    ) -> Result<Vec<Vec<Rating>>, RatingError> {
        if teams.len() < 2 || teams.iter().any(|t| t.is_empty()) {
            return Err(RatingError::TooFewTeams);
        }
        if ranks.len() != teams.len() {
            return Err(RatingError::RankCount {
                ranks: ranks.len(),
                teams: teams.len(),
            });
        }
        if let Some(&bad) = ranks.iter().find(|&&r| r == 0) {
            return Err(RatingError::BadRank(bad));
        }
        for s in teams.iter().flatten() {
            for v in [s.rating.rating, s.rating.uncertainty] {
                if !v.is_finite() {
                    return Err(RatingError::NotFinite(v));
                }
            }
        }
        let ratings: Vec<Vec<Rating>> = teams
            .iter()
            .map(|t| t.iter().map(|s| s.rating).collect())
            .collect();
        let mut after = self.rate_ranks(&ratings, ranks);
        // A leaver loses as if their team finished last: the same result with their team
        // put below every other (unless it already is, alone).
        let worst = ranks.iter().copied().max().unwrap_or(1);
        let alone_last =
            |k: usize| ranks[k] == worst && ranks.iter().filter(|&&r| r == worst).count() == 1;
        for (k, team) in teams.iter().enumerate() {
            if team.iter().any(|s| s.left_early) && !alone_last(k) {
                let mut as_last = ranks.to_vec();
                as_last[k] = worst + 1;
                let lost = self.rate_ranks(&ratings, &as_last);
                for (i, s) in team.iter().enumerate() {
                    if s.left_early {
                        after[k][i] = lost[k][i];
                    }
                }
            }
        }
        Ok(after)
    }

    fn rate_ranks(&self, teams: &[Vec<Rating>], ranks: &[u32]) -> Vec<Vec<Rating>> {
        match self.system {
            RatingSystem::WengLin => {
                let config = WengLinConfig {
                    beta: self.beta,
                    ..WengLinConfig::new()
                };
                let wl: Vec<Vec<WengLinRating>> = teams
                    .iter()
                    .map(|t| t.iter().map(|r| to_weng_lin(*r)).collect())
                    .collect();
                let input: Vec<(&[WengLinRating], MultiTeamOutcome)> = wl
                    .iter()
                    .zip(ranks)
                    .map(|(t, &r)| (t.as_slice(), MultiTeamOutcome::new(r as usize)))
                    .collect();
                let out = weng_lin_multi_team(&input, &config);
                zip_back(teams, out, |old, new: &WengLinRating| Rating {
                    rating: new.rating,
                    uncertainty: new.uncertainty,
                    ..old
                })
            }
            RatingSystem::TrueSkill => {
                let config = TrueSkillConfig {
                    draw_probability: self.draw_probability,
                    beta: self.beta,
                    dynamics_factor: self.initial_uncertainty / 100.0,
                };
                let ts: Vec<Vec<TrueSkillRating>> = teams
                    .iter()
                    .map(|t| {
                        t.iter()
                            .map(|r| TrueSkillRating {
                                rating: r.rating,
                                uncertainty: r.uncertainty,
                            })
                            .collect()
                    })
                    .collect();
                let input: Vec<(&[TrueSkillRating], MultiTeamOutcome)> = ts
                    .iter()
                    .zip(ranks)
                    .map(|(t, &r)| (t.as_slice(), MultiTeamOutcome::new(r as usize)))
                    .collect();
                match trueskill_multi_team(&input, &config, None) {
                    Ok(out) => zip_back(teams, out, |old, new: &TrueSkillRating| Rating {
                        rating: new.rating,
                        uncertainty: new.uncertainty,
                        ..old
                    }),
                    // Without weights the crate has nothing to refuse.
                    Err(_) => teams.to_vec(),
                }
            }
            RatingSystem::Glicko2 => self.rate_glicko2(teams, ranks),
        }
    }

    /// Glicko-2 for teams: each player against every other team as one composite
    /// opponent, all in one rating period.
    fn rate_glicko2(&self, teams: &[Vec<Rating>], ranks: &[u32]) -> Vec<Vec<Rating>> {
        let to = |r: &Rating| Glicko2Rating {
            rating: 1500.0 + (r.rating - self.initial) * self.glicko_scale(),
            deviation: r.uncertainty * self.glicko_scale(),
            volatility: r.volatility,
        };
        let composites: Vec<Glicko2Rating> = teams
            .iter()
            .map(|t| {
                let g: Vec<Glicko2Rating> = t.iter().map(to).collect();
                let n = g.len() as f64;
                Glicko2Rating {
                    rating: g.iter().map(|r| r.rating).sum::<f64>() / n,
                    deviation: (g.iter().map(|r| r.deviation.powi(2)).sum::<f64>() / n).sqrt(),
                    volatility: g.iter().map(|r| r.volatility).sum::<f64>() / n,
                }
            })
            .collect();
        let config = Glicko2Config::new();
        teams
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let results: Vec<(Glicko2Rating, Outcomes)> = composites
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != k)
                    .map(|(j, c)| {
                        let outcome = match ranks[k].cmp(&ranks[j]) {
                            std::cmp::Ordering::Less => Outcomes::WIN,
                            std::cmp::Ordering::Equal => Outcomes::DRAW,
                            std::cmp::Ordering::Greater => Outcomes::LOSS,
                        };
                        (*c, outcome)
                    })
                    .collect();
                t.iter()
                    .map(|r| {
                        let new = glicko2_rating_period(&to(r), &results, &config);
                        Rating {
                            rating: self.initial + (new.rating - 1500.0) / self.glicko_scale(),
                            uncertainty: new.deviation / self.glicko_scale(),
                            volatility: new.volatility,
                        }
                    })
                    .collect()
            })
            .collect()
    }

    fn glicko_scale(&self) -> f64 {
        350.0 / self.initial_uncertainty
    }

    /// Each team's predicted chance to win (Weng-Lin's Bradley-Terry model, with this
    /// model's beta), summing to 1.
    pub fn win_probabilities(&self, teams: &[Vec<Rating>]) -> Vec<f64> {
        let skills: Vec<Vec<(f64, f64)>> = teams
            .iter()
            .map(|t| t.iter().map(|r| (r.rating, r.uncertainty)).collect())
            .collect();
        win_probabilities(&skills, self.beta)
    }
}

/// Each team's predicted chance to win from its players' (skill, uncertainty), by Weng-Lin's
/// Bradley-Terry model with `beta` skill points per class; sums to 1 (two teams: the
/// crate's two-team expectation; more: its multi-team one, normalised).
pub fn win_probabilities(teams: &[Vec<(f64, f64)>], beta: f64) -> Vec<f64> {
    let config = WengLinConfig {
        beta,
        ..WengLinConfig::new()
    };
    let wl: Vec<Vec<WengLinRating>> = teams
        .iter()
        .map(|t| {
            t.iter()
                .map(|&(rating, uncertainty)| WengLinRating {
                    rating,
                    uncertainty,
                })
                .collect()
        })
        .collect();
    if wl.len() == 2 {
        let (a, b) = expected_score_two_teams(&wl[0], &wl[1], &config);
        return vec![a, b];
    }
    let refs: Vec<&[WengLinRating]> = wl.iter().map(Vec::as_slice).collect();
    let p = expected_score_multi_team(&refs, &config);
    let total: f64 = p.iter().sum();
    if total > 0.0 {
        p.iter().map(|x| x / total).collect()
    } else {
        vec![1.0 / wl.len() as f64; wl.len()]
    }
}

fn to_weng_lin(r: Rating) -> WengLinRating {
    WengLinRating {
        rating: r.rating,
        uncertainty: r.uncertainty,
    }
}

fn zip_back<T>(
    old: &[Vec<Rating>],
    new: Vec<Vec<T>>,
    f: impl Fn(Rating, &T) -> Rating,
) -> Vec<Vec<Rating>> {
    old.iter()
        .zip(new)
        .map(|(o, n)| o.iter().zip(&n).map(|(o, n)| f(*o, n)).collect())
        .collect()
}
