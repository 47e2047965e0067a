//! `matchmaker status`: a live terminal view of a running deployment, read from the
//! database only (any replica or none): per queue the pool size and the countdown to the
//! next round, and a summary of each recent round (players, matches, left over, score,
//! per-factor averages, wait-time percentiles, solve time); and the daemon replicas, with
//! the queues each leads (balanced leadership).
//!
//! The view is a redrawn page of text: tables from `comfy-table` fitted to the width
//! (see [`crate::ops::term`]), cleared and styled only on a terminal; piped or with
//! `--once` it prints plain lines that fit 80 columns (or `COLUMNS`).
//! The rows come from [`crate::db::status`].

use std::fmt::Write as _;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::db::servers::FleetRegion;
use crate::db::status;
pub use crate::db::status::{QueueLine, ReplicaLine, RoundLine};
use crate::ops::require_ops_database;
use crate::ops::shell::Stop;
use crate::ops::term::{Output, table_text};

/// Everything one frame of the view shows.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusView {
    pub at: DateTime<Utc>,
    pub queues: Vec<QueueLine>,
    pub rounds: Vec<RoundLine>,
    /// Empty when no replica ever registered (no daemon yet).
    pub replicas: Vec<ReplicaLine>,
    /// Game servers per region; empty when none ever announced itself.
    pub servers: Vec<FleetRegion>,
}

/// Reads one frame of the view.
pub async fn read_status(
    db: &PgPool,
    queue: Option<&str>,
    rounds: i64,
) -> Result<StatusView, sqlx::Error> {
    let at = status::read_now(db).await?;
    let queues = status::read_queue_lines(db, queue).await?;
    let rounds = status::read_round_lines(db, queue, rounds).await?;
    let replicas = status::read_replica_lines(db).await?;
    let servers = crate::db::servers::fleet(db).await?;
    Ok(StatusView {
        at,
        queues,
        rounds,
        replicas,
        servers,
    })
}

/// What the view shows and how often.
#[derive(Debug, Clone)]
pub struct StatusOptions {
    /// Only this queue.
    pub queue: Option<String>,
    /// How many recent rounds.
    pub rounds: i64,
    /// Refresh period.
    pub interval: Duration,
    /// One frame, then return.
    pub once: bool,
}

/// `matchmaker status`: the login, schema and queue checked, then a frame every
/// `interval` handed to `on_frame` until `stop` (or one frame with `once`). The stop is
/// listened to for the whole view, so a signal that arrives while a frame is read or
/// drawn ends it too.
pub async fn watch_status(
    db: &PgPool,
    options: &StatusOptions,
    stop: &Stop,
    mut on_frame: impl FnMut(&StatusView),
) -> anyhow::Result<()> {
    require_ops_database(db, "status").await?;
    if let Some(queue) = &options.queue {
        crate::db::queues::check_known_queue(db, queue).await??;
    }
    loop {
        let frame = read_status(db, options.queue.as_deref(), options.rounds);
        let view = tokio::select! {
            view = frame => view?,
            _ = stop.wait() => return Ok(()),
        };
        on_frame(&view);
        if options.once {
            return Ok(());
        }
        tokio::select! {
            _ = tokio::time::sleep(options.interval) => {}
            _ = stop.wait() => return Ok(()),
        }
    }
}

/// The view as text at 80 columns; `ansi` adds bold / dim styling. (The commands use
/// [`render_for`], which also knows the width.)
pub fn render(view: &StatusView, ansi: bool) -> String {
    let mut out = Output::plain(80);
    out.color = ansi;
    render_for(view, &out)
}

