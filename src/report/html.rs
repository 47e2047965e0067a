//! The page: a summary table, then one section per queue with its plots inlined as SVG.
//! One file, no scripts, no external stylesheets, fonts or images: it opens offline, in a
//! mail client's preview, or attached to a ticket.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};

use super::plots::{self, PlotError};
use super::{QueueReport, ReportInput, Summary, queue_reports};

/// A plot's SVG and the sentence that says how to read it.
struct Figure {
    svg: String,
    caption: &'static str,
}

/// The whole report page for `input`.
pub fn render_html(input: &ReportInput) -> Result<String, PlotError> {
    let queues = queue_reports(input);
    let mut page = String::with_capacity(64 * 1024 + queues.len() * 300 * 1024);
    let window = format!("{} to {}", stamp(input.from), stamp(input.to));
    let scope = match &input.queue_filter {
        Some(q) => format!("queue {}", escape(q)),
        None => "all queues".to_string(),
    };
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Matchmaker round report: {window}</title>\n<style>{STYLE}</style>\n\
         </head>\n<body>\n<h1>Matchmaker round report</h1>\n\
         <p class=\"meta\">Rounds committed from <b>{window}</b> (UTC, {scope}). \
         Made {} by matchmaker {}.</p>\n",
        stamp(input.generated_at),
        env!("CARGO_PKG_VERSION"),
    );

    if queues.is_empty() {
        page.push_str(
            "<p class=\"empty\">No round was committed in this window. Widen it with \
             <code>--from</code> / <code>--to</code>, or check the queue name.</p>\n",
        );
    } else {
        summary_table(&mut page, &queues);
        wait_estimate_table(&mut page, &queues);
        ready_check_table(&mut page, input);
        results_table(&mut page, input);
        factor_results_table(&mut page, input);
        servers_table(&mut page, input);
        maps_table(&mut page, input);
        for q in &queues {
            queue_section(&mut page, q)?;
        }
    }
    page.push_str(NOTES);
    page.push_str("</body>\n</html>\n");
    Ok(page)
}

fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

