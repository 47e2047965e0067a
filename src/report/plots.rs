//! The report's plots: each an SVG string drawn by `plotters`' SVG backend (no fonts
//! read, no files written; the browser lays out the text).
//!
//! Every plot has the same frame (width, margins, label sizes), a legend in a column of
//! its own on the right (so it never covers data), and a "no data" panel instead of
//! empty axes when the window has nothing to show.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{QueueReport, RoundRow};
use crate::db::status::RoundLine;

/// A plot failed to draw (a range plotters refused); carries plotters' message.
#[derive(Debug, thiserror::Error)]
#[error("drawing the plot {plot:?}: {message}")]
pub struct PlotError {
    pub plot: String,
    pub message: String,
}

const WIDTH: u32 = 960;
const HEIGHT: u32 = 330;
/// The right-hand column that holds the legend.
const LEGEND_WIDTH: u32 = 190;
const FONT: &str = "sans-serif";

/// Okabe-Ito colours: told apart with the common colour-vision deficiencies.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A named line over time: (legend label, points).
type Series = (String, Vec<(DateTime<Utc>, f64)>);

/// One legend entry: label and colour; `line` draws a line sample instead of a box.
struct Legend {
    label: String,
    colour: RGBColor,
    line: bool,
}

/// Draws into an SVG string of the standard size: `draw` gets the plot area and the
/// legend column (empty legends leave the column blank).
fn svg(
    name: &str,
    draw: impl FnOnce(&Area, &Area) -> Result<Vec<Legend>, String>,
) -> Result<String, PlotError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, HEIGHT)).into_drawing_area();
        let fail = |message: String| PlotError {
            plot: name.to_string(),
            message,
        };
        root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
        let (main, side) = root.split_horizontally(WIDTH - LEGEND_WIDTH);
        let legend = draw(&main, &side).map_err(fail)?;
        draw_legend(&side, &legend).map_err(|e| fail(e.to_string()))?;
        root.present().map_err(|e| fail(e.to_string()))?;
    }
    Ok(buf)
}

fn draw_legend(
    area: &Area,
    entries: &[Legend],
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let style = TextStyle::from((FONT, 16).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, e) in entries.iter().enumerate() {
        let y = 56 + 26 * i as i32;
        if e.line {
            area.draw(&PathElement::new(
                vec![(8, y), (30, y)],
                e.colour.stroke_width(3),
            ))?;
        } else {
            area.draw(&Rectangle::new(
                [(10, y - 7), (26, y + 7)],
                e.colour.filled(),
            ))?;
        }
        area.draw(&Text::new(e.label.clone(), (38, y), style.clone()))?;
    }
    Ok(())
}

/// A titled panel that says there is nothing to plot.
fn no_data(area: &Area, title: &str, why: &str) -> Result<Vec<Legend>, String> {
    let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    let (w, h) = area.dim_in_pixel();
    area.draw(&Text::new(
        title.to_string(),
        (w as i32 / 2, 18),
        TextStyle::from((FONT, 21).into_font()).pos(Pos::new(HPos::Center, VPos::Center)),
    ))
    .map_err(e)?;
    area.draw(&Rectangle::new(
        [(60, 40), (w as i32 - 10, h as i32 - 40)],
        RGBColor(200, 200, 200).stroke_width(1),
    ))
    .map_err(e)?;
    area.draw(&Text::new(
        why.to_string(),
        (w as i32 / 2, h as i32 / 2),
        TextStyle::from((FONT, 15).into_font())
            .color(&RGBColor(110, 110, 110))
            .pos(Pos::new(HPos::Center, VPos::Center)),
    ))
    .map_err(e)?;
    Ok(Vec::new())
}

/// The time axis of rounds committed at `times`, padded so the first and last points are
/// not on the frame (and a single round still gets a span).
fn time_range(times: impl IntoIterator<Item = DateTime<Utc>>) -> (DateTime<Utc>, DateTime<Utc>) {
    let mut times = times.into_iter();
    let first = times.next().unwrap_or_default();
    let (first, last) = times.fold((first, first), |(lo, hi), t| (lo.min(t), hi.max(t)));
    let pad = ((last - first) / 40).max(Duration::seconds(30));
    (first - pad, last + pad)
}

