//! `matchmaker replay`: re-solve a past round from its stored snapshot, and what-if
//! ([`ops::replay`] does the work; this file parses and renders).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, NaiveDateTime, Utc};
use sqlx::PgPool;

use crate::cli::run::{DatabaseArgs, open_database};
use crate::ops::replay::{
    RangeReport, Replay, ReplayOptions, Side, Totals, Waits, effective_config, load, replay_range,
    replay_round,
};
use crate::ops::require_schema;

#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// The database (default: the private PostgreSQL of a local `matchmaker run`).
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// The round to re-solve (`rounds.round_id`).
    #[arg(required_unless_present = "from", conflicts_with_all = ["from", "to", "queue"])]
    pub round_id: Option<i64>,
    /// Replay every round committed from this time on: RFC 3339
    /// (`2026-11-24T18:00:00Z`), `YYYY-MM-DD HH:MM[:SS]` (UTC), or a duration ago (`3h`).
    #[arg(long, requires = "to", value_parser = parse_time)]
    pub from: Option<DateTime<Utc>>,
    /// ... up to (not including) this time; same forms, `now` for now.
    #[arg(long, requires = "from", value_parser = parse_time)]
    pub to: Option<DateTime<Utc>>,
    /// With --from/--to: only this queue's rounds.
    #[arg(long)]
    pub queue: Option<String>,
    /// What-if: the queue of the same name in this config file instead of the stored one.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// What-if: one key of the queue's config, `queue.KEY=VALUE` (a TOML value; a bare
    /// word is a string), e.g. `queue.weights.enemy_ping=5`, `queue.max_wait=5m`,
    /// `queue.round.restarts=8`, `queue.filters.same=["build"]`, `queue.avoids.scope=team`,
    /// `queue.floors=[{after="1m", max_team_gap=200.0}]`. Repeatable; applied after
    /// --config.
    #[arg(long = "set", value_name = "queue.KEY=VALUE")]
    pub set: Vec<String>,
    /// A wall-clock budget instead of the stored one.
    #[arg(long, value_parser = humantime::parse_duration, conflicts_with = "restarts")]
    pub budget: Option<Duration>,
    /// Exactly this many restarts instead of the stored budget (deterministic).
    #[arg(long)]
    pub restarts: Option<u64>,
    /// Solver threads (default: the stored round's; a restart budget gives the same
    /// matches on any number).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print JSON (one object) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write the stored pool as a pool file (`matchmaker optimize --pool`).
    #[arg(long, conflicts_with = "from")]
    pub write_pool: Option<PathBuf>,
    /// Write the effective config (after --config and --set) as a config file
    /// (`matchmaker optimize --config`).
    #[arg(long, conflicts_with = "from")]
    pub write_config: Option<PathBuf>,
}

/// `--from` / `--to`: a time, or a duration ago.
fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    if text == "now" {
        return Ok(Utc::now());
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, format) {
            return Ok(t.and_utc());
        }
    }
    if let Ok(ago) = humantime::parse_duration(text) {
        return chrono::Duration::from_std(ago)
            .map(|ago| Utc::now() - ago)
            .map_err(|e| e.to_string());
    }
    Err(format!(
        "{text:?}: expected RFC 3339 (2026-11-24T18:00:00Z), YYYY-MM-DD HH:MM[:SS] (UTC), a duration ago (3h) or now"
    ))
}

impl ReplayArgs {
    /// The what-if options of the library.
    pub fn options(&self) -> ReplayOptions {
        ReplayOptions {
            config: self.config.clone(),
            set: self.set.clone(),
            budget: self.budget,
            restarts: self.restarts,
            threads: self.threads,
        }
    }
}

pub fn run(args: ReplayArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let (db, server) = open_database(&args.database).await?;
        let result = async {
            crate::ops::access::require_ops_login(&db, "replay").await?;
            require_schema(&db).await?;
            match args.round_id {
                Some(id) => replay_one(&db, id, &args).await,
                None => range(&db, &args).await,
            }
        }
        .await;
        db.close().await;
        if let Some(server) = server {
            server.stop().await?;
        }
        result
    })
}

