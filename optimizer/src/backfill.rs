//! Backfill of running sessions (AccelByte's rebalance guide: "backfill proposal to a session with minimum 1
//! player member"): choose whole parties of the round's pool to fill a
//! session's open slots, its members fixed on their teams.
//!
//! Each completed session is scored with the queue's own match score (`Scorer`: the same
//! factors, weights and hosts rule as a new match), the session's members and the
//! candidates placed on the given teams (`Scorer::evaluate_fixed`). Which fills are tried
//! follows the AccelByte guide's methods, chosen as [`rebalance::choose_method`] does for the queue's
//! format: **combination** (queues of at most 12 players) fills the teams "vertically",
//! team by team, from every combination of the nearest candidates that fills each team
//! exactly, and keeps the best score; **greedy** (larger queues, or more combinations
//! than [`MAX_COMBINATIONS`]) takes the nearest candidates one by one, each into the open
//! team with the least total skill that has room (the seed's rule), and scores that fill.
//!
//! A big format's session (`QueueModel::is_big`) takes the greedy fill and is judged by
//! the lobby path's score and rules (`lobby_fill`).
//!
//! Bounded work: at most [`MAX_CANDIDATES`] parties per session (in a big format, that
//! many more than its open slots), the nearest by mean skill to the session's members,
//! ties by pool order (the oldest first), and at most
//! `MAX_COMBINATIONS` scored fills. Sessions are filled one after another in the order
//! given (the oldest request first); a party used by one is gone for the next and for the
//! round's search. Deterministic: no randomness, every tie broken by input order.

mod lobby_fill;

use std::collections::{BTreeMap, HashSet};

use super::error::PoolError;
use super::index::IndexedPool;
use super::model::{Network, QueueModel};
use super::pool::{Player, Pool};
use super::rebalance::{self, Alliance, Method};
use super::round::MatchOutcome;
use super::score::{MatchEval, Scorer};

/// Parties considered per session (the nearest by skill).
pub const MAX_CANDIDATES: usize = 12;
/// Fills scored per session by the combination method; past it, greedy.
pub const MAX_COMBINATIONS: usize = 5_000;

/// A running session asking for players.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// The request's key (the caller's session id, or the request id).
    pub id: String,
    /// The session's members, per team (fixed: never moved).
    pub teams: Vec<Vec<Player>>,
    /// Open slots per team.
    pub open: Vec<usize>,
    /// The map the session is played on, in a queue with maps: nobody who vetoes it
    /// joins, and the maps factor rates it. None: the session did not say (the factor
    /// rates the best map of the completed session, and the fill names none).
    pub map: Option<String>,
}

/// What the backfill may accept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackfillLimits {
    /// A fill whose completed session scores below this is not made.
    pub min_score: f64,
}

impl Default for BackfillLimits {
    fn default() -> Self {
        BackfillLimits { min_score: 0.0 }
    }
}

/// A session filled.
#[derive(Debug, Clone, PartialEq)]
pub struct Fill {
    pub session: String,
    /// The match as the commit writes it: `teams` holds only the added players, at the
    /// session's team indices (teams without open slots are empty); score, factors and
    /// hosts are the completed session's.
    pub outcome: MatchOutcome,
    pub method: Method,
    /// Fills scored for this session.
    pub evaluated: usize,
}

/// A session left open, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfilled {
    pub session: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BackfillOutcome {
    pub fills: Vec<Fill>,
    pub unfilled: Vec<Unfilled>,
    /// The pool without the players the fills took: what the round's search gets.
    pub rest: Pool,
}

/// A party of the pool: its members (indices into `pool.players`).
struct Candidate {
    members: Vec<usize>,
    skill: f64,
}

/// Fill `sessions` from `pool`, one after the other.
pub fn fill_sessions(
    sessions: &[Session],
    pool: &Pool,
    model: &QueueModel,
    limits: &BackfillLimits,
) -> Result<BackfillOutcome, PoolError> {
    model.validate()?;
    let mut used = vec![false; pool.players.len()];
    let mut fills = Vec::new();
    let mut unfilled = Vec::new();
    for s in sessions {
        match fill_one(s, pool, &used, model, limits) {
            Ok((fill, taken)) => {
                for i in taken {
                    used[i] = true;
                }
                fills.push(fill);
            }
            Err(reason) => unfilled.push(Unfilled {
                session: s.id.clone(),
                reason,
            }),
        }
    }
    let mut rest = pool.clone();
    let mut i = 0;
    rest.players.retain(|_| {
        i += 1;
        !used[i - 1]
    });
    Ok(BackfillOutcome {
        fills,
        unfilled,
        rest,
    })
}

/// The method AccelByte's rebalance guide uses for a strict format of this size (the queue's full format):
/// combination up to 12 players, greedy above.
pub fn method_for(model: &QueueModel) -> Method {
    let strict = Alliance {
        min_number: model.teams,
        max_number: model.teams,
        player_min_number: model.team_size,
        player_max_number: model.team_size,
    };
    rebalance::choose_method(&strict, false)
}