/// When each of `rounds` was committed.
fn commit_times(rounds: &[RoundRow]) -> impl Iterator<Item = DateTime<Utc>> + '_ {
    rounds.iter().map(|r| r.committed_at)
}

/// Tick labels for a time axis of this span: seconds only when it is short, the date
/// only when it is long.
fn time_format(span: Duration) -> &'static str {
    if span <= Duration::minutes(10) {
        "%H:%M:%S"
    } else if span <= Duration::hours(30) {
        "%H:%M"
    } else {
        "%m-%d %H:%M"
    }
}

/// 1, 2 or 5 times a power of ten, the smallest at least `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// The bucket width for counting rounds over a time span: a round number of minutes or
/// hours giving at most about 30 bars, and never under a minute (rounds run minutes
/// apart; finer buckets would hold one round each).
pub fn bucket_width(span: Duration) -> Duration {
    const STEPS_S: [i64; 12] = [
        60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
    ];
    let target = span.num_seconds() / 30;
    let s = STEPS_S
        .into_iter()
        .find(|s| *s >= target)
        .unwrap_or_else(|| (target + 86_399) / 86_400 * 86_400);
    Duration::seconds(s)
}

fn upper(max: f64) -> f64 {
    if max > 0.0 { max * 1.12 } else { 1.0 }
}

/// Lines over time (the axis spans `span`), one per series, each round a point.
fn time_lines(
    area: &Area,
    title: &str,
    y_desc: &str,
    span: (DateTime<Utc>, DateTime<Utc>),
    series: &[Series],
    y_range: (f64, f64),
    y_format: &dyn Fn(&f64) -> String,
) -> Result<Vec<Legend>, String> {
    let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    let (t0, t1) = span;
    let format = time_format(t1 - t0);
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 21))
        .margin(10)
        .x_label_area_size(50)
        .y_label_area_size(72)
        .build_cartesian_2d(RangedDateTime::from(t0..t1), y_range.0..y_range.1)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_labels(7)
        .y_labels(6)
        .x_label_formatter(&|t| t.format(format).to_string())
        .y_label_formatter(y_format)
        .x_desc("time (UTC)")
        .y_desc(y_desc)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(e)?;
    let mut legend = Vec::new();
    for (i, (label, points)) in series.iter().enumerate() {
        let c = colour(i);
        chart
            .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))
            .map_err(e)?;
        // Markers only while they do not merge into a blot.
        if points.len() <= 150 {
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 3, c.filled())))
                .map_err(e)?;
        }
        legend.push(Legend {
            label: label.clone(),
            colour: c,
            line: true,
        });
    }
    Ok(legend)
}

/// Pool size and matched players per round.
pub fn pool_size(q: &QueueReport) -> Result<String, PlotError> {
    let title = "Pool size per round";
    svg(title, |area, _| {
        if q.rounds.is_empty() {
            return no_data(area, title, "no rounds in this window");
        }
        let pick = |f: fn(&RoundRow) -> i64| -> Vec<(DateTime<Utc>, f64)> {
            q.rounds
                .iter()
                .map(|r| (r.committed_at, f(r) as f64))
                .collect()
        };
        let series = vec![
            ("pool size".to_string(), pick(|r| r.pool_size)),
            ("matched".to_string(), pick(|r| r.matched)),
            ("left over".to_string(), pick(|r| r.left_over)),
        ];
        let max = q.rounds.iter().map(|r| r.pool_size).max().unwrap_or(0) as f64;
        time_lines(
            area,
            title,
            "players",
            time_range(commit_times(&q.rounds)),
            &series,
            (0.0, upper(max)),
            &|v| format!("{v:.0}"),
        )
    })
}

