//! The built-in ratings on a simulated ladder: players with hidden true skills play
//! balanced 3v3 matches made from their ratings, results drawn from the true skills.

use matchmaker_optimizer::rating::{Rating, RatingModel, RatingSystem, Seat, win_probabilities};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The game's own randomness: a player this many true-skill points better wins about two
/// in three.
const TRUE_BETA: f64 = 200.0;

fn model(system: RatingSystem) -> RatingModel {
    RatingModel {
        system,
        initial: 1500.0,
        initial_uncertainty: 350.0,
        beta: 175.0,
        draw_probability: 0.0,
    }
}

fn normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
    // Box-Muller.
    let u1: f64 = rng.random::<f64>().max(1e-12);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

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
    let n = a.len() as f64;
    let mean = (n - 1.0) / 2.0;
    let cov: f64 = ra
        .iter()
        .zip(&rb)
        .map(|(x, y)| (x - mean) * (y - mean))
        .sum();
    let var: f64 = ra.iter().map(|x| (x - mean).powi(2)).sum();
    cov / var
}

struct Ladder {
    model: RatingModel,
    truth: Vec<f64>,
    ratings: Vec<Rating>,
    played: Vec<u32>,
    rng: Xoshiro256PlusPlus,
}

impl Ladder {
    fn new(system: RatingSystem, players: usize, seed: u64) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let truth = (0..players)
            .map(|_| 1500.0 + 300.0 * normal(&mut rng))
            .collect();
        let model = model(system);
        Ladder {
            model,
            truth,
            ratings: vec![model.initial(); players],
            played: vec![0; players],
            rng,
        }
    }

    fn join(&mut self, true_skill: f64) -> usize {
        self.truth.push(true_skill);
        self.ratings.push(self.model.initial());
        self.played.push(0);
        self.truth.len() - 1
    }

    /// One round: everyone sorted by rating, six by six, teams snake-drafted (1 4 5 | 2 3
    /// 6); returns the true win probability of each match's first team.
    fn round(&mut self) -> Vec<f64> {
        let mut order: Vec<usize> = (0..self.truth.len()).collect();
        order.sort_by(|&a, &b| self.ratings[b].rating.total_cmp(&self.ratings[a].rating));
        let mut true_p = Vec::new();
        for six in order.chunks_exact(6) {
            let teams = [vec![six[0], six[3], six[4]], vec![six[1], six[2], six[5]]];
            let truth: Vec<Vec<(f64, f64)>> = teams
                .iter()
                .map(|t| t.iter().map(|&i| (self.truth[i], 0.0)).collect())
                .collect();
            let p = win_probabilities(&truth, TRUE_BETA)[0];
            true_p.push(p);
            let first_wins = self.rng.random::<f64>() < p;
            let ranks = if first_wins { [1, 2] } else { [2, 1] };
            let seats: Vec<Vec<Seat>> = teams
                .iter()
                .map(|t| {
                    t.iter()
                        .map(|&i| Seat {
                            rating: self.ratings[i],
                            left_early: false,
                        })
                        .collect()
                })
                .collect();
            let after = self.model.rate(&seats, &ranks).expect("a valid result");
            for (t, new) in teams.iter().zip(after) {
                for (&i, r) in t.iter().zip(new) {
                    self.ratings[i] = r;
                    self.played[i] += 1;
                }
            }
        }
        true_p
    }

    fn correlation(&self) -> f64 {
        let r: Vec<f64> = self.ratings.iter().map(|r| r.rating).collect();
        spearman(&r, &self.truth)
    }

    /// Place of player `i` by rating, 0 the best.
    fn place(&self, i: usize) -> usize {
        let mine = self.ratings[i].rating;
        self.ratings.iter().filter(|r| r.rating > mine).count()
    }
}

fn mean_gap(p: &[f64]) -> f64 {
    p.iter().map(|p| (p - 0.5).abs()).sum::<f64>() / p.len() as f64
}

/// After 40 rounds every system orders the players nearly as their true skills do, and
/// the matches it makes are far closer to a coin flip than the first round's (made from
/// the same initial rating for all). Glicko-2, a one-on-one system here playing teams
/// through composite opponents, learns less from each team result.
#[test]
fn every_system_learns_the_true_order_and_makes_fairer_matches() {
    let shrinks = [
        (RatingSystem::WengLin, 0.4),
        (RatingSystem::TrueSkill, 0.4),
        (RatingSystem::Glicko2, 0.25),
    ];
    for (system, shrink) in shrinks {
        let mut ladder = Ladder::new(system, 240, 7);
        let first = mean_gap(&ladder.round());
        for _ in 0..40 {
            ladder.round();
        }
        let last = mean_gap(&ladder.round());
        // The same draft from the true skills themselves: as fair as these matches get.
        let mut knowing = Ladder::new(system, 240, 7);
        for (r, t) in knowing.ratings.iter_mut().zip(&ladder.truth) {
            r.rating = *t;
        }
        let best = mean_gap(&knowing.round());
        let rho = ladder.correlation();
        eprintln!(
            "{system:?}: rank correlation {rho:.3}; gap of the true win probability from 50%: \
             {first:.3} -> {last:.3} (drafted from the true skills: {best:.3})"
        );
        assert!(rho >= 0.85, "{system:?}: rank correlation {rho}");
        assert!(
            last <= (1.0 - shrink) * first,
            "{system:?}: gap {first} -> {last}"
        );
    }
}

/// Smurfs: much stronger players on fresh accounts, joining a settled ladder.
fn smurf_matches_to_top(system: RatingSystem) -> Vec<u32> {
    let mut ladder = Ladder::new(system, 234, 11);
    for _ in 0..40 {
        ladder.round();
    }
    let smurfs: Vec<usize> = (0..6).map(|_| ladder.join(2400.0)).collect();
    let top = ladder.truth.len() / 10;
    let mut reached = vec![None; smurfs.len()];
    for _ in 0..80 {
        ladder.round();
        for (k, &s) in smurfs.iter().enumerate() {
            if reached[k].is_none() && ladder.place(s) < top {
                reached[k] = Some(ladder.played[s]);
            }
        }
    }
    reached.into_iter().map(|r| r.unwrap_or(u32::MAX)).collect()
}

#[test]
fn a_much_stronger_new_account_reaches_the_top_within_thirty_matches() {
    for system in [
        RatingSystem::WengLin,
        RatingSystem::TrueSkill,
        RatingSystem::Glicko2,
    ] {
        let matches = smurf_matches_to_top(system);
        eprintln!("{system:?}: matches a 2400 new account needs to reach the top 10%: {matches:?}");
        assert!(matches.iter().all(|&m| m <= 30), "{system:?}: {matches:?}");
    }
}