fn fill_one(
    s: &Session,
    pool: &Pool,
    used: &[bool],
    model: &QueueModel,
    limits: &BackfillLimits,
) -> Result<(Fill, Vec<usize>), String> {
    check_format(s, model)?;
    // A session on a map of the pool is scored on that map alone. A map the pool no
    // longer lists (a reload retired it) is no map.
    let on_map = s.map.as_ref().filter(|m| model.maps.pool.contains(m));
    let queue = model;
    let narrowed;
    let model = match on_map {
        Some(m) => {
            narrowed = on_one_map(model, m);
            &narrowed
        }
        None => model,
    };
    let members: HashSet<&str> = s.teams.iter().flatten().map(|p| p.id.as_str()).collect();
    let all = candidates(pool, used, &members);
    if all.is_empty() {
        return Err("no queued player to fill it (the pool is empty)".into());
    }
    let widest = *s.open.iter().max().expect("checked: teams >= 2");
    // Hard rules the members set before any scoring: the `same` values and a
    // crossplay opt-out's platform, and the avoids (any scope: a member's team is
    // fixed, so the candidate's team is still open).
    let session: Vec<&Player> = s.teams.iter().flatten().collect();
    let mut fit: Vec<Candidate> = all
        .into_iter()
        .filter(|c| c.members.len() <= widest)
        .collect();
    if fit.is_empty() {
        return Err(format!(
            "no party fits the open slots {:?}: every queued party is larger than {widest}",
            s.open
        ));
    }
    if let Some(m) = on_map {
        fit.retain(|c| {
            c.members
                .iter()
                .all(|&i| !vetoes(queue, &pool.players[i], m))
        });
        if fit.is_empty() {
            return Err(format!(
                "every queued party that fits has a player who vetoes the session's map {m}"
            ));
        }
    }
    fit.retain(|c| {
        c.members
            .iter()
            .all(|&i| may_join(model, &session, &pool.players[i]))
    });
    if fit.is_empty() {
        return Err(
            "no queued party the queue's filters and the players' avoids let meet the session"
                .into(),
        );
    }
    // The nearest by mean skill to the session (the factors decide among them).
    let n: usize = s.teams.iter().map(Vec::len).sum();
    let mean = s.teams.iter().flatten().map(|p| p.skill).sum::<f64>() / n as f64;
    fit.sort_by(|a, b| (a.skill - mean).abs().total_cmp(&(b.skill - mean).abs()));
    fit.truncate(candidates_for(s, model));

    let mut last_error = None;
    // A candidate the core refuses as malformed is dropped and the rest tried again.
    for _ in 0..=MAX_CANDIDATES {
        match choose(s, pool, &fit, model, limits) {
            Ok(done) => return Ok(done),
            Err(Choice::Malformed(id, why)) => {
                let before = fit.len();
                fit.retain(|c| c.members.iter().all(|&i| pool.players[i].id != id));
                if fit.len() == before {
                    return Err(format!("the session cannot be scored: {why}"));
                }
                last_error = Some(why);
            }
            Err(Choice::Unfilled(reason)) => return Err(reason),
        }
    }
    Err(format!(
        "the candidates cannot be scored: {}",
        last_error.unwrap_or_default()
    ))
}

/// Parties considered for `s`: [`MAX_CANDIDATES`], and in a big format as many more as
/// it has open slots (a 32v32 that lost ten players needs ten solos at least).
fn candidates_for(s: &Session, model: &QueueModel) -> usize {
    if model.is_big() {
        MAX_CANDIDATES + s.open.iter().sum::<usize>()
    } else {
        MAX_CANDIDATES
    }
}

/// The queue's model with the session's map as its whole pool: the maps factor then
/// rates that map. Vetoes are checked against the whole pool before scoring
/// ([`vetoes`]): a pool of one map has none to spare.
fn on_one_map(model: &QueueModel, map: &str) -> QueueModel {
    let mut one = model.clone();
    one.maps.pool = vec![map.to_string()];
    one.maps.vetoes = 0;
    one
}

/// Whether `p` vetoes `map`, as the queue counts vetoes: names of its pool, the first
/// `maps.vetoes` of them. A session's map is never relaxed: the session is already on it.
fn vetoes(model: &QueueModel, p: &Player, map: &str) -> bool {
    p.attributes
        .get(crate::maps::VETO_ATTRIBUTE)
        .map_or(&[][..], |a| a.values())
        .iter()
        .filter(|n| model.maps.pool.contains(*n))
        .take(model.maps.vetoes)
        .any(|n| n == map)
}

/// Whether a candidate may join the session's members as far as the `same` filter,
/// crossplay and match-scope avoids go (team-scope avoids and floors are left to the
/// fill's evaluation, which knows the teams).
fn may_join(model: &QueueModel, session: &[&Player], p: &Player) -> bool {
    use super::index::same_values;
    let f = &model.filters;
    if let Some(first) = session.first()
        && !f.same.is_empty()
        && same_values(first, &f.same) != same_values(p, &f.same)
    {
        return false;
    }
    if let Some(attr) = &f.crossplay {
        let off = |q: &Player| {
            q.attributes
                .get("crossplay")
                .is_some_and(|a| a.values() == ["off"])
        };
        let platform = |q: &Player| q.attributes.get(attr).map(|a| a.values().to_vec());
        let mine = platform(p);
        if session
            .iter()
            .any(|q| (off(p) || off(q)) && platform(q) != mine)
        {
            return false;
        }
    }
    if model.avoids.scope == super::model::AvoidScope::Match {
        let listed = |a: &Player, b: &Player| {
            a.avoids
                .iter()
                .take(model.avoids.max_per_player)
                .any(|x| *x == b.id)
        };
        if session.iter().any(|q| listed(q, p) || listed(p, q)) {
            return false;
        }
    }
    true
}