/// Rounds per time bucket, stacked by trigger.
pub fn rounds_over_time(q: &QueueReport) -> Result<String, PlotError> {
    let title = "Rounds over time, by trigger";
    svg(title, |area, _| {
        if q.rounds.is_empty() {
            return no_data(area, title, "no rounds in this window");
        }
        let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
        let (t0, t1) = time_range(commit_times(&q.rounds));
        let width = bucket_width(t1 - t0);
        let w = width.num_seconds();
        // Buckets aligned to multiples of the width since the epoch (round clock times).
        let bucket_of = |t: DateTime<Utc>| t.timestamp().div_euclid(w) * w;
        let triggers: Vec<String> = {
            let mut t: Vec<String> = q.rounds.iter().map(|r| r.trigger.clone()).collect();
            t.sort();
            t.dedup();
            t
        };
        let mut counts: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
        for r in &q.rounds {
            let i = triggers.iter().position(|t| *t == r.trigger).unwrap_or(0);
            counts
                .entry(bucket_of(r.committed_at))
                .or_insert_with(|| vec![0; triggers.len()])[i] += 1;
        }
        let first = DateTime::from_timestamp(bucket_of(t0), 0).unwrap_or(t0);
        let last = DateTime::from_timestamp(bucket_of(t1) + w, 0).unwrap_or(t1);
        let max = counts
            .values()
            .map(|c| c.iter().sum::<u32>())
            .max()
            .unwrap_or(1) as f64;
        let format = time_format(last - first);
        let mut chart = ChartBuilder::on(area)
            .caption(title, (FONT, 21))
            .margin(10)
            .x_label_area_size(50)
            .y_label_area_size(72)
            .build_cartesian_2d(RangedDateTime::from(first..last), 0.0..upper(max).ceil())
            .map_err(e)?;
        let y_desc = format!(
            "rounds per {}",
            humantime::format_duration(width.to_std().unwrap_or_default())
        );
        chart
            .configure_mesh()
            .x_labels(7)
            // Whole rounds only: as many ticks as integers up to the top, at most 6.
            .y_labels((upper(max).ceil() as usize + 1).min(6))
            .x_label_formatter(&|t| t.format(format).to_string())
            .y_label_formatter(&|v| {
                if v.fract() == 0.0 {
                    format!("{v:.0}")
                } else {
                    String::new()
                }
            })
            .x_desc("time (UTC)")
            .y_desc(y_desc)
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(e)?;
        // A small gap between bars so neighbours stay apart.
        let gap = Duration::seconds((w / 12).max(1));
        for (bucket, per_trigger) in &counts {
            let start = DateTime::from_timestamp(*bucket, 0).unwrap_or(first) + gap;
            let end = DateTime::from_timestamp(*bucket + w, 0).unwrap_or(last) - gap;
            let mut base = 0.0;
            for (i, n) in per_trigger.iter().enumerate() {
                if *n == 0 {
                    continue;
                }
                let top = base + *n as f64;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(start, base), (end, top)],
                        colour(i).filled(),
                    )))
                    .map_err(e)?;
                base = top;
            }
        }
        Ok(triggers
            .iter()
            .enumerate()
            .map(|(i, t)| Legend {
                label: t.replace('_', " "),
                colour: colour(i),
                line: false,
            })
            .collect())
    })
}

/// A histogram's bins: `counts[i]` values in [start + i * step, start + (i + 1) * step),
/// and the values beyond 1.5 times the 95th percentile, a long tail that would squeeze
/// every other bar into a few pixels, counted in one `overflow` bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Bins {
    pub start: f64,
    pub step: f64,
    pub counts: Vec<u32>,
    /// (the last binned value's bound, how many values lie above it).
    pub overflow: Option<(f64, u32)>,
}

/// Bins `values` (not empty) into about 40 bins of a round width, from 0 or the
/// smallest value if it is negative.
pub fn bin(values: &[f64]) -> Bins {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let lo = sorted.first().copied().unwrap_or(0.0).min(0.0);
    let max = sorted.last().copied().unwrap_or(0.0);
    let p95 = super::percentile(&sorted, 0.95).unwrap_or(max);
    // A tail: the top 5% reaches well past the rest; the bins stop at 1.5 x p95.
    let cut = lo + 1.5 * (p95 - lo);
    let tail = max > cut && p95 > lo;
    let hi = if tail { cut } else { max };
    let step = nice_step((hi - lo) / 40.0);
    let start = (lo / step).floor() * step;
    let bins = (((hi - start) / step).floor() as usize + 1).max(1);
    let end = start + step * bins as f64;
    let mut counts = vec![0u32; bins];
    let mut over = 0u32;
    for v in &sorted {
        if tail && *v >= end {
            over += 1;
        } else {
            let i = (((v - start) / step).floor().max(0.0) as usize).min(bins - 1);
            counts[i] += 1;
        }
    }
    Bins {
        start,
        step,
        counts,
        overflow: (over > 0).then_some((end, over)),
    }
}

