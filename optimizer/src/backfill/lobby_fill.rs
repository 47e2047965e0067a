//! Backfill of a big format's session (a 32v32 or a battle royale that lost players):
//! the nearest queued parties placed by the backfill's greedy (each into the open team
//! or squad with the least total skill), and the completed lobby judged as the round's
//! lobby path judges its own (`lobby::judge`: skill spread, ping at the lobby's region,
//! for two teams `equal_teams` and `premades`; the meeting rules and the floor in force).
//!
//! One fill is scored, as the small formats' greedy method scores one.

use super::{BackfillLimits, Candidate, Choice, Fill, Placed, Session, greedy_fill};
use crate::index::IndexedPool;
use crate::lobby::{self, score::Broken, score::Ctx};
use crate::model::QueueModel;
use crate::pool::Pool;
use crate::rebalance::Method;
use crate::round::MatchOutcome;

/// The greedy fill of `s` from the candidates `at` located, if the completed lobby keeps
/// every hard rule and scores at least `limits.min_score`.
pub(super) fn choose(
    s: &Session,
    pool: &Pool,
    fit: &[Candidate],
    model: &QueueModel,
    limits: &BackfillLimits,
    ix: &IndexedPool,
    at: &Placed,
) -> Result<(Fill, Vec<usize>), Choice> {
    let ctx = Ctx::new(ix, model);
    let Some(plan) = greedy_fill(&at.cand_units, s) else {
        return Err(Choice::Unfilled(format!(
            "the {} nearest queued parties do not fill the open slots {:?} (parties stay whole)",
            at.cand_units.len(),
            s.open
        )));
    };
    let mut teams: Vec<Vec<u32>> = vec![Vec::new(); model.teams];
    for (&u, &t) in at.base_units.iter().zip(&at.base_teams) {
        teams[t as usize].extend_from_slice(ix.members_of(u));
    }
    for &(c, t) in &plan {
        teams[t].extend_from_slice(ix.members_of(at.cand_units[c].0));
    }
    let players: Vec<u32> = teams.iter().flatten().copied().collect();
    let eval = ctx.evaluate(&players);
    let done = match eval.broken {
        Some(b) => Err(b),
        None => lobby::judge(&ctx, teams, &eval),
    }
    .map_err(|b| Choice::Unfilled(format!("the nearest fill breaks {}", broken(b))))?;
    if done.score < limits.min_score {
        return Err(Choice::Unfilled(format!(
            "the nearest fill scores {:.3}, below backfill.min_score {}",
            done.score, limits.min_score
        )));
    }
    let (added, taken) = at.added(&plan, pool, fit, model.teams);
    let f = &done.factors;
    let values = [f.equal_teams, f.equal_players, f.premades, f.enemy_ping];
    let outcome = MatchOutcome {
        teams: added,
        score: done.score,
        factors: ctx
            .enabled()
            .map(|(i, name)| (name.to_string(), values[i]))
            .collect(),
        roles: None,
        region: done.eval.region.map(|r| ix.regions[r].clone()),
        hosts: None,
        host: None,
        backup_host: None,
        relay: false,
        map: s.map.clone().filter(|m| model.maps.pool.contains(m)),
        map_vetoed_by: 0,
    };
    let fill = Fill {
        session: s.id.clone(),
        outcome,
        method: Method::Greedy,
        evaluated: 1,
    };
    Ok((fill, taken))
}

/// The hard rule a lobby breaks, for the session's reason.
fn broken(b: Broken) -> String {
    match b {
        Broken::Filter => "the queue's filters (same, crossplay)".into(),
        Broken::Avoid => "an avoid between two of its players".into(),
        Broken::Floor(key) => format!("the floor in force ({key})"),
    }
}