/// The view as text for `out`: every line fits `out.width` (comfy-table wraps the wide
/// cells: a long NEXT ROUND or LEADER goes on two lines), styling only when
/// `out.color`. Three tables: queues, recent rounds, and the rounds' per-factor averages
/// with one column per round (as many rounds as fit the width, newest first).
pub fn render_for(view: &StatusView, out: &Output) -> String {
    let (bold, dim, reset) = out.styles();
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{bold}matchmaker status{reset}  {}",
        view.at.format("%Y-%m-%d %H:%M:%S UTC")
    );
    let _ = writeln!(text);
    let mut queues = out.table(&["QUEUE", "POOL", "NEXT ROUND", "LEADER"], &[1]);
    for q in &view.queues {
        queues.add_row(vec![
            q.queue.clone(),
            q.pool_size.to_string(),
            countdown(q),
            q.leader.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    text.push_str(&table_text(&queues));
    for q in view.queues.iter().filter(|q| q.pending_matches > 0) {
        let _ = writeln!(
            text,
            "{}: {} match{} waiting for the ready check",
            q.queue,
            q.pending_matches,
            if q.pending_matches == 1 { "" } else { "es" }
        );
    }
    if view.queues.is_empty() {
        let _ = writeln!(
            text,
            "{dim}(no queue has state or waiting players yet){reset}"
        );
    }
    let _ = writeln!(text);
    if !view.replicas.is_empty() {
        text.push_str(&replica_table(&view.replicas, out));
        let _ = writeln!(text);
    }
    if !view.servers.is_empty() {
        text.push_str(&server_table(&view.servers, &view.rounds, out));
        let _ = writeln!(text);
    }
    let mut rounds = out.table(
        &[
            "ROUND",
            "QUEUE",
            "TRIGGER",
            "AT",
            "POOL",
            "MATCH",
            "LEFT",
            "SCORE",
            "WAIT s\np50/p90/max",
            "SOLVE\nms",
        ],
        &[0, 4, 5, 6, 7, 9],
    );
    for r in &view.rounds {
        let wait = r
            .wait_secs
            .map(|(a, b, c)| format!("{a:.0}/{b:.0}/{c:.0}"))
            .unwrap_or_else(|| "-".into());
        let score = r
            .score
            .map(|s| format!("{s:.3}"))
            .unwrap_or_else(|| "-".into());
        let mut left = r.left_over.to_string();
        if r.rejected > 0 {
            left = format!("{left}+{}r", r.rejected);
        }
        rounds.add_row(vec![
            r.round_id.to_string(),
            r.queue.clone(),
            r.trigger.clone(),
            r.committed_at.format("%H:%M:%S").to_string(),
            r.pool_size.to_string(),
            r.match_count.to_string(),
            left,
            score,
            wait,
            format!("{:.0}", r.solve_ms),
        ]);
    }
    text.push_str(&table_text(&rounds));
    if view.rounds.is_empty() {
        let _ = writeln!(text, "{dim}(no rounds yet){reset}");
    }
    let factors = factor_table(&view.rounds, out);
    if !factors.is_empty() {
        let _ = writeln!(text);
        text.push_str(&factors);
    }
    text
}

/// The game servers per region, and how many matches of the rounds shown waited for one.
fn server_table(servers: &[FleetRegion], rounds: &[RoundLine], out: &Output) -> String {
    let mut table = out.table(&["REGION", "READY", "SILENT", "ALLOCATED"], &[1, 2, 3]);
    for s in servers {
        table.add_row(vec![
            s.region.clone(),
            s.ready.to_string(),
            s.silent.to_string(),
            s.allocated.to_string(),
        ]);
    }
    let mut text = table_text(&table);
    let waited: i32 = rounds.iter().map(|r| r.no_server_matches).sum();
    if waited > 0 {
        let _ = writeln!(
            text,
            "{waited} match{} of the rounds below waited for a server",
            if waited == 1 { "" } else { "es" }
        );
    }
    text
}

/// Who leads what: per replica, its state, last heartbeat and the queues it leads (of
/// those its config lists).
fn replica_table(replicas: &[ReplicaLine], out: &Output) -> String {
    let mut table = out.table(&["REPLICA", "STATE", "HEARTBEAT", "LEADS"], &[]);
    for r in replicas {
        let state = match (r.live, r.heartbeat_secs) {
            (true, _) => "live",
            (false, Some(_)) => "gone",
            (false, None) => "unregistered",
        };
        let heartbeat = r
            .heartbeat_secs
            .map_or("-".into(), |s| format!("{} s ago", s.max(0)));
        let mut leads = match r.heartbeat_secs {
            Some(_) => format!("{} of {}", r.leads.len(), r.serves),
            None => r.leads.len().to_string(),
        };
        if !r.leads.is_empty() {
            let _ = write!(leads, ": {}", r.leads.join(", "));
        }
        table.add_row(vec![r.replica.clone(), state.into(), heartbeat, leads]);
    }
    table_text(&table)
}

/// Factor name per row, one column of averages per round (newest first), as many
/// rounds as fit: the factor names take up to 20 columns, each round 6.
fn factor_table(rounds: &[RoundLine], out: &Output) -> String {
    let fit = (usize::from(out.width).saturating_sub(20) / 6).max(1);
    let shown: Vec<&RoundLine> = rounds
        .iter()
        .filter(|r| !r.factors.is_empty())
        .take(fit)
        .collect();
    if shown.is_empty() {
        return String::new();
    }
    let mut names: Vec<&str> = Vec::new();
    for r in &shown {
        for (name, _) in &r.factors {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    names.sort_unstable();
    let ids: Vec<String> = shown.iter().map(|r| format!("#{}", r.round_id)).collect();
    let mut header = vec!["FACTOR AVERAGES"];
    header.extend(ids.iter().map(String::as_str));
    let right: Vec<usize> = (1..header.len()).collect();
    let mut table = out.table(&header, &right);
    for name in names {
        let mut row = vec![name.to_string()];
        for r in &shown {
            let value = r.factors.iter().find(|(n, _)| n == name);
            row.push(value.map_or("-".into(), |(_, v)| format!("{v:.2}")));
        }
        table.add_row(row);
    }
    table_text(&table)
}

/// The NEXT ROUND cell: when the queue's next round comes, or what it waits for.
pub fn countdown(q: &QueueLine) -> String {
    match (q.waiting_for.as_str(), q.seconds_to_next) {
        ("schedule", Some(s)) => {
            let mut text = format!("in {s} s");
            if let Some(target) = q.target_pool
                && q.pool_size < i64::from(target)
            {
                let _ = write!(text, " (or at {target} players)");
            }
            text
        }
        ("min_pool", _) => format!(
            "waiting for {} players (max-wait fallback)",
            q.min_pool.map_or("more".into(), |m| m.to_string())
        ),
        ("players", _) => "waiting for enough players for one match".into(),
        ("round", _) => "round running".into(),
        (other, Some(s)) => format!("in {s} s ({other})"),
        (other, None) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn render_shows_countdown_rounds_and_factors() {
        let at = Utc.with_ymd_and_hms(2026, 1, 14, 20, 0, 0).unwrap();
        let view = StatusView {
            at,
            queues: vec![QueueLine {
                queue: "ranked_3v3".into(),
                pool_size: 42,
                seconds_to_next: Some(17),
                waiting_for: "schedule".into(),
                target_pool: Some(150),
                min_pool: Some(6),
                leader: Some("host-a-17 (term 2)".into()),
                pending_matches: 0,
            }],
            rounds: vec![RoundLine {
                round_id: 7,
                queue: "ranked_3v3".into(),
                trigger: "schedule".into(),
                committed_at: at,
                pool_size: 60,
                match_count: 9,
                matched: 54,
                left_over: 6,
                rejected: 1,
                score: Some(0.8731),
                factors: vec![("equal_teams".into(), 0.95), ("enemy_ping".into(), 0.7)],
                solve_ms: 512.4,
                wait_secs: Some((21.0, 38.2, 55.0)),
                no_server_matches: 2,
            }],
            replicas: vec![
                ReplicaLine {
                    replica: "host-a-17".into(),
                    live: true,
                    heartbeat_secs: Some(1),
                    serves: 3,
                    leads: vec!["casual".into(), "ranked_3v3".into()],
                },
                ReplicaLine {
                    replica: "host-b-9".into(),
                    live: false,
                    heartbeat_secs: Some(40),
                    serves: 3,
                    leads: vec![],
                },
            ],
            servers: vec![FleetRegion {
                region: "eu-west".into(),
                ready: 3,
                silent: 1,
                allocated: 12,
            }],
        };
        let text = render(&view, false);
        assert!(text.contains("in 17 s (or at 150 players)"), "{text}");
        assert!(text.contains("host-a-17 (term 2)"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["eu-west", "3", "1", "12"]),
            "{text}"
        );
        assert!(
            text.contains("2 matches of the rounds below waited for a server"),
            "{text}"
        );
        let replica_row = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name))
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        };
        assert_eq!(
            replica_row("host-a-17").as_deref(),
            Some("host-a-17 live 1 s ago 2 of 3: casual, ranked_3v3")
        );
        assert_eq!(
            replica_row("host-b-9").as_deref(),
            Some("host-b-9 gone 40 s ago 0 of 3")
        );
        assert!(text.contains("0.873"), "{text}");
        assert!(text.contains("21/38/55"), "{text}");
        assert!(text.contains("6+1r"), "{text}");
        let factor_row = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name))
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
        };
        assert_eq!(factor_row("equal_teams"), Some(vec!["equal_teams", "0.95"]));
        assert_eq!(factor_row("enemy_ping"), Some(vec!["enemy_ping", "0.70"]));
        for line in text.lines() {
            assert!(line.chars().count() <= 80, "over 80 columns: {line:?}");
        }
        assert!(!text.contains('\x1b'), "no escapes without ansi");
    }

    #[test]
    fn long_names_wrap_inside_80_columns() {
        let at = Utc.with_ymd_and_hms(2026, 1, 14, 20, 0, 0).unwrap();
        let queue = |name: &str, waiting_for: &str| QueueLine {
            queue: name.into(),
            pool_size: 123_456,
            seconds_to_next: Some(86_399),
            waiting_for: waiting_for.into(),
            target_pool: Some(1_000_000),
            min_pool: Some(600),
            leader: Some("matchmaker-replica-eu-west-1b-7f9c4d-12345 (term 1234)".into()),
            pending_matches: 0,
        };
        let round = |id: i64| RoundLine {
            round_id: id,
            queue: "ranked_competitive_5v5_season_twelve".into(),
            trigger: "pool_size".into(),
            committed_at: at,
            pool_size: 12_000,
            match_count: 1_200,
            matched: 11_990,
            left_over: 10,
            rejected: 123,
            score: Some(0.9),
            factors: vec![
                ("opponent_variation".into(), 1.0),
                ("two_hosts".into(), 0.5),
            ],
            solve_ms: 12_345.0,
            wait_secs: Some((1234.0, 5678.0, 9999.0)),
            no_server_matches: 0,
        };
        let view = StatusView {
            at,
            queues: vec![
                queue("ranked_competitive_5v5_season_twelve", "schedule"),
                queue("casual", "min_pool"),
                queue("arena", "players"),
            ],
            rounds: (1..=12).rev().map(round).collect(),
            replicas: (0..3)
                .map(|i| ReplicaLine {
                    replica: format!("matchmaker-replica-eu-west-1b-7f9c4d-1234{i}"),
                    live: i != 2,
                    heartbeat_secs: Some(86_400),
                    serves: 40,
                    leads: (0..13)
                        .map(|q| format!("ranked_competitive_5v5_season_{q}"))
                        .collect(),
                })
                .collect(),
            servers: Vec::new(),
        };
        for width in [80, 100] {
            let text = render_for(&view, &Output::plain(width));
            for line in text.lines() {
                assert!(
                    line.chars().count() <= usize::from(width),
                    "over {width} columns: {line:?}\n{text}"
                );
            }
            assert!(
                text.contains("#12"),
                "newest round in the factor table:\n{text}"
            );
        }
        let narrow = render_for(&view, &Output::plain(80));
        let wide = render_for(&view, &Output::plain(100));
        let columns = |text: &str| {
            text.lines()
                .find(|l| l.starts_with("FACTOR AVERAGES"))
                .map(|l| l.matches('#').count())
        };
        assert!(
            columns(&wide) > columns(&narrow),
            "more rounds fit 100 columns"
        );
    }
}