async fn replay_one(db: &PgPool, round_id: i64, args: &ReplayArgs) -> anyhow::Result<()> {
    let stored = load(db, round_id).await?;
    let options = args.options();
    let config = effective_config(&stored, &options)?;
    if let Some(path) = &args.write_pool {
        std::fs::write(path, serde_json::to_string_pretty(&stored.pool)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.write_config {
        std::fs::write(path, config.to_toml(&stored.queue))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let replay =
        tokio::task::spawn_blocking(move || replay_round(&stored, &config, &options)).await??;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&replay)?);
    } else {
        print!("{}", render(&replay));
    }
    Ok(())
}

async fn range(db: &PgPool, args: &ReplayArgs) -> anyhow::Result<()> {
    let (from, to) = (args.from.expect("clap: from"), args.to.expect("clap: to"));
    if let Some(queue) = &args.queue {
        crate::db::queues::check_known_queue(db, queue).await??;
    }
    if !args.json {
        println!(
            "{:>8} {:<14} {:>6} {:>17} {:>17} {:>5}",
            "round", "queue", "pool", "matched st/re", "score st/re", "same"
        );
    }
    let report = replay_range(
        db,
        from,
        to,
        args.queue.as_deref(),
        &args.options(),
        |line| {
            if !args.json {
                let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.4}"));
                println!(
                    "{:>8} {:<14} {:>6} {:>17} {:>17} {:>5}",
                    line.round_id,
                    line.queue,
                    line.pool,
                    format!("{}/{}", line.stored_matched, line.replay_matched),
                    format!("{}/{}", num(line.stored_score), num(line.replay_score)),
                    if line.identical { "yes" } else { "no" }
                );
            }
        },
    )
    .await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render_totals(&report));
    }
    Ok(())
}

/// The comparison as a table.
pub fn render(r: &Replay) -> String {
    let mut out = String::new();
    let line = |out: &mut String, name: &str, a: String, b: String| {
        let mark = if a != b { "  *" } else { "" };
        out.push_str(&format!("{name:<24} {a:>12} {b:>12}{mark}\n"));
    };
    out.push_str(&format!(
        "round {} · {} · {} · committed {} · pool {} · seed {} · {}\n",
        r.round_id,
        r.queue,
        r.trigger,
        r.committed_at.format("%Y-%m-%d %H:%M:%S UTC"),
        r.pool,
        r.seed,
        r.strategy
    ));
    out.push_str(&format!("budget: stored {}", r.stored_budget.describe()));
    if r.replay_budget != r.stored_budget {
        out.push_str(&format!(", replay {}", r.replay_budget.describe()));
    }
    out.push('\n');
    if r.what_if.is_empty() {
        out.push_str(&format!("config: the stored one ({})\n", r.config_hash));
    } else {
        out.push_str(&format!(
            "what-if: {} (config {} -> {})\n",
            r.what_if.join(" "),
            r.config_hash,
            r.replay_config_hash
        ));
    }
    out.push_str(&format!("{:<24} {:>12} {:>12}\n", "", "stored", "replay"));
    let (s, p) = (&r.stored, &r.replay);
    line(
        &mut out,
        "matches",
        s.matches.to_string(),
        p.matches.to_string(),
    );
    line(
        &mut out,
        "matched",
        s.matched.to_string(),
        p.matched.to_string(),
    );
    line(
        &mut out,
        "left over",
        s.left_over.to_string(),
        p.left_over.to_string(),
    );
    let kinds: std::collections::BTreeSet<&String> = s
        .left_over_by_outcome
        .keys()
        .chain(p.left_over_by_outcome.keys())
        .collect();
    for k in kinds {
        let n = |side: &Side| {
            side.left_over_by_outcome
                .get(k)
                .copied()
                .unwrap_or(0)
                .to_string()
        };
        line(&mut out, &format!("  {k}"), n(s), n(p));
    }
    line(
        &mut out,
        "rejected",
        s.rejected.to_string(),
        p.rejected.to_string(),
    );
    let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.5}"));
    line(&mut out, "score", num(s.score), num(p.score));
    let factors: std::collections::BTreeSet<&String> =
        s.factors.keys().chain(p.factors.keys()).collect();
    for f in factors {
        line(
            &mut out,
            &format!("  {f}"),
            num(s.factors.get(f).copied()),
            num(p.factors.get(f).copied()),
        );
    }
    let wait = |side: &Side, pick: fn(&Waits) -> f64| {
        side.waits
            .as_ref()
            .map_or("-".to_string(), |w| format!("{:.1}", pick(w)))
    };
    line(
        &mut out,
        "wait mean s",
        wait(s, |w| w.mean),
        wait(p, |w| w.mean),
    );
    line(
        &mut out,
        "wait p50 s",
        wait(s, |w| w.p50),
        wait(p, |w| w.p50),
    );
    line(
        &mut out,
        "wait p90 s",
        wait(s, |w| w.p90),
        wait(p, |w| w.p90),
    );
    line(
        &mut out,
        "wait max s",
        wait(s, |w| w.max),
        wait(p, |w| w.max),
    );
    out.push_str(&format!(
        "{:<24} {:>12.0} {:>12.0}\n",
        "solve ms", s.solve_ms, p.solve_ms
    ));
    out.push_str(&format!(
        "matches: {} ({} of the stored round's {} made again; the replay made {})\n",
        if r.identical {
            "identical"
        } else {
            "different"
        },
        r.same_matches,
        r.stored_matches,
        r.replay.matches
    ));
    out
}

