//! The operators' console: a read-only web page on the daemon's endpoint address
//! (`matchmaker run --metrics-addr ADDR`, then `http://ADDR/console`).
//!
//! * every queue: pool, countdown, leader, this replica's part, latest round, and plots
//!   of its recent rounds (pool size; wait percentiles), refreshed every few seconds;
//! * the latest rounds; a round opens with its matches, teams and factors, and why each
//!   left-over player was left over (`matchmaker replay`'s stored side, not re-solved);
//! * a player search: `matchmaker explain` (`?player=ID` or `#player=ID` opens it);
//! * the last hour's round report (`matchmaker report`) at `/console/report`.
//!
//! Read-only by construction: GET routes only (any other method gets 405), and every
//! query runs on sessions whose transactions are read-only ([`read_only`]). The reads
//! are those of the commands (`ops::status`, `ops::explain`, `db::load_round`,
//! `db::report`). The page, its style and script are compiled into the binary and fetch
//! nothing from elsewhere (a Content-Security-Policy of `'self'` holds the browser to
//! that), so it works air-gapped. No authentication, and it shows player ids: serve it on
//! loopback or a private operations network only.
//!
//! The daemon's endpoints (`daemon::endpoints`) know nothing of it: `ops::run` serves
//! both on the one address.

pub mod read_only;
pub mod views;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use chrono::Utc;
use serde::Serialize;
use sqlx::PgPool;

use crate::daemon::health::Health;
use crate::db::report::{ReportWindow, read_report};
use crate::db::status::read_round_lines;
use crate::db::{self, DbError};
use crate::report::{self, PlotError};

const PAGE: &str = include_str!("console/page.html");
const STYLE: &str = include_str!("console/console.css");
const SCRIPT: &str = include_str!("console/console.js");

/// How many of a queue's rounds its plots show.
pub const PLOT_ROUNDS: i64 = 60;
/// The report's window unless `?hours=N` asks for another, and the longest it may ask.
const REPORT_HOURS: i64 = 1;
const REPORT_HOURS_MAX: i64 = 24;

/// Only what this origin serves; no frames, no forms posted anywhere.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
/// The report is one file with its style inline and no script.
const REPORT_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
                          base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// What the console reads.
#[derive(Clone)]
pub struct Console {
    /// Read-only sessions ([`read_only::read_only_pool`]).
    pub db: PgPool,
    /// This replica's configured queues and its part in each.
    pub health: Arc<Health>,
}

impl Console {
    /// The console of a daemon on `db`: its own read-only sessions on that database.
    pub fn new(db: &PgPool, health: Arc<Health>) -> Console {
        Console {
            db: read_only::read_only_pool(db),
            health,
        }
    }
}

/// The console's routes, GET only.
pub fn router(console: Console) -> Router {
    Router::new()
        .route("/", get(|| async { Redirect::to("/console") }))
        .route("/console", get(page))
        .route("/console/console.css", get(style))
        .route("/console/console.js", get(script))
        .route("/console/api/status", get(status))
        .route("/console/api/round/{id}", get(round))
        .route("/console/api/player/{id}", get(player))
        .route("/console/plot/{queue}/pool.svg", get(plot_pool))
        .route("/console/plot/{queue}/waits.svg", get(plot_waits))
        .route("/console/report", get(report_page))
        .with_state(console)
}

/// A body with its type, the console's security headers, and no caching (every answer is
/// of now).
fn answer(
    status: StatusCode,
    content_type: &'static str,
    csp: &'static str,
    body: String,
) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(csp),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

fn json(value: &impl Serialize) -> Response {
    match serde_json::to_string(value) {
        Ok(body) => answer(StatusCode::OK, "application/json", CSP, body),
        Err(e) => failure(StatusCode::INTERNAL_SERVER_ERROR, format!("encoding: {e}")),
    }
}

/// `{"error": "..."}`: the page shows the sentence.
fn failure(status: StatusCode, error: String) -> Response {
    let body = serde_json::json!({ "error": error }).to_string();
    answer(status, "application/json", CSP, body)
}

fn database_failure(e: &sqlx::Error) -> Response {
    failure(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("reading the database: {}", db::describe_sql_error(e)),
    )
}

