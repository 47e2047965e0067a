//! `matchmaker report`: the rounds of a time window as one self-contained HTML page with
//! plots ([`crate::ops::report`] makes it; this file parses the window and writes it).

use std::path::PathBuf;

use anyhow::Context;
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use crate::cli::run::DatabaseArgs;
use crate::db::report::ReportWindow;
use crate::ops::report::{Report, ReportOptions, make_report};
use crate::ops::shell;

#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// The database (default: the private PostgreSQL of a local `matchmaker run`).
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Only this queue (default: every queue with rounds in the window, one section each).
    #[arg(long)]
    pub queue: Option<String>,
    /// Start of the window (rounds committed at or after it), UTC: `2026-11-25T20:00:00Z`,
    /// `2026-11-25 20:00`, `2026-11-25`, or a duration before now such as `90m` or
    /// `2d`. Default: 24 hours before --to.
    #[arg(long, value_name = "TIME")]
    pub from: Option<String>,
    /// End of the window (rounds committed before it), same forms. Default: now.
    #[arg(long, value_name = "TIME")]
    pub to: Option<String>,
    /// The HTML file to write (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// Parses a `--from` / `--to` value; `now` anchors the "duration ago" form.
pub fn parse_time(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let t = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(t) {
        return Ok(at.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(at) = NaiveDateTime::parse_from_str(t, format) {
            return Ok(at.and_utc());
        }
    }
    if let Ok(day) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok(day.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc());
    }
    if let Ok(ago) = humantime::parse_duration(t) {
        let ago = chrono::Duration::from_std(ago).map_err(|e| format!("{t:?}: {e}"))?;
        return now
            .checked_sub_signed(ago)
            .ok_or_else(|| format!("{t:?}: too far back"));
    }
    Err(format!(
        "{t:?} is not a time: use RFC 3339 (2026-11-25T20:00:00Z), \"2026-11-25 20:00\" \
         (UTC), a date (2026-11-25), or a duration before now (90m, 24h, 2d)"
    ))
}

/// The window the arguments ask for.
pub fn window(args: &ReportArgs, now: DateTime<Utc>) -> anyhow::Result<ReportWindow> {
    let to = match &args.to {
        Some(t) => parse_time(t, now).map_err(|e| anyhow::anyhow!("--to: {e}"))?,
        None => now,
    };
    let from = match &args.from {
        Some(t) => parse_time(t, now).map_err(|e| anyhow::anyhow!("--from: {e}"))?,
        None => to - chrono::Duration::hours(24),
    };
    if from >= to {
        anyhow::bail!(
            "--from ({}) must be before --to ({})",
            from.format("%Y-%m-%d %H:%M:%S UTC"),
            to.format("%Y-%m-%d %H:%M:%S UTC")
        );
    }
    Ok(ReportWindow {
        queue: args.queue.clone(),
        from,
        to,
    })
}

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    let now = Utc::now();
    // Bad arguments are refused before any database is opened.
    let window = window(&args, now)?;
    let options = ReportOptions {
        window,
        generated_at: now,
    };
    let Report { input, page } = shell::run_on_database(&(&args.database).into(), async |db| {
        make_report(db, &options).await
    })?;
    let window = &options.window;
    let queues: std::collections::BTreeSet<&str> =
        input.rounds.iter().map(|r| r.queue.as_str()).collect();
    if args.out.as_os_str() == "-" {
        print!("{page}");
    } else {
        std::fs::write(&args.out, &page)
            .with_context(|| format!("writing the report to {}", args.out.display()))?;
    }
    let span = format!(
        "{} to {} UTC",
        window.from.format("%Y-%m-%d %H:%M:%S"),
        window.to.format("%Y-%m-%d %H:%M:%S")
    );
    if input.rounds.is_empty() {
        eprintln!(
            "wrote {}: no round committed from {span}{}",
            args.out.display(),
            args.queue
                .as_deref()
                .map(|q| format!(" in queue {q}"))
                .unwrap_or_default()
        );
    } else {
        eprintln!(
            "wrote {} ({} KB): {} rounds of {} queue{} ({}), {} players matched, from {span}",
            args.out.display(),
            page.len().div_ceil(1024),
            input.rounds.len(),
            queues.len(),
            if queues.len() == 1 { "" } else { "s" },
            queues.into_iter().collect::<Vec<_>>().join(", "),
            input.rounds.iter().map(|r| r.matched).sum::<i64>(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap()
    }

    #[test]
    fn times_parse_in_every_documented_form() {
        let at = Utc.with_ymd_and_hms(2026, 11, 24, 20, 30, 0).unwrap();
        for text in [
            "2026-11-24T20:30:00Z",
            "2026-11-24T21:30:00+01:00",
            "2026-11-24 20:30",
            "2026-11-24 20:30:00",
            "2026-11-24T20:30",
        ] {
            assert_eq!(parse_time(text, now()), Ok(at), "{text}");
        }
        assert_eq!(
            parse_time("2026-11-24", now()),
            Ok(Utc.with_ymd_and_hms(2026, 11, 24, 0, 0, 0).unwrap())
        );
        assert_eq!(
            parse_time("90m", now()),
            Ok(Utc.with_ymd_and_hms(2026, 11, 25, 10, 30, 0).unwrap())
        );
        let err = parse_time("yesterday", now()).unwrap_err();
        assert!(err.contains("RFC 3339"), "{err}");
    }

    #[test]
    fn the_window_defaults_to_the_last_day_and_refuses_a_reversed_one() {
        let args = |from: Option<&str>, to: Option<&str>| ReportArgs {
            database: DatabaseArgs {
                database_url: None,
                local_pg_dir: ".local-pg".into(),
            },
            queue: None,
            from: from.map(String::from),
            to: to.map(String::from),
            out: "r.html".into(),
        };
        let w = window(&args(None, None), now()).unwrap();
        assert_eq!((w.from, w.to), (now() - chrono::Duration::hours(24), now()));
        let err = window(&args(Some("1h"), Some("2h")), now()).unwrap_err();
        assert!(err.to_string().contains("must be before --to"), "{err}");
    }
}