/// Text for HTML element content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An id fragment: letters, digits, `-` and `_` kept, the rest replaced.
fn anchor(queue: &str) -> String {
    queue
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// A table cell with the exact figure in `data-value` (for tools and tests) and a
/// rounded one to read.
fn cell(field: &str, value: Option<f64>, shown: impl Fn(f64) -> String) -> String {
    match value {
        Some(v) => format!(
            "<td data-field=\"{field}\" data-value=\"{v}\">{}</td>",
            shown(v)
        ),
        None => format!("<td data-field=\"{field}\" data-value=\"\">-</td>"),
    }
}

fn summary_table(page: &mut String, queues: &[QueueReport]) {
    page.push_str(
        "<h2>Summary</h2>\n<table class=\"summary\">\n<thead><tr><th>queue</th>\
         <th>rounds</th><th>matches</th><th>players matched</th><th>median wait</th>\
         <th>p90 wait</th><th>mean round score</th><th>mean pool size</th>\
         <th>opponents met again</th></tr></thead>\n<tbody>\n",
    );
    for q in queues {
        let s: &Summary = &q.summary;
        let count = |v: f64| format!("{v:.0}");
        let _ = writeln!(
            page,
            "<tr data-queue=\"{}\"><th><a href=\"#queue-{}\">{}</a></th>{}{}{}{}{}{}{}{}</tr>",
            escape(&q.queue),
            anchor(&q.queue),
            escape(&q.queue),
            cell("rounds", Some(s.rounds as f64), count),
            cell("matches", Some(s.matches as f64), count),
            cell("players_matched", Some(s.players_matched as f64), count),
            cell("wait_p50_s", s.wait_p50_s, seconds),
            cell("wait_p90_s", s.wait_p90_s, seconds),
            cell("mean_round_score", s.mean_round_score, |v| format!(
                "{v:.4}"
            )),
            cell("mean_pool_size", s.mean_pool_size, |v| format!("{v:.1}")),
            cell("repeat_share", s.repeat_share, |v| format!(
                "{:.1}%",
                100.0 * v
            )),
        );
    }
    page.push_str("</tbody>\n</table>\n");
}

/// How the wait estimates the matched players read when they enqueued came true, per
/// queue whose rounds recorded any.
fn wait_estimate_table(page: &mut String, queues: &[QueueReport]) {
    if queues.iter().all(|q| q.summary.wait_estimates.is_none()) {
        return;
    }
    page.push_str(
        "<h2>Wait estimates</h2>\n<p>The estimate each matched player read when they \
         enqueued, against the wait they had.</p>\n<table class=\"summary\">\n<thead><tr>\
         <th>queue</th><th>players</th><th>mean |error|</th><th>mean error (+: too long)</th>\
         <th>within half the wait (or 15 s)</th></tr></thead>\n<tbody>\n",
    );
    for q in queues {
        let Some(e) = q.summary.wait_estimates else {
            continue;
        };
        let _ = writeln!(
            page,
            "<tr data-estimate-queue=\"{}\"><th>{}</th>{}{}{}{}</tr>",
            escape(&q.queue),
            escape(&q.queue),
            cell("estimated_players", Some(e.players as f64), |v| format!(
                "{v:.0}"
            )),
            cell("estimate_abs_error_s", Some(e.mean_abs_error_s), seconds),
            cell("estimate_error_s", Some(e.mean_error_s), |v| format!(
                "{v:+.1} s"
            )),
            cell("estimate_within_share", Some(e.within_share), |v| format!(
                "{:.1}%",
                100.0 * v
            )),
        );
    }
    page.push_str("</tbody>\n</table>\n");
}

/// The ready checks of the window's matches, per queue that has one.
fn ready_check_table(page: &mut String, input: &ReportInput) {
    if input.ready_checks.is_empty() {
        return;
    }
    page.push_str(
        "<h2>Ready checks</h2>\n<table class=\"summary\">\n<thead><tr><th>queue</th>\
         <th>ready</th><th>cancelled</th><th>pending</th><th>accept rate</th>\
         <th>median time to accept</th></tr></thead>\n<tbody>\n",
    );
    for r in &input.ready_checks {
        let count = |v: f64| format!("{v:.0}");
        let _ = writeln!(
            page,
            "<tr><th>{}</th>{}{}{}{}{}</tr>",
            escape(&r.queue),
            cell("ready", Some(r.ready as f64), count),
            cell("cancelled", Some(r.cancelled as f64), count),
            cell("pending", Some(r.pending as f64), count),
            cell("accept_rate", r.accept_rate, |v| format!(
                "{:.1}%",
                100.0 * v
            )),
            cell("median_accept_s", r.median_accept_s, seconds),
        );
    }
    page.push_str("</tbody>\n</table>\n");
}

/// The results of the window's matches, per queue, and how the predictions came true:
/// the share reported, disputes, early leavers, the Brier score, lopsided predictions and
/// stomps, and the reliability curve (predicted against observed, per tenth).
fn results_table(page: &mut String, input: &ReportInput) {
    if input.results.iter().all(|r| r.reported == 0) {
        return;
    }
    page.push_str(
        "<h2>Results: predicted against real</h2>\n<table class=\"summary\">\n<thead><tr>\
         <th>queue</th><th>matches</th><th>reported</th><th>disputed</th>\
         <th>left early</th><th>Brier score</th><th>lopsided (&ge;70%)</th>\
         <th>stomps</th><th>reliability: predicted &rarr; observed (matches)</th>\
         </tr></thead>\n<tbody>\n",
    );
    let count = |v: f64| format!("{v:.0}");
    let share = |v: f64| format!("{:.1}%", 100.0 * v);
    for r in &input.results {
        let curve: Vec<String> = r
            .calibration
            .iter()
            .map(|b| {
                format!(
                    "{:.0}% &rarr; {:.0}% ({})",
                    100.0 * b.predicted,
                    100.0 * b.observed,
                    b.matches
                )
            })
            .collect();
        let _ = writeln!(
            page,
            "<tr><th>{}</th>{}{}{}{}{}{}{}<td class=\"curve\">{}</td></tr>",
            escape(&r.queue),
            cell("matches", Some(r.matches as f64), count),
            cell("reported", Some(r.reported as f64), count),
            cell("disputed", Some(r.disputed as f64), count),
            cell("left_early", r.left_early_share, share),
            cell("brier", r.brier, |v| format!("{v:.3}")),
            cell("lopsided", Some(r.lopsided as f64), count),
            cell("stomps", Some(r.stomps as f64), count),
            curve.join("; "),
        );
    }
    page.push_str("</tbody>\n</table>\n");
}

/// Per queue and factor: the reported matches split at the factor's median, the early
/// leavers and stomps of each half, and the factor's correlation with leaving early and
/// with surprises: which weights the results say matter.
fn factor_results_table(page: &mut String, input: &ReportInput) {
    if input.factor_results.is_empty() {
        return;
    }
    page.push_str(
        "<h2>Factors against results</h2>\n<p class=\"meta\">Each factor's reported \
         matches split at its median: players who left early and stomps (a team predicted \
         at 70% or more won) in the lower and the upper half, and the factor's correlation \
         with leaving early and with the prediction's squared error.</p>\n\
         <table class=\"summary\">\n<thead><tr>\
         <th>queue</th><th>factor</th><th>matches</th><th>median</th>\
         <th>left early: low half</th><th>high half</th>\
         <th>stomps: low half</th><th>high half</th>\
         <th>corr. with leaving early</th><th>corr. with surprise</th>\
         </tr></thead>\n<tbody>\n",
    );
    let count = |v: f64| format!("{v:.0}");
    let share = |v: f64| format!("{:.1}%", 100.0 * v);
    let value = |v: f64| format!("{v:.3}");
    let corr = |v: f64| format!("{v:+.2}");
    for f in &input.factor_results {
        let _ = writeln!(
            page,
            "<tr data-factor=\"{}\"><th>{}</th><th>{}</th>{}{}{}{}{}{}{}{}</tr>",
            escape(&f.factor),
            escape(&f.queue),
            escape(&f.factor),
            cell("factor_matches", Some(f.matches as f64), count),
            cell("median", f.median, value),
            cell("left_early_low", f.left_early_low, share),
            cell("left_early_high", f.left_early_high, share),
            cell("stomps_low", f.stomps_low, share),
            cell("stomps_high", f.stomps_high, share),
            cell("left_early_corr", f.left_early_corr, corr),
            cell("surprise_corr", f.surprise_corr, corr),
        );
    }
    page.push_str("</tbody>\n</table>\n");
}

/// Per queue placed on game servers: matches placed, matches that waited for a server,
/// servers used, and how long a server sat free before it was allocated.
fn servers_table(page: &mut String, input: &ReportInput) {
    if input.servers.is_empty() {
        return;
    }
    page.push_str(
        "<h2>Game servers</h2>\n<table class=\"summary\">\n<thead><tr>\
         <th>queue</th><th>matches placed</th><th>waited for a server</th>\
         <th>servers used</th><th>server free before allocation p50</th><th>p90</th>\
         </tr></thead>\n<tbody>\n",
    );
    let count = |v: f64| format!("{v:.0}");
    for s in &input.servers {
        let _ = writeln!(
            page,
            "<tr><th>{}</th>{}{}{}{}{}</tr>",
            escape(&s.queue),
            cell("placed", Some(s.placed as f64), count),
            cell("waited_for_server", Some(s.waited_for_server as f64), count),
            cell("servers", Some(s.servers as f64), count),
            cell("idle_p50", s.idle_p50_s, seconds),
            cell("idle_p90", s.idle_p90_s, seconds),
        );
    }
    page.push_str("</tbody>\n</table>\n");
}

/// Per queue with maps and map: matches played, those that kept every veto of their
/// players, and the share of seats replaying the player's previous map.
fn maps_table(page: &mut String, input: &ReportInput) {
    if input.maps.is_empty() {
        return;
    }
    page.push_str(
        "<h2>Maps</h2>\n<table class=\"summary\">\n<thead><tr>\
         <th>queue</th><th>map</th><th>matches</th><th>vetoes all kept</th>\
         <th>seats replaying the player's previous map</th>\
         </tr></thead>\n<tbody>\n",
    );
    let count = |v: f64| format!("{v:.0}");
    let share = |v: f64| format!("{:.1}%", 100.0 * v);
    for m in &input.maps {
        let _ = writeln!(
            page,
            "<tr><th>{}</th><th>{}</th>{}{}{}</tr>",
            escape(&m.queue),
            escape(&m.map),
            cell("map_matches", Some(m.matches as f64), count),
            cell(
                "vetoes_kept",
                Some((m.matches - m.vetoes_relaxed) as f64),
                count
            ),
            cell(
                "replayed",
                (m.seats > 0).then(|| m.replayed as f64 / m.seats as f64),
                share
            ),
        );
    }
    page.push_str("</tbody>\n</table>\n");
}

/// `75.2 s`, `4 min 05 s`, `1 h 02 min`.
fn seconds(v: f64) -> String {
    if v < 60.0 {
        format!("{v:.1} s")
    } else if v < 3600.0 {
        let s = v.round() as i64;
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        let m = (v / 60.0).round() as i64;
        format!("{} h {:02} min", m / 60, m % 60)
    }
}

fn queue_section(page: &mut String, q: &QueueReport) -> Result<(), PlotError> {
    let figures = [
        Figure {
            svg: plots::pool_size(q)?,
            caption: "Players in the pool when each round ran, how many it matched and how \
                      many it left for the next round.",
        },
        Figure {
            svg: plots::rounds_over_time(q)?,
            caption: "Rounds per interval, by what started them: the schedule, the pool \
                      reaching target_pool early (pool size), or a player reaching \
                      max_wait.",
        },
        Figure {
            svg: plots::wait_distribution(q)?,
            caption: "Every matched player's wait from enqueue to match; the lines mark \
                      the median and the 90th percentile.",
        },
        Figure {
            svg: plots::skill_difference(q)?,
            caption: "Per match, the mean skill of its strongest team minus that of its \
                      weakest (raw skills): the equal-teams factor's input.",
        },
        Figure {
            svg: plots::enemy_ping(q)?,
            caption: "Per match, the mean ping between opponents as the enemy-ping factor \
                      estimates it (peer pings, else the best shared region), or on \
                      dedicated servers the players' mean latency to the match's region.",
        },
        Figure {
            svg: plots::factor_scores(q)?,
            caption: "Each factor's mean score over a round's matches (1 is best); a \
                      factor that drops after a config change is what the change cost.",
        },
        Figure {
            svg: plots::opponent_repeats(q)?,
            caption: "Of each round's opponent pairs, the share that had already met in a \
                      player's previous match: as opponents again, or as teammates then.",
        },
    ];
    debug_assert_eq!(figures.len(), super::PLOTS_PER_QUEUE);
    let _ = writeln!(
        page,
        "<section id=\"queue-{}\">\n<h2>Queue {}</h2>",
        anchor(&q.queue),
        escape(&q.queue)
    );
    // Why players waited: the round's left-over reasons, summed over the window.
    let mut reasons: std::collections::BTreeMap<&str, i64> = std::collections::BTreeMap::new();
    for r in &q.rounds {
        for (reason, n) in &r.left_over_by_reason {
            *reasons.entry(reason.as_str()).or_default() += n;
        }
    }
    if !reasons.is_empty() {
        let list: Vec<String> = reasons
            .iter()
            .map(|(reason, n)| format!("{} {n}", escape(reason)))
            .collect();
        let _ = writeln!(
            page,
            "<p class=\"notes\">Players left over by reason (a player counts once per \
             round): {}.</p>",
            list.join(", ")
        );
    }
    for f in figures {
        let _ = writeln!(
            page,
            "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>",
            f.svg.trim(),
            f.caption
        );
    }
    page.push_str("</section>\n");
    Ok(())
}

const STYLE: &str = "
body { font-family: sans-serif; color: #222; margin: 24px auto; max-width: 1000px;
       padding: 0 16px; line-height: 1.4; }
h1 { font-size: 26px; margin-bottom: 4px; }
h2 { font-size: 20px; margin-top: 32px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.meta, figcaption, .notes { color: #555; font-size: 14px; }
table.summary { border-collapse: collapse; font-size: 14px; }
table.summary th, table.summary td { border: 1px solid #ccc; padding: 4px 10px; }
table.summary td { text-align: right; font-variant-numeric: tabular-nums; }
table.summary thead th { background: #f2f2f2; }
figure { margin: 18px 0 26px; }
figure svg { display: block; max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { margin-top: 6px; }
.empty { font-size: 16px; padding: 12px; background: #fff6e0; border: 1px solid #f0d080; }
";

const NOTES: &str = "<h2>How the figures are made</h2>
<ul class=\"notes\">
<li>The window holds the rounds committed in it (<code>rounds.committed_at</code>), and with
them their matches and matched players, wherever those players enqueued.</li>
<li>Waits are <code>match_players.matched_at - enqueued_at</code>; the median and p90
interpolate between ranks as PostgreSQL's <code>percentile_cont</code> does.</li>
<li>The mean round score is the mean of <code>rounds.score</code> over rounds that matched
anyone; players matched is the sum of <code>rounds.matched</code>.</li>
<li>Opponents met again: of every (player, opponent) pair of a round, counted from both
sides, the share that met in the player's previous match of the queue, as in
<code>docs/ops-queries.sql</code> (<code>opponent_repeats</code>).</li>
</ul>
";

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use chrono::TimeZone;

    use super::*;
    use crate::report::{MatchRow, PingModel, PlacedPlayer, RepeatRow, RoundRow};

    fn input(rounds: usize) -> ReportInput {
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 20, 0, 0).unwrap();
        let mut out = ReportInput {
            from: t0,
            to: t0 + chrono::Duration::hours(2),
            queue_filter: None,
            generated_at: t0 + chrono::Duration::hours(3),
            rounds: Vec::new(),
            players: Vec::new(),
            matches: Vec::new(),
            repeats: Vec::new(),
            ready_checks: Vec::new(),
            results: Vec::new(),
            factor_results: Vec::new(),
            servers: Vec::new(),
            maps: Vec::new(),
        };
        for i in 0..rounds as i64 {
            out.rounds.push(RoundRow {
                round_id: i + 1,
                queue: if i % 2 == 0 { "ranked_3v3" } else { "<odd>" }.into(),
                trigger: if i % 3 == 0 { "pool_size" } else { "schedule" }.into(),
                committed_at: t0 + chrono::Duration::minutes(2 * i),
                pool_size: 20 + i,
                match_count: 2,
                matched: 12,
                left_over: 8 + i,
                left_over_by_reason: [("outscored".to_string(), 8 + i)].into_iter().collect(),
                rejected: 0,
                score: Some(0.8 + 0.001 * i as f64),
                factor_averages: [("equal_teams".to_string(), 0.9), ("enemy_ping".into(), 0.7)]
                    .into_iter()
                    .collect(),
                ping: PingModel::default(),
                wait_estimates: None,
            });
            for m in 0..2 {
                let match_id = 10 * (i + 1) + m;
                out.matches.push(MatchRow {
                    match_id,
                    round_id: i + 1,
                    score: 0.8,
                    region: None,
                });
                for p in 0..6 {
                    out.players.push(PlacedPlayer {
                        match_id,
                        player_id: format!("p{p}"),
                        team: (p % 2) as i32,
                        skill: 1400.0 + 25.0 * p as f64,
                        wait_s: 10.0 + (i * 6 + p) as f64,
                        latencies: [("eu".to_string(), 20.0 + p as f64)].into_iter().collect(),
                        peer_pings: BTreeMap::new(),
                    });
                }
            }
            out.repeats.push(RepeatRow {
                round_id: i + 1,
                opponent_pairs: 36,
                opponents_again: i % 4,
                teammates_before: 1,
            });
        }
        out
    }

    #[test]
    fn the_page_is_self_contained_with_every_plot_per_queue() {
        let page = render_html(&input(12)).unwrap();
        assert_eq!(
            page.matches("<svg").count(),
            2 * super::super::PLOTS_PER_QUEUE
        );
        for forbidden in [
            "<script",
            "src=\"http",
            "href=\"http",
            "url(http",
            "@import",
        ] {
            assert!(!page.contains(forbidden), "{forbidden}");
        }
        // The queue name is escaped everywhere it appears.
        assert!(!page.contains("<odd>"));
        assert!(page.contains("Queue &lt;odd&gt;"));
        assert!(page.contains("data-field=\"rounds\" data-value=\"6\""));
    }

    #[test]
    fn an_empty_window_says_so_instead_of_drawing_empty_plots() {
        let page = render_html(&input(0)).unwrap();
        assert_eq!(page.matches("<svg").count(), 0);
        assert!(page.contains("No round was committed in this window"));
    }

    #[test]
    fn a_single_round_without_matches_draws_panels_not_errors() {
        let mut data = input(1);
        data.players.clear();
        data.matches.clear();
        data.repeats.clear();
        data.rounds[0].factor_averages.clear();
        data.rounds[0].score = None;
        let page = render_html(&data).unwrap();
        assert_eq!(page.matches("<svg").count(), super::super::PLOTS_PER_QUEUE);
        assert!(page.contains("no player was matched in this window"));
    }

    #[test]
    fn seconds_read_as_minutes_and_hours_when_long() {
        assert_eq!(seconds(12.34), "12.3 s");
        assert_eq!(seconds(245.0), "4 min 05 s");
        assert_eq!(seconds(3720.0), "1 h 02 min");
    }
}
