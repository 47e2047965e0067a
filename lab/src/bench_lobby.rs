//! `matchmaker-lab bench-lobby`: the big formats (the optimizer's lobby path) against the
//! first-come matchmaker of the same format, on the same seeded realistic pools, one
//! side-by-side table.
//!
//! ```text
//! matchmaker-lab bench-lobby [--players 3000] [--formats 16v16,32v32,25x4]
//!                            [--budget 2s] [--pools 1] [--pool-seed 1] [--threads N]
//! ```
//! Columns: players placed (share of the pool), lobbies, team mean gap (mean and worst,
//! two-team formats), lobby skill spread (mean over lobbies of the standard deviation of
//! their skills), worst latency to the lobby's region (mean over lobbies), the time the
//! round took and the search's stop reason. Pools: dedicated servers, 30% of players in
//! parties up to the team size (at most 4), 20% with a side preference.

use std::time::{Duration, Instant};

use anyhow::bail;

use crate::sim::population::{Population, PopulationSpec};
use matchmaker_optimizer::lobby::baseline::first_come;
use matchmaker_optimizer::{Budget, Network, Pool, QueueModel, RoundOutcome, SolveOptions, solve};

#[derive(Debug, Clone)]
pub struct BenchLobbyOptions {
    pub players: usize,
    /// Formats: `16v16` (two teams) or `25x4` (25 squads of 4).
    pub formats: Vec<String>,
    /// The search's budget (the daemon's default round budget is 2s).
    pub budget: Duration,
    pub pools: u64,
    pub pool_seed: u64,
    pub threads: Option<usize>,
}

/// `16v16` -> (2, 16); `25x4` -> (25, 4).
pub fn parse_format(f: &str) -> anyhow::Result<(usize, usize)> {
    let (a, b) = if let Some((a, b)) = f.split_once('v') {
        if a != b {
            bail!("format {f:?}: two teams of one size, e.g. 16v16");
        }
        ("2", b)
    } else if let Some((a, b)) = f.split_once('x') {
        (a, b)
    } else {
        bail!("format {f:?}: expected e.g. 16v16 or 25x4");
    };
    Ok((a.parse()?, b.parse()?))
}

#[derive(Debug, Default, Clone)]
struct Row {
    placed: f64,
    lobbies: f64,
    mean_gap: f64,
    worst_gap: f64,
    spread: f64,
    worst_ms: f64,
    ms: f64,
    stop: String,
}

fn metrics(pool: &Pool, out: &RoundOutcome, ms: f64) -> Row {
    let skill: std::collections::HashMap<&str, (f64, &std::collections::BTreeMap<String, f64>)> =
        pool.players
            .iter()
            .map(|p| (p.id.as_str(), (p.skill, &p.latencies)))
            .collect();
    let mut row = Row {
        ms,
        stop: format!("{:?}", out.stats.stop_reason).to_lowercase(),
        ..Row::default()
    };
    let n = out.matches.len().max(1) as f64;
    for m in &out.matches {
        let all: Vec<f64> = m
            .teams
            .iter()
            .flatten()
            .map(|id| skill[id.as_str()].0)
            .collect();
        row.placed += all.len() as f64;
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        row.spread +=
            (all.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / all.len() as f64).sqrt() / n;
        if m.teams.len() == 2 {
            let tm = |t: &Vec<String>| {
                t.iter().map(|id| skill[id.as_str()].0).sum::<f64>() / t.len() as f64
            };
            let gap = (tm(&m.teams[0]) - tm(&m.teams[1])).abs();
            row.mean_gap += gap / n;
            row.worst_gap = row.worst_gap.max(gap);
        }
        if let Some(r) = &m.region {
            let worst = m
                .teams
                .iter()
                .flatten()
                .map(|id| skill[id.as_str()].1.get(r).copied().unwrap_or(150.0))
                .fold(0.0, f64::max);
            row.worst_ms += worst / n;
        }
    }
    row.lobbies = out.matches.len() as f64;
    row
}

fn mean(rows: &[Row]) -> Row {
    let n = rows.len() as f64;
    let mut m = Row {
        stop: rows.last().map(|r| r.stop.clone()).unwrap_or_default(),
        ..Row::default()
    };
    for r in rows {
        m.placed += r.placed / n;
        m.lobbies += r.lobbies / n;
        m.mean_gap += r.mean_gap / n;
        m.worst_gap = m.worst_gap.max(r.worst_gap);
        m.spread += r.spread / n;
        m.worst_ms += r.worst_ms / n;
        m.ms += r.ms / n;
    }
    m
}

pub fn run(o: BenchLobbyOptions) -> anyhow::Result<()> {
    let population = Population::realistic();
    println!(
        "big formats, {} players, {} pool(s) from seed {}, budget {}, dedicated servers",
        o.players,
        o.pools,
        o.pool_seed,
        humantime::format_duration(o.budget)
    );
    println!(
        "{:<7} {:<11} {:>7} {:>6} {:>8} {:>9} {:>7} {:>9} {:>8} {:>10}",
        "format",
        "strategy",
        "placed",
        "lobby",
        "gap mean",
        "gap worst",
        "spread",
        "worst ms",
        "time ms",
        "stop"
    );
    for f in &o.formats {
        let (teams, team_size) = parse_format(f)?;
        let model = QueueModel {
            teams,
            team_size,
            network: Network::Dedicated,
            ..QueueModel::default()
        };
        model.validate()?;
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for seed in o.pool_seed..o.pool_seed + o.pools {
            let spec = PopulationSpec {
                players: o.players,
                party_share: 0.3,
                max_party_size: team_size.min(4),
                network: Network::Dedicated,
                side_share: 0.2,
                ..PopulationSpec::default()
            };
            let pool = population.generate_pool(&spec, seed);
            let options = SolveOptions {
                budget: Budget::Time(o.budget),
                threads: o.threads,
                seed: 7,
                ..SolveOptions::default()
            };
            let t = Instant::now();
            let out = solve(&pool, &model, &options)?;
            ours.push(metrics(&pool, &out, t.elapsed().as_secs_f64() * 1e3));
            let t = Instant::now();
            let base = first_come(&pool, &model)?;
            theirs.push(metrics(&pool, &base, t.elapsed().as_secs_f64() * 1e3));
        }
        for (name, rows) in [("lobby", &ours), ("first_come", &theirs)] {
            let r = mean(rows);
            let gap = |v: f64| {
                if teams == 2 {
                    format!("{v:.2}")
                } else {
                    "-".into()
                }
            };
            println!(
                "{:<7} {:<11} {:>7} {:>6.1} {:>8} {:>9} {:>7.1} {:>9.1} {:>8.0} {:>10}",
                f,
                name,
                format!("{:.1}%", 100.0 * r.placed / o.players as f64),
                r.lobbies,
                gap(r.mean_gap),
                gap(r.worst_gap),
                r.spread,
                r.worst_ms,
                r.ms,
                if name == "lobby" {
                    r.stop.as_str()
                } else {
                    "-"
                }
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse() {
        assert_eq!(parse_format("16v16").unwrap(), (2, 16));
        assert_eq!(parse_format("25x4").unwrap(), (25, 4));
        assert!(parse_format("16v8").is_err());
        assert!(parse_format("big").is_err());
    }
}
