//! Results and ratings as a game backend and a game server drive them: `report_result`
//! accepts a match's result once, keeps a second login's report beside it (a
//! disagreement is disputed, not overwritten) and refuses everything else in class 22
//! writing nothing; a rated queue plays players enqueued with `skill => NULL` at their
//! rating, and the results the backend reports teach it the players' true order.

use std::collections::{BTreeMap, HashMap};

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sqlx::PgPool;

use crate::support::*;
use matchmaker::daemon::clock::Clock;
use matchmaker::ops::replay::ReplayOptions;
use matchmaker_optimizer::rating::win_probabilities;

/// q: a 3v3 queue; rc: the same with a ready check.
const QUEUES: &str = r#"
default_queue = "q"
[queues.q.round]
every = "10s"
budget = "50ms"
seed = 3
[queues.rc.round]
every = "10s"
budget = "50ms"
seed = 4
[queues.rc.ready_check]
timeout = "30s"
"#;

/// What `report_result` answers: its text, or the refusal's (SQLSTATE, message).
type Answer = Result<String, (String, String)>;

/// A call of `report_result` as a login (match_id, team_ranks, left_early) and the answer
/// it must get.
type Case<'a> = (
    &'a PgPool,
    Option<i64>,
    Option<Vec<i32>>,
    Option<Vec<&'a str>>,
    Answer,
);

/// A match's teams: each player's (true skill, uncertainty 0).
type Teams = Vec<Vec<(f64, f64)>>;

/// How many rows the reports wrote so far.
async fn written(db: &PgPool) -> (i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM match_results), (SELECT count(*) FROM result_reports)",
    )
    .fetch_one(db)
    .await
    .unwrap()
}

/// `report_result` as `login`: its answer, or the refusal's (SQLSTATE, message).
async fn report(
    login: &PgPool,
    match_id: Option<i64>,
    ranks: Option<&[i32]>,
    left_early: Option<&[&str]>,
) -> Answer {
    sqlx::query_scalar("SELECT report_result($1, $2, $3)")
        .bind(match_id)
        .bind(ranks)
        .bind(left_early)
        .fetch_one(login)
        .await
        .map_err(|e| db_error(&e))
}

/// The one match of `queue`'s latest round.
async fn latest_match(db: &PgPool, queue: &str) -> i64 {
    sqlx::query_scalar("SELECT max(match_id) FROM matches WHERE queue = $1")
        .bind(queue)
        .fetch_one(db)
        .await
        .unwrap()
}