fn svg(result: Result<String, PlotError>) -> Response {
    match result {
        Ok(body) => answer(StatusCode::OK, "image/svg+xml", CSP, body),
        Err(e) => failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn page() -> Response {
    answer(StatusCode::OK, "text/html; charset=utf-8", CSP, PAGE.into())
}

async fn style() -> Response {
    answer(StatusCode::OK, "text/css; charset=utf-8", CSP, STYLE.into())
}

async fn script() -> Response {
    answer(
        StatusCode::OK,
        "text/javascript; charset=utf-8",
        CSP,
        SCRIPT.into(),
    )
}

async fn status(State(c): State<Console>) -> Response {
    match views::read_status_view(&c.db, &c.health.queue_roles()).await {
        Ok(view) => json(&view),
        Err(e) => database_failure(&e),
    }
}

async fn round(State(c): State<Console>, Path(id): Path<i64>) -> Response {
    match views::read_round_view(&c.db, id).await {
        Ok(Some(view)) => json(&view),
        Ok(None) => failure(StatusCode::NOT_FOUND, format!("no round {id}")),
        // Pruned, or stored by a build that kept no snapshot: the message says which.
        Err(DbError::Invalid(why)) => failure(StatusCode::NOT_FOUND, why),
        Err(e) => failure(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("reading the database: {e}"),
        ),
    }
}

async fn player(State(c): State<Console>, Path(id): Path<String>) -> Response {
    match views::read_player_view(&c.db, &id).await {
        Ok(view) => json(&view),
        Err(e) => database_failure(&e),
    }
}

async fn plot_pool(State(c): State<Console>, Path(queue): Path<String>) -> Response {
    match read_round_lines(&c.db, Some(&queue), PLOT_ROUNDS).await {
        Ok(rounds) => svg(report::recent_pool(&rounds)),
        Err(e) => database_failure(&e),
    }
}

async fn plot_waits(State(c): State<Console>, Path(queue): Path<String>) -> Response {
    match read_round_lines(&c.db, Some(&queue), PLOT_ROUNDS).await {
        Ok(rounds) => svg(report::recent_waits(&rounds)),
        Err(e) => database_failure(&e),
    }
}

/// `matchmaker report` of the last hour (`?hours=N`, at most a day), every queue.
async fn report_page(State(c): State<Console>, uri: Uri) -> Response {
    let hours = report_hours(uri.query());
    let to = Utc::now();
    let window = ReportWindow {
        queue: None,
        from: to - chrono::Duration::hours(hours),
        to,
    };
    let input = match read_report(&c.db, &window, to).await {
        Ok(input) => input,
        Err(e) => return database_failure(&e),
    };
    // Plots of a day of rounds are CPU work: off the runtime the rounds share.
    match tokio::task::spawn_blocking(move || report::render_html(&input)).await {
        Ok(Ok(page)) => answer(StatusCode::OK, "text/html; charset=utf-8", REPORT_CSP, page),
        Ok(Err(e)) => failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `hours=N` of the query string, within 1 to [`REPORT_HOURS_MAX`].
fn report_hours(query: Option<&str>) -> i64 {
    query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix("hours="))
        .and_then(|n| n.parse::<i64>().ok())
        .map_or(REPORT_HOURS, |n| n.clamp(1, REPORT_HOURS_MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_window_is_an_hour_unless_asked_within_a_day() {
        assert_eq!(report_hours(None), 1);
        assert_eq!(report_hours(Some("hours=6")), 6);
        assert_eq!(report_hours(Some("x=1&hours=999")), 24);
        assert_eq!(report_hours(Some("hours=-3")), 1);
        assert_eq!(report_hours(Some("hours=soon")), 1);
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        for (name, text) in [("page", PAGE), ("style", STYLE), ("script", SCRIPT)] {
            for remote in ["http://", "https://", "//cdn", "@import"] {
                assert!(!text.contains(remote), "{name} refers to {remote}");
            }
        }
        assert!(PAGE.contains("src=\"/console/console.js\""));
        assert!(PAGE.contains("href=\"/console/console.css\""));
    }
}