/// The completed session must be the queue's full format.
fn check_format(s: &Session, model: &QueueModel) -> Result<(), String> {
    if s.teams.len() != model.teams || s.open.len() != model.teams {
        return Err(format!(
            "the session has {} teams and {} open-slot counts; the queue has {} teams",
            s.teams.len(),
            s.open.len(),
            model.teams
        ));
    }
    if s.open.iter().all(|&o| o == 0) {
        return Err("the session has no open slot".into());
    }
    for (t, (members, open)) in s.teams.iter().zip(&s.open).enumerate() {
        if members.len() + open != model.team_size {
            return Err(format!(
                "team {t} has {} members and {open} open slots; the queue's teams have {}",
                members.len(),
                model.team_size
            ));
        }
    }
    Ok(())
}

/// The pool's parties not yet used and without a session member, in pool order.
fn candidates(pool: &Pool, used: &[bool], members: &HashSet<&str>) -> Vec<Candidate> {
    let mut by_party: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out: Vec<Candidate> = Vec::new();
    let mut excluded: HashSet<usize> = HashSet::new();
    for (i, p) in pool.players.iter().enumerate() {
        let slot = match p.party.as_deref() {
            Some(party) => *by_party.entry(party).or_insert_with(|| {
                out.push(Candidate {
                    members: Vec::new(),
                    skill: 0.0,
                });
                out.len() - 1
            }),
            None => {
                out.push(Candidate {
                    members: Vec::new(),
                    skill: 0.0,
                });
                out.len() - 1
            }
        };
        out[slot].members.push(i);
        if used[i] || members.contains(p.id.as_str()) {
            excluded.insert(slot);
        }
    }
    out.into_iter()
        .enumerate()
        .filter(|(slot, _)| !excluded.contains(slot))
        .map(|(_, mut c)| {
            c.skill = c
                .members
                .iter()
                .map(|&i| pool.players[i].skill)
                .sum::<f64>()
                / c.members.len() as f64;
            c
        })
        .collect()
}

enum Choice {
    /// A player the core refuses (id, message).
    Malformed(String, String),
    Unfilled(String),
}

/// Score the fills of the chosen method; the best one.
fn choose(
    s: &Session,
    pool: &Pool,
    fit: &[Candidate],
    model: &QueueModel,
    limits: &BackfillLimits,
) -> Result<(Fill, Vec<usize>), Choice> {
    let mini = session_pool(s, pool, fit);
    let ix = IndexedPool::build(&mini, model).map_err(|e| match e {
        PoolError::Player { ref id, .. } => Choice::Malformed(id.clone(), e.to_string()),
        other => Choice::Unfilled(format!("the session cannot be scored: {other}")),
    })?;
    let at = Placed::find(s, &mini, &ix, fit)?;
    if model.is_big() {
        return lobby_fill::choose(s, pool, fit, model, limits, &ix, &at);
    }
    let sc = Scorer::new(&ix, model);
    let fills = Fills { sc: &sc, at };
    let search = fills.search(s, model);
    let Some((score, plan)) = search.best else {
        return Err(Choice::Unfilled(fills.no_fill_reason(
            s,
            model,
            search.any_exact,
        )));
    };
    if score < limits.min_score {
        return Err(Choice::Unfilled(format!(
            "the best fill scores {score:.3}, below backfill.min_score {}",
            limits.min_score
        )));
    }
    let map = s.map.clone().filter(|m| model.maps.pool.contains(m));
    let (outcome, taken) = fills.outcome(&plan, pool, fit, model, map);
    Ok((
        Fill {
            session: s.id.clone(),
            outcome,
            method: search.method,
            evaluated: search.evaluated,
        },
        taken,
    ))
}

/// The session's members (solos: their teams are fixed anyway) then the candidates'
/// players, as one pool to score.
fn session_pool(s: &Session, pool: &Pool, fit: &[Candidate]) -> Pool {
    let mut players: Vec<Player> = s
        .teams
        .iter()
        .flatten()
        .map(|p| Player {
            party: None,
            enqueued_at: None,
            ..p.clone()
        })
        .collect();
    for c in fit {
        players.extend(c.members.iter().map(|&i| pool.players[i].clone()));
    }
    Pool {
        queue: pool.queue.clone(),
        now: pool.now,
        players,
        history: pool.history.clone(),
    }
}

/// The session's fixed units on their teams and the candidates as units.
struct Placed {
    base_units: Vec<u32>,
    base_teams: Vec<u8>,
    /// (unit, size, skill, index into the candidates); a rejected party has none.
    cand_units: Vec<(u32, usize, f64, usize)>,
}

/// The session's fills, scored with the small formats' match score.
struct Fills<'a> {
    sc: &'a Scorer<'a>,
    at: Placed,
}

/// What the search of one method found.
struct Search {
    method: Method,
    evaluated: usize,
    /// The best valid fill: its score and (candidate, team) pairs.
    best: Option<(f64, Vec<(usize, usize)>)>,
    /// Some fill filled the open slots exactly (valid or not).
    any_exact: bool,
}