/// Six players of `client` in `queue`, one 3v3 match after the next round.
async fn six(client: &Client, queue: &str, prefix: &str) {
    for i in 0..6 {
        client
            .enqueue(queue, &format!("{prefix}{i}"), 1400.0 + 40.0 * f64::from(i))
            .send()
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_result_is_reported_once_and_every_bad_report_is_refused_writing_nothing() {
    let mut d = Daemon::start(QUEUES, "results").await;
    let a = Client::login(&d.tdb, 2).await;
    let b = Client::login(&d.tdb, 2).await;
    let (_, server) = server_login(&d.tdb, 2).await;
    six(&a, "q", "a").await;
    let round = d.round_after("q", secs(10)).await;
    assert_eq!(round.matches, 1);
    let m = latest_match(d.db(), "q").await;
    let refused = |field: &str, value: &str, rule: &str| {
        Err::<String, _>(("22023".to_string(), format!("{field} = {value}: {rule}")))
    };
    let not_ours = "no match of this login's players";

    let cases: Vec<Case> = vec![
        (
            &a.pool,
            None,
            Some(vec![1, 2]),
            None,
            refused("match_id", "NULL", "is required"),
        ),
        // Another login's match reads like a match that does not exist.
        (
            &b.pool,
            Some(m),
            Some(vec![1, 2]),
            None,
            refused("match_id", &m.to_string(), not_ours),
        ),
        (
            &a.pool,
            Some(m + 1000),
            Some(vec![1, 2]),
            None,
            refused("match_id", &(m + 1000).to_string(), not_ours),
        ),
        (
            &server,
            Some(m + 1000),
            Some(vec![1, 2]),
            None,
            refused("match_id", &(m + 1000).to_string(), "no such match"),
        ),
        (
            &a.pool,
            Some(m),
            None,
            None,
            refused(
                "team_ranks",
                "NULL",
                &format!(
                    "match {m} has 2 teams: one rank per team, in ascending team order (1 best, equal ranks a draw)"
                ),
            ),
        ),
        (
            &a.pool,
            Some(m),
            Some(vec![1]),
            None,
            refused(
                "team_ranks",
                "{1}",
                &format!(
                    "match {m} has 2 teams: one rank per team, in ascending team order (1 best, equal ranks a draw)"
                ),
            ),
        ),
        (
            &a.pool,
            Some(m),
            Some(vec![1, 2, 3]),
            None,
            refused(
                "team_ranks",
                "{1,2,3}",
                &format!(
                    "match {m} has 2 teams: one rank per team, in ascending team order (1 best, equal ranks a draw)"
                ),
            ),
        ),
        (
            &a.pool,
            Some(m),
            Some(vec![2, 2]),
            None,
            refused(
                "team_ranks",
                "{2,2}",
                "ranks are 1 (best) to 2, and some team is 1",
            ),
        ),
        (
            &a.pool,
            Some(m),
            Some(vec![0, 1]),
            None,
            refused(
                "team_ranks",
                "{0,1}",
                "ranks are 1 (best) to 2, and some team is 1",
            ),
        ),
        (
            &a.pool,
            Some(m),
            Some(vec![1, 3]),
            None,
            refused(
                "team_ranks",
                "{1,3}",
                "ranks are 1 (best) to 2, and some team is 1",
            ),
        ),
        (
            &a.pool,
            Some(m),
            Some(vec![1, 2]),
            Some(vec!["zed"]),
            refused(
                "left_early",
                "'zed'",
                &format!("is not a player of this login in match {m}"),
            ),
        ),
        (
            &a.pool,
            Some(m),
            Some(vec![1, 2]),
            Some(vec!["a0", "a0"]),
            refused("left_early", "'a0'", "is named twice"),
        ),
        (
            &a.pool,
            Some(m),
            Some(vec![1, 2]),
            Some(vec![""]),
            refused("left_early", "''", "is required (1-64 characters)"),
        ),
        (
            &server,
            Some(m),
            Some(vec![1, 2]),
            Some(vec!["zed"]),
            refused(
                "left_early",
                "'zed'",
                &format!("is not a player of match {m}"),
            ),
        ),
    ];
    for (login, match_id, ranks, left, want) in cases {
        let got = report(login, match_id, ranks.as_deref(), left.as_deref()).await;
        assert_eq!(
            got, want,
            "report_result({match_id:?}, {ranks:?}, {left:?})"
        );
        assert_eq!(
            written(d.db()).await,
            (0, 0),
            "a refused report wrote nothing"
        );
    }

    // The first report is the result; the same login cannot report again.
    assert_eq!(
        report(&a.pool, Some(m), Some(&[2, 1]), Some(&["a1"])).await,
        Ok("recorded".into())
    );
    let again = report(&a.pool, Some(m), Some(&[2, 1]), Some(&["a1"])).await;
    let Err((code, message)) = again else {
        panic!("a second report of one login is refused: {again:?}")
    };
    assert_eq!(code, "22023");
    assert!(
        message.starts_with(&format!(
            "match_id = {m}: this login already reported its result (at "
        )),
        "{message}"
    );
    assert_eq!(written(d.db()).await, (1, 1));
    // Another login that may report: the same result confirms it, a different one is kept
    // beside it as a dispute, and the first report stands.
    let (_, server2) = server_login(&d.tdb, 1).await;
    assert_eq!(
        report(&server2, Some(m), Some(&[2, 1]), Some(&["a1"])).await,
        Ok("confirmed".into())
    );
    assert_eq!(
        report(&server, Some(m), Some(&[1, 2]), None).await,
        Ok("disputed".into())
    );
    let (ranks, disputed): (Vec<i32>, bool) =
        sqlx::query_as("SELECT team_ranks, disputed FROM match_results WHERE match_id = $1")
            .bind(m)
            .fetch_one(d.db())
            .await
            .unwrap();
    assert_eq!((ranks, disputed), (vec![2, 1], true));
    let disputes: Vec<(Vec<i32>, Vec<i32>)> = sqlx::query_as(
        "SELECT accepted_ranks, team_ranks FROM result_disputes WHERE match_id = $1",
    )
    .bind(m)
    .fetch_all(d.db())
    .await
    .unwrap();
    assert_eq!(disputes, vec![(vec![2, 1], vec![1, 2])]);
    // The client reads the result with its match.
    // player, team_rank, left_early, win_probability
    type Row = (String, Option<i32>, Option<bool>, Option<f64>);
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT player_id, team_rank, left_early, win_probability FROM match_details
          WHERE match_id = $1 ORDER BY player_id",
    )
    .bind(m)
    .fetch_all(&a.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 6);
    let teams: Vec<i32> =
        sqlx::query_scalar("SELECT team FROM match_players WHERE match_id = $1 ORDER BY player_id")
            .bind(m)
            .fetch_all(d.db())
            .await
            .unwrap();
    for ((player, rank, left, p), team) in rows.iter().zip(&teams) {
        assert_eq!(*rank, Some(if *team == 0 { 2 } else { 1 }), "{player}");
        assert_eq!(*left, Some(player == "a1"), "{player}");
        let p = p.unwrap_or_else(|| panic!("{player} has a win probability"));
        assert!(p > 0.0 && p < 1.0, "{player}: {p}");
    }
}

#[tokio::test]
async fn a_match_still_in_its_ready_check_or_cancelled_by_it_has_no_result() {
    let mut d = Daemon::start(QUEUES, "results-rc").await;
    let a = Client::login(&d.tdb, 2).await;
    six(&a, "rc", "r").await;
    d.round_after("rc", secs(10)).await;
    let m = latest_match(d.db(), "rc").await;
    let pending = report(&a.pool, Some(m), Some(&[1, 2]), None).await;
    assert_eq!(
        pending,
        Err((
            "22023".into(),
            format!(
                "match_id = {m}: is waiting for its ready check: report its result once it is played"
            )
        ))
    );
    a.decline("r0", m).await.unwrap();
    d.clock.advance(secs(1));
    d.step("rc").await;
    let status: String = sqlx::query_scalar("SELECT status FROM matches WHERE match_id = $1")
        .bind(m)
        .fetch_one(d.db())
        .await
        .unwrap();
    assert_eq!(status, "cancelled");
    let (_, server) = server_login(&d.tdb, 1).await;
    let cancelled = report(&server, Some(m), Some(&[1, 2]), None).await;
    assert_eq!(
        cancelled,
        Err((
            "22023".into(),
            format!("match_id = {m}: was cancelled by its ready check: it was never played")
        ))
    );
    assert_eq!(written(d.db()).await, (0, 0));
}

/// The game's own randomness in the simulated ladder (Weng-Lin's beta over the true
/// skills): one on one, a player 200 points better wins three times in four, as Elo's
/// scale has it.
const TRUE_BETA: f64 = 125.0;

/// Spearman's rank correlation.
fn spearman(a: &[f64], b: &[f64]) -> f64 {
    fn ranks(x: &[f64]) -> Vec<f64> {
        let mut idx: Vec<usize> = (0..x.len()).collect();
        idx.sort_by(|&i, &j| x[i].total_cmp(&x[j]));
        let mut r = vec![0.0; x.len()];
        for (rank, i) in idx.into_iter().enumerate() {
            r[i] = rank as f64;
        }
        r
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let mean = (a.len() as f64 - 1.0) / 2.0;
    let cov: f64 = ra
        .iter()
        .zip(&rb)
        .map(|(x, y)| (x - mean) * (y - mean))
        .sum();
    let var: f64 = ra.iter().map(|x| (x - mean).powi(2)).sum();
    cov / var
}

fn normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let u1: f64 = rng.random::<f64>().max(1e-12);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// The backend's side of a rated ladder: players with hidden true skills.
struct Backend {
    client: Client,
    truth: BTreeMap<String, f64>,
    rng: Xoshiro256PlusPlus,
}

impl Backend {
    /// Enqueue every player of the backend who is not queued, at their rating.
    async fn enqueue_idle(&self) {
        let queued: Vec<String> = sqlx::query_scalar(
            "SELECT player_id FROM player_status WHERE queue = 'ranked' AND status = 'queued'",
        )
        .fetch_all(&self.client.pool)
        .await
        .unwrap();
        for player in self.truth.keys().filter(|p| !queued.contains(p)) {
            sqlx::query("SELECT enqueue('ranked', $1, NULL)")
                .bind(player)
                .execute(&self.client.pool)
                .await
                .unwrap_or_else(|e| panic!("enqueue {player} at its rating: {e}"));
        }
    }

    /// Play every match of `round_id` and report it; the true chance of each match's
    /// first team to win, and whether a new account (a player `smurf*`) was in it.
    async fn play(&mut self, round_id: i64) -> Vec<(f64, bool)> {
        let seats: Vec<(i64, String, i32)> = sqlx::query_as(
            "SELECT match_id, player_id, team FROM match_details WHERE round_id = $1
              ORDER BY match_id, team, player_id",
        )
        .bind(round_id)
        .fetch_all(&self.client.pool)
        .await
        .unwrap();
        let mut matches: Vec<(i64, Teams, bool)> = Vec::new();
        for (m, player, team) in seats {
            if matches.last().is_none_or(|(id, _, _)| *id != m) {
                matches.push((m, vec![Vec::new(), Vec::new()], false));
            }
            let (_, teams, smurf) = matches.last_mut().unwrap();
            teams[team as usize].push((self.truth[&player], 0.0));
            *smurf |= player.starts_with("smurf");
        }
        let mut true_p = Vec::new();
        for (m, teams, smurf) in matches {
            let p = win_probabilities(&teams, TRUE_BETA)[0];
            true_p.push((p, smurf));
            let ranks: [i32; 2] = if self.rng.random::<f64>() < p {
                [1, 2]
            } else {
                [2, 1]
            };
            let answer = report(&self.client.pool, Some(m), Some(&ranks), None).await;
            assert_eq!(answer, Ok("recorded".to_string()), "match {m}");
        }
        true_p
    }

    /// player -> rating, as the backend reads them.
    async fn ratings(&self) -> HashMap<String, f64> {
        sqlx::query_as::<_, (String, f64)>(
            "SELECT player_id, rating FROM player_ratings WHERE pool = 'ranked'",
        )
        .fetch_all(&self.client.pool)
        .await
        .unwrap()
        .into_iter()
        .collect()
    }
}

/// The mean gap of the true win probability from 50% over `matches`.
fn mean_gap<'a>(matches: impl IntoIterator<Item = &'a f64>) -> f64 {
    let gaps: Vec<f64> = matches.into_iter().map(|p| (p - 0.5).abs()).collect();
    gaps.iter().sum::<f64>() / gaps.len().max(1) as f64
}

/// A ladder of 72 players with hidden true skills, enqueued with
/// `skill => NULL`, plays what the daemon forms and reports results drawn from the true
/// skills; three much stronger new accounts join after ten rounds.
#[tokio::test]
async fn a_rated_ladder_learns_the_true_order_and_its_matches_get_fairer() {
    // A restart budget, not a time budget: the solver's work does not shrink on a loaded
    // machine. The waits still enter the score (the rounds' clock is manual, the
    // enqueue times are the database's), so the matches, results and figures vary a
    // little from run to run.
    let config = "[queues.ranked.round]\nevery = \"10s\"\nrestarts = 2\nseed = 9\n\
                  [queues.ranked.rating]\nbeta = 125\n";
    let mut d = Daemon::start(config, "ladder").await;
    let client = Client::login(&d.tdb, 2).await;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(17);
    let truth = (0..72)
        .map(|i| (format!("p{i:02}"), 1500.0 + 300.0 * normal(&mut rng)))
        .collect();
    let mut backend = Backend { client, truth, rng };
    let smurfs = ["smurf1", "smurf2", "smurf3"];
    let mut played: Vec<Vec<(f64, bool)>> = Vec::new();
    let mut smurf_top: HashMap<&str, i64> = HashMap::new();
    for round in 0..60 {
        if round == 10 {
            for s in smurfs {
                backend.truth.insert(s.to_string(), 2400.0);
            }
        }
        backend.enqueue_idle().await;
        let report = d.round_after("ranked", secs(10)).await;
        played.push(backend.play(report.round_id).await);
        // Where the new accounts stand, after how many matches.
        let ratings = backend.ratings().await;
        let top = ratings.len() / 10;
        for s in smurfs {
            let Some(mine) = ratings.get(s) else { continue };
            let above = ratings.values().filter(|r| *r > mine).count();
            if above < top && !smurf_top.contains_key(s) {
                let played: i64 =
                    sqlx::query_scalar("SELECT count(*) FROM match_details WHERE player_id = $1")
                        .bind(s)
                        .fetch_one(&backend.client.pool)
                        .await
                        .unwrap();
                smurf_top.insert(s, played);
            }
        }
    }
    // The last round's results are applied before the next round: run it.
    backend.enqueue_idle().await;
    d.round_after("ranked", secs(10)).await;

    let ratings = backend.ratings().await;
    let regulars: Vec<&String> = backend
        .truth
        .keys()
        .filter(|p| p.starts_with('p'))
        .collect();
    let rated: Vec<f64> = regulars.iter().map(|p| ratings[*p]).collect();
    let true_skill: Vec<f64> = regulars.iter().map(|p| backend.truth[*p]).collect();
    let rho = spearman(&rated, &true_skill);
    // Fairness among the regulars: a much stronger new account cannot be balanced by a
    // pool whose best is far below them, whatever their rating.
    // The first rounds know nothing of the players (everyone at the initial rating): as
    // fair as chance.
    let first = mean_gap(played[..3].iter().flatten().map(|(p, _)| p));
    let tail = &played[played.len() - 10..];
    let last = mean_gap(tail.iter().flatten().filter(|(_, s)| !s).map(|(p, _)| p));
    let with_new = mean_gap(tail.iter().flatten().filter(|(_, s)| *s).map(|(p, _)| p));
    eprintln!(
        "rank correlation {rho:.3}; gap of the true win probability from 50%: first three rounds \
         {first:.3}, last ten rounds {last:.3} ({with_new:.3} in matches with a new \
         account); matches the new accounts needed to reach the top 10%: {smurf_top:?}"
    );
    assert!(rho >= 0.85, "rank correlation {rho}");
    // Matches formed without any knowledge of skill keep the first rounds' gap; the
    // learned ratings take about half of it away (0.5 to 0.6 of it left, run to run).
    assert!(last <= 0.7 * first, "gap {first} -> {last}");
    for s in smurfs {
        let needed = smurf_top.get(s).copied();
        assert!(
            needed.is_some_and(|n| n <= 30),
            "{s} reached the top 10% after {needed:?} matches"
        );
    }
    let without: i64 =
        sqlx::query_scalar("SELECT count(*) FROM match_players WHERE win_probability IS NULL")
            .fetch_one(d.db())
            .await
            .unwrap();
    assert_eq!(without, 0, "every match row has a win probability");
    // Every result moved its players' ratings exactly once.
    let (results, changes, seats, played): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM match_results WHERE applied_at IS NOT NULL),
                (SELECT count(*) FROM rating_changes),
                (SELECT count(*) FROM match_players mp
                   JOIN match_results r USING (match_id) WHERE r.applied_at IS NOT NULL),
                (SELECT sum(matches) FROM ratings)",
    )
    .fetch_one(d.db())
    .await
    .unwrap();
    assert!(results >= 60 * 11, "{results} results applied");

    // `matchmaker explain` shows how a new account's results moved its rating.
    let explained = matchmaker::ops::explain::explain_player(d.db(), "smurf1", 5)
        .await
        .unwrap();
    let [rating] = explained.ratings.as_slice() else {
        panic!("one rating: {:?}", explained.ratings)
    };
    assert_eq!((rating.pool.as_str(), rating.recent.len()), ("ranked", 5));
    let text = matchmaker::ops::explain::render(&explained);
    assert!(
        text.contains("rating in pool ranked (login ") && text.contains("last results"),
        "{text}"
    );

    // The operators' report: every match reported, and the predictions came true: the
    // matches the daemon called even were won about half the time by either side.
    let window = matchmaker::db::report::ReportWindow {
        queue: Some("ranked".into()),
        from: chrono::Utc::now() - chrono::Duration::hours(1),
        to: chrono::Utc::now() + chrono::Duration::hours(1),
    };
    let report = matchmaker::db::report::read_report(d.db(), &window, chrono::Utc::now())
        .await
        .unwrap();
    let [stats] = report.results.as_slice() else {
        panic!("one queue's results: {:?}", report.results)
    };
    eprintln!(
        "report: {} matches, {} reported, Brier score {:?}, {} lopsided, {} stomps, \
         reliability {:?}",
        stats.matches,
        stats.reported,
        stats.brier,
        stats.lopsided,
        stats.stomps,
        stats.calibration.0
    );
    assert_eq!(
        stats.reported, results,
        "every applied result is in the report"
    );
    assert!(stats.brier.is_some());
    assert!(!stats.calibration.is_empty());
    for b in stats.calibration.iter().filter(|b| b.matches >= 50) {
        assert!(
            (b.observed - b.predicted).abs() < 0.1,
            "predicted {} came true {} of the time",
            b.predicted,
            b.observed
        );
    }
    assert_eq!((changes, played), (seats, seats));

    // Each weighted factor against the results: every reported match counts once per
    // factor, split at the factor's median.
    let factors: Vec<(&str, i64)> = report
        .factor_results
        .iter()
        .map(|f| (f.factor.as_str(), f.matches))
        .collect();
    assert!(
        factors.iter().any(|(f, _)| *f == "equal_teams"),
        "{factors:?}"
    );
    assert!(
        factors.iter().all(|(_, n)| *n == stats.reported),
        "{factors:?}"
    );
    let page = matchmaker::report::render_html(&report).unwrap();
    assert!(page.contains("Factors against results"));

    // What a candidate weighting would have done over the stored rounds: with skill
    // weighing nothing, the same pools make matches the ladder's ratings call lopsided.
    let what_if = ReplayOptions {
        set: vec![
            "queue.weights.equal_teams=0".into(),
            "queue.weights.equal_players=0".into(),
        ],
        ..ReplayOptions::default()
    };
    let range = matchmaker::ops::replay::replay_range(
        d.db(),
        window.from,
        window.to,
        Some("ranked"),
        &what_if,
        |_| {},
    )
    .await
    .unwrap();
    let (stored, replayed) = (&range.stored.predictions, &range.replay.predictions);
    let observed = range.stored.results.expect("the stored side's results");
    eprintln!(
        "replay without skill weights: predicted gap {:?} -> {:?}, lopsided {} -> {}, \
         stomps expected {:.1} -> {:.1}; observed {} stomps in {} results, Brier {:?}",
        stored.mean_gap(),
        replayed.mean_gap(),
        stored.lopsided,
        replayed.lopsided,
        stored.expected_stomps,
        replayed.expected_stomps,
        observed.stomps,
        observed.reported,
        observed.brier()
    );
    assert_eq!(observed.reported as i64, stats.reported);
    assert_eq!(observed.stomps as i64, stats.stomps);
    assert!(
        replayed.mean_gap().unwrap() > 1.5 * stored.mean_gap().unwrap(),
        "{stored:?} -> {replayed:?}"
    );
    assert!(replayed.expected_stomps > stored.expected_stomps);
}