/// A histogram of `values` with vertical marker lines (label, value).
fn histogram(
    area: &Area,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    unit: &str,
    values: &[f64],
    markers: &[(String, f64)],
) -> Result<Vec<Legend>, String> {
    let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    let Bins {
        start,
        step,
        counts,
        overflow,
    } = bin(values);
    let bins = counts.len();
    // The overflow bar takes one more bin's width at the right.
    let end = start + step * (bins + usize::from(overflow.is_some())) as f64;
    let max = counts
        .iter()
        .copied()
        .chain(overflow.map(|o| o.1))
        .max()
        .unwrap_or(1) as f64;
    let mut chart: ChartContext<SVGBackend, Cartesian2d<RangedCoordf64, RangedCoordf64>> =
        ChartBuilder::on(area)
            .caption(title, (FONT, 21))
            .margin(10)
            .x_label_area_size(50)
            .y_label_area_size(72)
            .build_cartesian_2d(start..end, 0.0..upper(max))
            .map_err(e)?;
    // Ticks fall about a tenth of the range apart: decimals to tell them apart.
    let decimals = match end - start {
        r if r >= 20.0 => 0,
        r if r >= 2.0 => 1,
        _ => 2,
    };
    chart
        .configure_mesh()
        .x_labels(10)
        .y_labels(6)
        .x_label_formatter(&|v| format!("{v:.decimals$}"))
        .y_label_formatter(&|v| {
            if v.fract() == 0.0 {
                format!("{v:.0}")
            } else {
                String::new()
            }
        })
        .x_desc(x_desc)
        .y_desc(y_desc)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(e)?;
    let bar = colour(0);
    chart
        .draw_series(
            counts
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, c)| {
                    let x0 = start + step * i as f64;
                    Rectangle::new(
                        [(x0 + step * 0.04, 0.0), (x0 + step * 0.96, *c as f64)],
                        bar.mix(0.85).filled(),
                    )
                }),
        )
        .map_err(e)?;
    let mut legend = vec![Legend {
        label: format!("{} values", values.len()),
        colour: bar,
        line: false,
    }];
    if let Some((from, n)) = overflow {
        let x0 = start + step * bins as f64;
        let grey = RGBColor(150, 150, 150);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x0 + step * 0.04, 0.0), (x0 + step * 0.96, n as f64)],
                grey.filled(),
            )))
            .map_err(e)?;
        legend.push(Legend {
            label: format!("{n} above {}", fmt_value(from, unit)),
            colour: grey,
            line: false,
        });
    }
    for (i, (label, x)) in markers.iter().enumerate() {
        let c = colour(i + 1);
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(*x, 0.0), (*x, upper(max))],
                c.stroke_width(2),
            )))
            .map_err(e)?;
        legend.push(Legend {
            label: label.clone(),
            colour: c,
            line: true,
        });
    }
    Ok(legend)
}

/// Median and p90 marker lines for a histogram.
fn quantile_markers(values: &[f64], unit: &str) -> Vec<(String, f64)> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    [("median", 0.5), ("p90", 0.9)]
        .into_iter()
        .filter_map(|(name, p)| {
            super::percentile(&sorted, p).map(|v| (format!("{name} {}", fmt_value(v, unit)), v))
        })
        .collect()
}

fn fmt_value(v: f64, unit: &str) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.1} {unit}")
    }
}

/// Wait from enqueue to match, in seconds (minutes when the waits are long).
pub fn wait_distribution(q: &QueueReport) -> Result<String, PlotError> {
    let title = "Wait from enqueue to match";
    svg(title, |area, _| {
        if q.waits_s.is_empty() {
            return no_data(area, title, "no player was matched in this window");
        }
        let long = q.waits_s.iter().copied().fold(0.0, f64::max) > 600.0;
        let (values, unit): (Vec<f64>, &str) = if long {
            (q.waits_s.iter().map(|s| s / 60.0).collect(), "min")
        } else {
            (q.waits_s.clone(), "s")
        };
        let markers = quantile_markers(&values, unit);
        let x_desc = format!("wait ({unit})");
        histogram(area, title, &x_desc, "players", unit, &values, &markers)
    })
}