impl Placed {
    /// Find the units of `mini` (the session's pool): the members first, on their
    /// teams, then the candidates in order.
    fn find(
        s: &Session,
        mini: &Pool,
        ix: &IndexedPool,
        fit: &[Candidate],
    ) -> Result<Placed, Choice> {
        let unit_of_source = |source: usize| -> Option<u32> {
            ix.source
                .iter()
                .position(|&x| x == source)
                .map(|p| ix.unit_of[p])
        };
        let mut base_units = Vec::new();
        let mut base_teams = Vec::new();
        let mut k = 0;
        for (t, team) in s.teams.iter().enumerate() {
            for _ in team {
                let u = unit_of_source(k).ok_or_else(|| {
                    Choice::Unfilled(format!(
                        "session member {} cannot play in this queue: {}",
                        mini.players[k].id,
                        ix.rejected
                            .iter()
                            .find(|r| r.id == mini.players[k].id)
                            .map_or("rejected", |r| r.reason.as_str())
                    ))
                })?;
                base_units.push(u);
                base_teams.push(t as u8);
                k += 1;
            }
        }
        let mut cand_units = Vec::new();
        let mut source = k;
        for (ci, c) in fit.iter().enumerate() {
            if let Some(u) = unit_of_source(source) {
                cand_units.push((u, c.members.len(), c.skill, ci));
            }
            source += c.members.len();
        }
        if cand_units.is_empty() {
            return Err(Choice::Unfilled(
                "no queued party can play in this queue's format".into(),
            ));
        }
        Ok(Placed {
            base_units,
            base_teams,
            cand_units,
        })
    }

    /// The players `plan`'s (candidate, team) pairs add, per team of `teams`, and their
    /// indices in `pool`.
    fn added(
        &self,
        plan: &[(usize, usize)],
        pool: &Pool,
        fit: &[Candidate],
        teams: usize,
    ) -> (Vec<Vec<String>>, Vec<usize>) {
        let mut added = vec![Vec::new(); teams];
        let mut taken = Vec::new();
        for &(c, t) in plan {
            for &i in &fit[self.cand_units[c].3].members {
                added[t].push(pool.players[i].id.clone());
                taken.push(i);
            }
        }
        (added, taken)
    }
}

impl Fills<'_> {
    /// The completed session with `assign`'s (candidate, team) pairs, if valid: its
    /// evaluation and units.
    fn score(&self, assign: &[(usize, usize)]) -> Option<(MatchEval, Vec<u32>)> {
        let mut units = self.at.base_units.clone();
        let mut teams = self.at.base_teams.clone();
        for &(c, t) in assign {
            units.push(self.at.cand_units[c].0);
            teams.push(t as u8);
        }
        self.sc
            .evaluate_fixed(&units, &teams)
            .filter(|e| e.valid())
            .map(|e| (e, units))
    }

    /// Combination (every exact fill, the best kept) while the combinations stay
    /// within [`MAX_COMBINATIONS`], else greedy (one fill).
    fn search(&self, s: &Session, model: &QueueModel) -> Search {
        let mut method = method_for(model);
        let mut evaluated = 0usize;
        let mut best: Option<(f64, Vec<(usize, usize)>)> = None;
        let mut any_exact = false;
        if method == Method::Combination {
            let sizes: Vec<usize> = self.at.cand_units.iter().map(|c| c.1).collect();
            let mut plans = Vec::new();
            let complete = fill_vertically(&sizes, &s.open, MAX_COMBINATIONS, &mut plans);
            if complete {
                any_exact = !plans.is_empty();
                for plan in &plans {
                    evaluated += 1;
                    if let Some((e, _)) = self.score(plan)
                        && best.as_ref().is_none_or(|(b, _)| e.score > *b)
                    {
                        best = Some((e.score, plan.clone()));
                    }
                }
            } else {
                method = Method::Greedy;
            }
        }
        if method == Method::Greedy {
            let plan = greedy_fill(&self.at.cand_units, s);
            if let Some(plan) = plan {
                any_exact = true;
                evaluated += 1;
                if let Some((e, _)) = self.score(&plan) {
                    best = Some((e.score, plan));
                }
            }
        }
        Search {
            method,
            evaluated,
            best,
            any_exact,
        }
    }

    /// Why no fill was made: every exact fill broke a hard rule, or none was exact.
    fn no_fill_reason(&self, s: &Session, model: &QueueModel, any_exact: bool) -> String {
        let n = self.at.cand_units.len();
        if !any_exact {
            return format!(
                "no combination of the {n} nearest queued parties fills the open slots {:?} exactly (parties stay whole)",
                s.open
            );
        }
        match model.network {
            Network::PeerToPeer => format!(
                "every fill of the {n} nearest parties breaks a hard rule (nobody could host within hosts.max_ping_ms, or strict roles)"
            ),
            Network::Dedicated => format!(
                "every fill of the {n} nearest parties breaks a hard rule (strict roles, or no common region)"
            ),
        }
    }

    /// The fill as the commit writes it (only the added players on the teams; the
    /// completed session's score, factors and hosts), and the pool players it takes.
    fn outcome(
        &self,
        plan: &[(usize, usize)],
        pool: &Pool,
        fit: &[Candidate],
        model: &QueueModel,
        map: Option<String>,
    ) -> (MatchOutcome, Vec<usize>) {
        let (sc, ix) = (self.sc, self.sc.ix);
        let (eval, units) = self.score(plan).expect("scored above");
        let detail = sc.describe(&units, &eval);
        let id = |p: u32| ix.ids[p as usize].clone();
        let (added, taken) = self.at.added(plan, pool, fit, model.teams);
        let added_ids: HashSet<&String> = added.iter().flatten().collect();
        let p2p = model.network == Network::PeerToPeer;
        let outcome = MatchOutcome {
            teams: added.clone(),
            score: detail.score,
            factors: sc
                .enabled()
                .map(|(i, name)| (name.to_string(), detail.factors[i]))
                .collect(),
            roles: (!model.roles.is_empty()).then(|| {
                detail
                    .roles
                    .iter()
                    .map(|&(p, r)| (id(p), model.roles[r].clone()))
                    .filter(|(p, _)| added_ids.contains(p))
                    .collect()
            }),
            region: match model.network {
                Network::Dedicated => detail.region.map(|r| ix.regions[r].clone()),
                Network::PeerToPeer => None,
            },
            hosts: p2p.then(|| detail.hosts.iter().map(|&p| id(p)).collect()),
            host: detail.hosts.first().filter(|_| p2p).map(|&p| id(p)),
            backup_host: detail.hosts.get(1).filter(|_| p2p).map(|&p| id(p)),
            relay: eval.relay,
            map,
            map_vetoed_by: 0,
        };
        (outcome, taken)
    }
}