fn render_totals(r: &RangeReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "\n{} rounds from {} to {}{}; {} replayed to identical matches\n",
        r.stored.rounds,
        r.from.format("%Y-%m-%d %H:%M:%S"),
        r.to.format("%Y-%m-%d %H:%M:%S UTC"),
        r.queue
            .as_deref()
            .map(|q| format!(" (queue {q})"))
            .unwrap_or_default(),
        r.identical_rounds
    ));
    if !r.what_if.is_empty() {
        out.push_str(&format!("what-if: {}\n", r.what_if.join(" ")));
    }
    out.push_str(&format!(
        "{:<24} {:>12} {:>12}\n",
        "totals", "stored", "replay"
    ));
    let (s, p) = (&r.stored, &r.replay);
    let line = |out: &mut String, name: &str, a: String, b: String| {
        let mark = if a != b { "  *" } else { "" };
        out.push_str(&format!("{name:<24} {a:>12} {b:>12}{mark}\n"));
    };
    line(
        &mut out,
        "players pooled",
        s.players.to_string(),
        p.players.to_string(),
    );
    line(
        &mut out,
        "matches",
        s.matches.to_string(),
        p.matches.to_string(),
    );
    line(
        &mut out,
        "matched",
        s.matched.to_string(),
        p.matched.to_string(),
    );
    line(
        &mut out,
        "left over",
        s.left_over.to_string(),
        p.left_over.to_string(),
    );
    line(
        &mut out,
        "rejected",
        s.rejected.to_string(),
        p.rejected.to_string(),
    );
    let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.5}"));
    line(
        &mut out,
        "mean round score",
        num(s.mean_round_score),
        num(p.mean_round_score),
    );
    let factors: std::collections::BTreeSet<&String> =
        s.factors.keys().chain(p.factors.keys()).collect();
    for f in factors {
        line(
            &mut out,
            &format!("  {f}"),
            num(s.factors.get(f).copied()),
            num(p.factors.get(f).copied()),
        );
    }
    let wait = |t: &Totals, pick: fn(&Waits) -> f64| {
        t.waits
            .as_ref()
            .map_or("-".to_string(), |w| format!("{:.1}", pick(w)))
    };
    line(
        &mut out,
        "wait p50 s",
        wait(s, |w| w.p50),
        wait(p, |w| w.p50),
    );
    line(
        &mut out,
        "wait p90 s",
        wait(s, |w| w.p90),
        wait(p, |w| w.p90),
    );
    line(
        &mut out,
        "wait max s",
        wait(s, |w| w.max),
        wait(p, |w| w.max),
    );
    out
}