/// Max - min of team mean skills per match.
pub fn skill_difference(q: &QueueReport) -> Result<String, PlotError> {
    let title = "Team skill difference per match";
    svg(title, |area, _| {
        if q.skill_differences.is_empty() {
            return no_data(area, title, "no match in this window");
        }
        let markers = quantile_markers(&q.skill_differences, "pts");
        histogram(
            area,
            title,
            "strongest - weakest team's mean skill (skill points)",
            "matches",
            "pts",
            &q.skill_differences,
            &markers,
        )
    })
}

/// Mean enemy ping per match.
pub fn enemy_ping(q: &QueueReport) -> Result<String, PlotError> {
    let title = "Enemy ping per match";
    svg(title, |area, _| {
        if q.enemy_pings_ms.is_empty() {
            return no_data(area, title, "no match in this window");
        }
        let dedicated = q.rounds.iter().any(|r| r.ping.dedicated);
        let x_desc = if dedicated {
            "mean latency of the players to the match's region (ms)"
        } else {
            "mean ping between opponents (ms)"
        };
        let markers = quantile_markers(&q.enemy_pings_ms, "ms");
        histogram(
            area,
            title,
            x_desc,
            "matches",
            "ms",
            &q.enemy_pings_ms,
            &markers,
        )
    })
}

/// Each factor's mean score per round.
pub fn factor_scores(q: &QueueReport) -> Result<String, PlotError> {
    let title = "Factor scores per round (mean over the round's matches)";
    svg(title, |area, _| {
        let mut by_factor: BTreeMap<&str, Vec<(DateTime<Utc>, f64)>> = BTreeMap::new();
        for r in &q.rounds {
            for (f, v) in &r.factor_averages {
                by_factor
                    .entry(f.as_str())
                    .or_default()
                    .push((r.committed_at, *v));
            }
        }
        if by_factor.is_empty() {
            return no_data(area, title, "no match in this window");
        }
        let min = by_factor
            .values()
            .flatten()
            .map(|p| p.1)
            .fold(1.0, f64::min);
        // Scores live in [0, 1]; zoom to the band they use, in tenths.
        let lo = ((min - 0.02) * 10.0).floor().max(0.0) / 10.0;
        let series: Vec<Series> = by_factor
            .into_iter()
            .map(|(f, v)| (f.replace('_', " "), v))
            .collect();
        time_lines(
            area,
            title,
            "factor score",
            time_range(commit_times(&q.rounds)),
            &series,
            // A little room above 1 so perfect scores do not sit on the frame.
            (lo, 1.0 + (1.0 - lo) * 0.03),
            &|v| format!("{v:.2}"),
        )
    })
}

/// Share of opponent pairs that had met in a player's previous match, per round.
pub fn opponent_repeats(q: &QueueReport) -> Result<String, PlotError> {
    let title = "Opponents met again (from each player's previous match)";
    svg(title, |area, _| {
        if q.repeats.is_empty() {
            return no_data(area, title, "no match in this window");
        }
        let again: Vec<(DateTime<Utc>, f64)> =
            q.repeats.iter().map(|r| (r.0, 100.0 * r.1)).collect();
        let before: Vec<(DateTime<Utc>, f64)> =
            q.repeats.iter().map(|r| (r.0, 100.0 * r.2)).collect();
        let max = again
            .iter()
            .chain(&before)
            .map(|p| p.1)
            .fold(0.0, f64::max)
            .max(5.0);
        time_lines(
            area,
            title,
            "% of opponent pairs",
            time_range(commit_times(&q.rounds)),
            &[
                ("opponents again".to_string(), again),
                ("teammates before".to_string(), before),
            ],
            (0.0, upper(max)),
            &|v| format!("{v:.0}%"),
        )
    })
}