/// The AccelByte guide's combination, for backfill: team by team, every combination (lexicographic
/// in candidate order) of unused candidates whose sizes sum to the team's open slots.
/// Each plan is (candidate, team) pairs. Returns false when there are more than `limit`.
fn fill_vertically(
    sizes: &[usize],
    open: &[usize],
    limit: usize,
    out: &mut Vec<Vec<(usize, usize)>>,
) -> bool {
    let Some(first) = open.iter().position(|&o| o > 0) else {
        return true;
    };
    let mut walk = Vertical {
        sizes,
        open,
        limit,
        used: vec![false; sizes.len()],
        plan: Vec::new(),
        out,
    };
    walk.team(first, 0, open[first])
}

/// The state of [`fill_vertically`]'s walk.
struct Vertical<'a> {
    sizes: &'a [usize],
    open: &'a [usize],
    limit: usize,
    used: Vec<bool>,
    plan: Vec<(usize, usize)>,
    out: &'a mut Vec<Vec<(usize, usize)>>,
}

impl Vertical<'_> {
    /// Fill team `t`'s `left` slots from candidates `from..`; false: over the limit.
    fn team(&mut self, t: usize, from: usize, left: usize) -> bool {
        if left == 0 {
            // this team is full: the next one with open slots, from the first candidate
            return match (t + 1..self.open.len()).find(|&n| self.open[n] > 0) {
                Some(n) => self.team(n, 0, self.open[n]),
                None => {
                    if self.out.len() >= self.limit {
                        return false;
                    }
                    self.out.push(self.plan.clone());
                    true
                }
            };
        }
        for c in from..self.sizes.len() {
            if self.used[c] || self.sizes[c] > left {
                continue;
            }
            self.used[c] = true;
            self.plan.push((c, t));
            let ok = self.team(t, c + 1, left - self.sizes[c]);
            self.plan.pop();
            self.used[c] = false;
            if !ok {
                return false;
            }
        }
        true
    }
}