/// The fault: a leader killed while it applies results (its transaction has written
/// ratings, then its backend is terminated) has applied nothing; the next round applies
/// every result, each exactly once, and two leaders applying at once take turns.
#[tokio::test]
async fn a_leader_killed_mid_update_applies_nothing_and_the_next_applies_each_result_once() {
    let config = "[queues.ranked.round]\nevery = \"10s\"\nrestarts = 1\nseed = 2\n\
                  [queues.ranked.rating]\n";
    let mut d = Daemon::start(config, "fault").await;
    let rating = d.config.queues["ranked"].rating.clone().unwrap();
    let client = Client::login(&d.tdb, 2).await;
    for i in 0..12 {
        sqlx::query("SELECT enqueue('ranked', $1, NULL)")
            .bind(format!("k{i:02}"))
            .execute(&client.pool)
            .await
            .unwrap();
    }
    let round = d.round_after("ranked", secs(10)).await;
    assert_eq!(round.matches, 2);
    let matches: Vec<i64> =
        sqlx::query_scalar("SELECT match_id FROM matches WHERE round_id = $1 ORDER BY 1")
            .bind(round.round_id)
            .fetch_all(d.db())
            .await
            .unwrap();
    for m in &matches {
        assert_eq!(
            report(&client.pool, Some(*m), Some(&[1, 2]), None).await,
            Ok("recorded".into())
        );
    }
    // The leader stalls after its ratings are written, before its changes are: inside
    // its transaction.
    stall_inserts_into(d.db(), "rating_changes").await;
    let doomed = d.tdb.new_pool(1).await;
    let (queue, r, now) = ("ranked", rating.clone(), d.clock.now());
    let killed = tokio::spawn(async move {
        matchmaker::daemon::ratings::apply_results(&doomed, queue, &r, now).await
    });
    let pid = stalled_backend(d.db(), "the leader to stall mid-update").await;
    let ratings_mid: i64 = sqlx::query_scalar("SELECT count(*) FROM ratings")
        .fetch_one(d.db())
        .await
        .unwrap();
    assert_eq!(ratings_mid, 0, "the stalled update is not visible");
    kill_backend(d.db(), pid).await;
    let outcome = time_limit::within("the killed leader's call to end", killed)
        .await
        .unwrap();
    assert!(outcome.is_err(), "the killed update failed: {outcome:?}");
    let (applied, rows): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM match_results WHERE applied_at IS NOT NULL),
                (SELECT count(*) FROM ratings)",
    )
    .fetch_one(d.db())
    .await
    .unwrap();
    assert_eq!((applied, rows), (0, 0), "the killed leader applied nothing");

    // Two leaders at once, then the next round: each result once.
    release_stall(d.db()).await;
    let (one, two) = tokio::join!(
        matchmaker::daemon::ratings::apply_results(d.db(), "ranked", &rating, now),
        matchmaker::daemon::ratings::apply_results(d.db(), "ranked", &rating, now),
    );
    assert_eq!(one.unwrap().results + two.unwrap().results, 2);
    for i in 0..12 {
        sqlx::query("SELECT enqueue('ranked', $1, NULL)")
            .bind(format!("k{i:02}"))
            .execute(&client.pool)
            .await
            .unwrap();
    }
    d.round_after("ranked", secs(10)).await;
    let (applied, changes, played, distinct): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM match_results WHERE applied_at IS NOT NULL),
                (SELECT count(*) FROM rating_changes),
                (SELECT sum(matches) FROM ratings),
                (SELECT count(*) FROM ratings)",
    )
    .fetch_one(d.db())
    .await
    .unwrap();
    assert_eq!((applied, changes, played, distinct), (2, 12, 12, 12));
}