/// The console's live plot of a queue's latest rounds (newest first, as `status` reads
/// them): pool size, matched and left over per round.
pub fn recent_pool(rounds: &[RoundLine]) -> Result<String, PlotError> {
    let title = "Pool size per round";
    svg(title, |area, _| {
        if rounds.is_empty() {
            return no_data(area, title, "no round yet");
        }
        let pick = |f: fn(&RoundLine) -> i32| -> Vec<(DateTime<Utc>, f64)> {
            rounds
                .iter()
                .rev()
                .map(|r| (r.committed_at, f64::from(f(r))))
                .collect()
        };
        let series = vec![
            ("pool size".to_string(), pick(|r| r.pool_size)),
            ("matched".to_string(), pick(|r| r.matched)),
            ("left over".to_string(), pick(|r| r.left_over)),
        ];
        let max = rounds.iter().map(|r| r.pool_size).max().unwrap_or(0);
        time_lines(
            area,
            title,
            "players",
            time_range(rounds.iter().map(|r| r.committed_at)),
            &series,
            (0.0, upper(f64::from(max))),
            &|v| format!("{v:.0}"),
        )
    })
}

/// The console's live plot of a queue's latest rounds (newest first): the wait from
/// enqueue to match of each round's matched players, p50, p90 and max.
pub fn recent_waits(rounds: &[RoundLine]) -> Result<String, PlotError> {
    let title = "Wait to match per round";
    svg(title, |area, _| {
        let waited: Vec<(DateTime<Utc>, (f64, f64, f64))> = rounds
            .iter()
            .rev()
            .filter_map(|r| r.wait_secs.map(|w| (r.committed_at, w)))
            .collect();
        if waited.is_empty() {
            return no_data(area, title, "no player matched in these rounds");
        }
        let pick = |f: fn(&(f64, f64, f64)) -> f64| -> Vec<(DateTime<Utc>, f64)> {
            waited.iter().map(|(t, w)| (*t, f(w))).collect()
        };
        let series = vec![
            ("p50".to_string(), pick(|w| w.0)),
            ("p90".to_string(), pick(|w| w.1)),
            ("max".to_string(), pick(|w| w.2)),
        ];
        let max = waited.iter().map(|(_, w)| w.2).fold(0.0, f64::max);
        time_lines(
            area,
            title,
            "seconds",
            time_range(waited.iter().map(|(t, _)| *t)),
            &series,
            (0.0, upper(max)),
            &|v| seconds_label(*v),
        )
    })
}

/// A wait axis label: whole seconds, or one decimal below ten.
fn seconds_label(v: f64) -> String {
    if v < 10.0 && v.fract() != 0.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_are_1_2_5_times_a_power_of_ten() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(20.0), 20.0);
        assert!((nice_step(0.013) - 0.02).abs() < 1e-12);
        assert_eq!(nice_step(0.0), 1.0);
    }

    #[test]
    fn round_buckets_give_at_most_about_30_bars() {
        assert_eq!(bucket_width(Duration::minutes(4)), Duration::seconds(60));
        assert_eq!(bucket_width(Duration::hours(1)), Duration::seconds(120));
        assert_eq!(bucket_width(Duration::hours(24)), Duration::hours(1));
        assert_eq!(bucket_width(Duration::days(60)), Duration::days(2));
    }

    #[test]
    fn a_long_tail_goes_into_one_overflow_bar() {
        // 200 values in 0..20 and two far out: the bins cover the bulk only.
        let mut values: Vec<f64> = (0..200).map(|i| (i % 20) as f64).collect();
        values.extend([500.0, 900.0]);
        let b = bin(&values);
        assert_eq!(b.counts.iter().sum::<u32>() + b.overflow.unwrap().1, 202);
        assert_eq!(b.overflow.unwrap().1, 2);
        assert!(b.start + b.step * b.counts.len() as f64 <= 30.0, "{b:?}");
        // Without a tail every value is binned, the largest in the last bin.
        let b = bin(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(b.overflow, None);
        assert_eq!(b.counts.iter().sum::<u32>(), 4);
        assert_eq!(*b.counts.last().unwrap(), 1);
        // One value (or all equal) still gets a bin.
        assert_eq!(bin(&[0.0]).counts, vec![1]);
    }

    #[test]
    fn time_labels_carry_the_date_only_on_long_spans() {
        assert_eq!(time_format(Duration::minutes(3)), "%H:%M:%S");
        assert_eq!(time_format(Duration::hours(5)), "%H:%M");
        assert_eq!(time_format(Duration::days(3)), "%m-%d %H:%M");
    }
}