/// The AccelByte guide's greedy, for backfill. Choose: candidates nearest first, each taken while a
/// team has room for it (tentatively into the team with the most room). Place: the chosen
/// parties by total skill, largest first, each into the team with the least total skill
/// (members included) that has room (the seed's rule); if that packing leaves a party
/// without room, the tentative placement stands. None when the slots cannot all be filled.
fn greedy_fill(cands: &[(u32, usize, f64, usize)], s: &Session) -> Option<Vec<(usize, usize)>> {
    let mut room = s.open.clone();
    let mut chosen = Vec::new();
    for (c, &(_, size, _, _)) in cands.iter().enumerate() {
        if room.iter().all(|&r| r == 0) {
            break;
        }
        // most room first, ties by team index
        let t = (0..room.len()).max_by_key(|&t| (room[t], std::cmp::Reverse(t)))?;
        if room[t] >= size {
            room[t] -= size;
            chosen.push((c, t));
        }
    }
    if room.iter().any(|&r| r > 0) {
        return None;
    }
    let mut order = chosen.clone();
    let total = |c: usize| cands[c].2 * cands[c].1 as f64;
    // stable: equal totals keep the nearest first
    order.sort_by(|a, b| total(b.0).total_cmp(&total(a.0)));
    let mut room = s.open.clone();
    let mut sums: Vec<f64> = s
        .teams
        .iter()
        .map(|t| t.iter().map(|p| p.skill).sum())
        .collect();
    let mut plan = Vec::new();
    for (c, _) in order {
        let mut teams: Vec<usize> = (0..room.len()).collect();
        teams.sort_by(|&a, &b| sums[a].total_cmp(&sums[b]));
        let Some(&t) = teams.iter().find(|&&t| room[t] >= cands[c].1) else {
            return Some(chosen);
        };
        room[t] -= cands[c].1;
        sums[t] += total(c);
        plan.push((c, t));
    }
    Some(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(id: &str, skill: f64) -> Player {
        Player {
            id: id.into(),
            party: None,
            skill,
            skill_sigma: None,
            enqueued_at: None,
            latencies: BTreeMap::from([("eu".to_string(), 30.0)]),
            peer_pings: BTreeMap::new(),
            roles: Vec::new(),
            side: None,
            ..Default::default()
        }
    }

    fn in_party(mut pl: Player, party: &str) -> Player {
        pl.party = Some(party.into());
        pl
    }

    fn session() -> Session {
        Session {
            id: "s1".into(),
            teams: vec![
                vec![p("a", 1500.0), p("b", 1500.0), p("c", 1500.0)],
                vec![p("d", 1500.0), p("e", 1500.0)],
            ],
            open: vec![0, 1],
            map: None,
        }
    }

    fn pool(players: Vec<Player>) -> Pool {
        Pool {
            players,
            ..Pool::default()
        }
    }

    #[test]
    fn the_closest_candidate_fills_and_the_rest_stays_in_the_pool() {
        let mut far = p("far", 2600.0);
        far.latencies.insert("eu".into(), 400.0);
        let pl = pool(vec![far, p("near", 1490.0), p("other", 1900.0)]);
        let out = fill_sessions(
            &[session()],
            &pl,
            &QueueModel::default(),
            &BackfillLimits::default(),
        )
        .unwrap();
        assert_eq!(out.unfilled, vec![]);
        assert_eq!(out.fills.len(), 1);
        let f = &out.fills[0];
        assert_eq!(
            f.outcome.teams,
            vec![Vec::<String>::new(), vec!["near".into()]]
        );
        assert_eq!(f.method, Method::Combination);
        assert_eq!(f.evaluated, 3);
        let rest: Vec<&str> = out.rest.players.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(rest, ["far", "other"]);
    }

    #[test]
    fn a_session_on_a_map_takes_nobody_who_vetoes_it_and_names_its_map() {
        use crate::model::MapParams;
        use crate::pool::Attribute;
        let model = QueueModel {
            maps: MapParams {
                pool: vec!["dust".into(), "harbor".into(), "vault".into()],
                vetoes: 1,
                repeat_depth: 3,
            },
            ..QueueModel::default()
        };
        let vetoing = |id: &str, skill: f64, map: &str| {
            let mut pl = p(id, skill);
            pl.attributes
                .insert("veto".into(), Attribute::One(map.into()));
            pl
        };
        let on = |map: &str| Session {
            map: Some(map.into()),
            ..session()
        };
        // The nearest in skill vetoes the session's map: the next one fills it.
        let pl = pool(vec![
            vetoing("near", 1500.0, "dust"),
            vetoing("next", 1560.0, "vault"),
        ]);
        let out = fill_sessions(&[on("dust")], &pl, &model, &BackfillLimits::default()).unwrap();
        let f = &out.fills[0];
        assert_eq!(f.outcome.teams[1], ["next"]);
        assert_eq!(f.outcome.map.as_deref(), Some("dust"));
        // Rated on dust alone: nobody named a preference, nobody played it lately.
        assert_eq!(f.outcome.factors.get("maps"), Some(&1.0));
        // Without a map the vetoes do not matter and the fill names none.
        let out = fill_sessions(&[session()], &pl, &model, &BackfillLimits::default()).unwrap();
        assert_eq!(out.fills[0].outcome.teams[1], ["near"]);
        assert_eq!(out.fills[0].outcome.map, None);
        // Only vetoers: the session stays open, saying why.
        let pl = pool(vec![vetoing("near", 1500.0, "dust")]);
        let out = fill_sessions(&[on("dust")], &pl, &model, &BackfillLimits::default()).unwrap();
        assert!(out.fills.is_empty());
        assert_eq!(
            out.unfilled[0].reason,
            "every queued party that fits has a player who vetoes the session's map dust"
        );
        // A map the pool no longer lists is no map.
        let pl = pool(vec![vetoing("near", 1500.0, "dust")]);
        let out = fill_sessions(&[on("retired")], &pl, &model, &BackfillLimits::default()).unwrap();
        assert_eq!(out.fills[0].outcome.map, None);
    }

    #[test]
    fn filters_avoids_and_floors_hold_in_backfill() {
        use crate::model::{AvoidScope, FloorStep};
        use crate::pool::Attribute;
        let build = |mut pl: Player, b: &str| {
            pl.attributes
                .insert("build".into(), Attribute::One(b.into()));
            pl
        };
        let mut s = session();
        for pl in s.teams.iter_mut().flatten() {
            *pl = build(pl.clone(), "1.4");
        }
        let mut model = QueueModel::default();
        model.filters.same = vec!["build".into()];
        // the nearest in skill has another build: the farther one of the session's
        // build fills
        let pl = pool(vec![
            build(p("other", 1500.0), "1.3"),
            build(p("same", 1450.0), "1.4"),
        ]);
        let out = fill_sessions(&[s.clone()], &pl, &model, &BackfillLimits::default()).unwrap();
        assert_eq!(out.fills[0].outcome.teams[1], vec!["same".to_string()]);
        // a member avoids the nearest: the next fills, in either scope (the open slot is
        // on the avoider's team)
        for scope in [AvoidScope::Match, AvoidScope::Team] {
            let mut s = s.clone();
            s.teams[1][0].avoids = vec!["same".into()];
            model.avoids.scope = scope;
            let pl = pool(vec![
                build(p("same", 1500.0), "1.4"),
                build(p("next", 1450.0), "1.4"),
            ]);
            let out = fill_sessions(&[s], &pl, &model, &BackfillLimits::default()).unwrap();
            assert_eq!(
                out.fills[0].outcome.teams[1],
                vec!["next".to_string()],
                "{scope:?}"
            );
        }
        // a floor on the team gap: a candidate that would break it is not taken
        model.floors = vec![FloorStep {
            max_team_gap: Some(100.0),
            ..FloorStep::default()
        }];
        let pl = pool(vec![build(p("strong", 2000.0), "1.4")]);
        let out = fill_sessions(&[s], &pl, &model, &BackfillLimits::default()).unwrap();
        assert!(out.fills.is_empty(), "{out:?}");
        assert_eq!(out.unfilled.len(), 1);
    }

    #[test]
    fn parties_stay_whole_and_only_exact_fills_count() {
        let mut s = session();
        s.teams[1].pop();
        s.open = vec![0, 2];
        // a party of 3 never fits; the duo fills both slots of team 1
        let pl = pool(vec![
            in_party(p("t1", 1500.0), "trio"),
            in_party(p("t2", 1500.0), "trio"),
            in_party(p("t3", 1500.0), "trio"),
            in_party(p("d1", 1480.0), "duo"),
            in_party(p("d2", 1520.0), "duo"),
            p("solo", 3000.0),
        ]);
        let out = fill_sessions(
            &[s],
            &pl,
            &QueueModel::default(),
            &BackfillLimits::default(),
        )
        .unwrap();
        let f = &out.fills[0];
        assert_eq!(f.outcome.teams[1], vec!["d1".to_string(), "d2".to_string()]);
        assert!(f.outcome.teams[0].is_empty());
    }

    #[test]
    fn an_unfillable_session_says_why() {
        let model = QueueModel::default();
        let lim = BackfillLimits::default();
        let empty = fill_sessions(&[session()], &pool(vec![]), &model, &lim).unwrap();
        assert!(
            empty.unfilled[0].reason.contains("pool is empty"),
            "{empty:?}"
        );
        let duo = pool(vec![
            in_party(p("d1", 1500.0), "duo"),
            in_party(p("d2", 1500.0), "duo"),
        ]);
        let big = fill_sessions(&[session()], &duo, &model, &lim).unwrap();
        assert!(big.unfilled[0].reason.contains("larger than 1"), "{big:?}");
        assert_eq!(big.rest.players.len(), 2);
        let strict = BackfillLimits { min_score: 0.99 };
        let low = fill_sessions(&[session()], &pool(vec![p("x", 100.0)]), &model, &strict).unwrap();
        assert!(
            low.unfilled[0].reason.contains("below backfill.min_score"),
            "{low:?}"
        );
        let mut member = session();
        member.teams[0][0].id = "x".into();
        let own = fill_sessions(&[member], &pool(vec![p("x", 1500.0)]), &model, &lim).unwrap();
        assert!(own.unfilled[0].reason.contains("pool is empty"), "{own:?}");
    }

    #[test]
    fn two_sessions_never_share_a_player() {
        let mut s2 = session();
        s2.id = "s2".into();
        let pl = pool(vec![p("near", 1500.0), p("next", 1510.0)]);
        let out = fill_sessions(
            &[session(), s2],
            &pl,
            &QueueModel::default(),
            &BackfillLimits::default(),
        )
        .unwrap();
        assert_eq!(out.fills.len(), 2);
        assert_eq!(out.fills[0].outcome.teams[1], vec!["near".to_string()]);
        assert_eq!(out.fills[1].outcome.teams[1], vec!["next".to_string()]);
        assert!(out.rest.players.is_empty());
    }

    #[test]
    fn large_formats_use_greedy_into_the_weaker_team() {
        let model = QueueModel {
            team_size: 7,
            ..QueueModel::default()
        };
        assert_eq!(method_for(&model), Method::Greedy);
        let team = |prefix: &str, n: usize, skill: f64| -> Vec<Player> {
            (0..n).map(|i| p(&format!("{prefix}{i}"), skill)).collect()
        };
        let s = Session {
            id: "big".into(),
            teams: vec![team("a", 6, 1600.0), team("b", 6, 1400.0)],
            open: vec![1, 1],
            map: None,
        };
        let pl = pool(vec![p("strong", 1700.0), p("weak", 1450.0)]);
        let out = fill_sessions(&[s], &pl, &model, &BackfillLimits::default()).unwrap();
        let f = &out.fills[0];
        assert_eq!(f.method, Method::Greedy);
        // the strongest-nearest first goes to the weaker team (the AccelByte guide's greedy rule)
        assert_eq!(
            f.outcome.teams,
            vec![vec!["weak".to_string()], vec!["strong".to_string()]]
        );
    }

    fn big(teams: usize, team_size: usize) -> QueueModel {
        QueueModel {
            teams,
            team_size,
            network: Network::Dedicated,
            ..QueueModel::default()
        }
    }

    fn squad(prefix: &str, n: usize, skill: f64) -> Vec<Player> {
        (0..n).map(|i| p(&format!("{prefix}{i}"), skill)).collect()
    }

    #[test]
    fn a_big_lobby_takes_the_nearest_into_its_weaker_team() {
        let model = big(2, 16);
        assert!(model.is_big());
        let s = Session {
            id: "16v16".into(),
            teams: vec![squad("a", 15, 1560.0), squad("b", 14, 1440.0)],
            open: vec![1, 2],
            map: None,
        };
        let pl = pool(vec![
            p("far", 2600.0),
            p("n1", 1520.0),
            p("n2", 1480.0),
            in_party(p("t1", 1500.0), "trio"),
            in_party(p("t2", 1500.0), "trio"),
            in_party(p("t3", 1500.0), "trio"),
            p("n3", 1530.0),
        ]);
        let out = fill_sessions(&[s], &pl, &model, &BackfillLimits::default()).unwrap();
        assert_eq!(out.unfilled, vec![]);
        let f = &out.fills[0];
        assert_eq!(f.method, Method::Greedy);
        // the three nearest solos (the trio has no room); the strongest into the weaker
        // team, which has two open slots
        let mut teams = f.outcome.teams.clone();
        teams.iter_mut().for_each(|t| t.sort());
        assert_eq!(
            teams,
            vec![vec!["n2".to_string()], vec!["n1".into(), "n3".into()]]
        );
        assert_eq!(f.outcome.region.as_deref(), Some("eu"));
        let factors = &f.outcome.factors;
        assert!(factors.contains_key("equal_teams") && factors.contains_key("equal_players"));
        assert!(f.outcome.score > 0.0 && f.outcome.score <= 1.0);
        let rest: Vec<&str> = out.rest.players.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(rest, ["far", "t1", "t2", "t3"]);
    }

    #[test]
    fn a_battle_royale_squad_is_refilled_by_a_party_that_fits_it() {
        // 5 squads of 4: a big format (20 players); squad 4 lost two players
        let model = big(5, 4);
        let mut teams: Vec<Vec<Player>> = (0..4)
            .map(|k| squad(&format!("s{k}_"), 4, 1500.0))
            .collect();
        teams.push(squad("s4_", 2, 1500.0));
        let s = Session {
            id: "br".into(),
            teams,
            open: vec![0, 0, 0, 0, 2],
            map: None,
        };
        let pl = pool(vec![
            in_party(p("x1", 1500.0), "three"),
            in_party(p("x2", 1500.0), "three"),
            in_party(p("x3", 1500.0), "three"),
            in_party(p("d1", 1510.0), "duo"),
            in_party(p("d2", 1490.0), "duo"),
        ]);
        let out = fill_sessions(&[s], &pl, &model, &BackfillLimits::default()).unwrap();
        assert_eq!(out.unfilled, vec![]);
        let f = &out.fills[0].outcome;
        let empty = Vec::<String>::new();
        assert_eq!(
            f.teams[..4],
            [empty.clone(), empty.clone(), empty.clone(), empty]
        );
        assert_eq!(f.teams[4], ["d1", "d2"]);
        // a battle royale scores no team gap
        assert!(!f.factors.contains_key("equal_teams"));
    }

    #[test]
    fn a_big_lobby_fill_keeps_the_floors_and_says_why() {
        let mut model = big(2, 16);
        model.floors = vec![crate::model::FloorStep {
            after: std::time::Duration::ZERO,
            max_team_gap: Some(50.0),
            ..Default::default()
        }];
        let s = Session {
            id: "16v16".into(),
            teams: vec![squad("a", 16, 1800.0), squad("b", 15, 1500.0)],
            open: vec![0, 1],
            map: None,
        };
        let pl = pool(vec![p("n", 1600.0)]);
        let out = fill_sessions(&[s], &pl, &model, &BackfillLimits::default()).unwrap();
        assert_eq!(out.fills, vec![]);
        assert!(
            out.unfilled[0].reason.contains("max_team_gap"),
            "{:?}",
            out.unfilled
        );
        assert_eq!(out.rest.players.len(), 1);
    }

    #[test]
    fn the_fill_is_scored_like_a_new_match() {
        let model = QueueModel::default();
        let pl = pool(vec![p("near", 1490.0)]);
        let out = fill_sessions(&[session()], &pl, &model, &BackfillLimits::default()).unwrap();
        let f = &out.fills[0].outcome;
        // the same roster solved as a new match by the core's exhaustive split, where
        // that split is the session's: the same score
        let mut all = session().teams.concat();
        all.push(p("near", 1490.0));
        let ix = IndexedPool::build(&pool(all), &model).unwrap();
        let sc = Scorer::new(&ix, &model);
        let units: Vec<u32> = (0..6).map(|i| ix.unit_of[i]).collect();
        let e = sc.evaluate_fixed(&units, &[0, 0, 0, 1, 1, 1]).unwrap();
        assert!(
            (f.score - e.score).abs() < 1e-12,
            "{} vs {}",
            f.score,
            e.score
        );
        assert!(f.host.is_some());
    }
}
