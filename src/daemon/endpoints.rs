//! The daemon's HTTP endpoints (`matchmaker run --metrics-addr ADDR`):
//!
//! * `/metrics`: Prometheus text format (the `metrics` facade's Prometheus recorder);
//! * `/healthz`: 200 while the process runs and the database answers `SELECT 1` within
//!   [`CHECK_TIMEOUT`]; 503 with the error otherwise;
//! * `/readyz`: 200 when [`Health::readiness`] says ready (schema current, supervisor
//!   running, each queue led or stood by); 503 with one line per check otherwise.
//!
//! The operators' console (`ops::console`, `/console`) is served on the same address.
//!
//! Plain HTTP/1.1, no authentication: bind it to loopback or a private interface.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;
use sqlx::PgPool;

use super::health::Health;
use super::metrics;
use crate::db;

/// The longest a health or readiness check waits for the database.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// What the endpoints read.
#[derive(Clone)]
pub struct Endpoints {
    /// None: no recorder installed (`/metrics` answers 404).
    pub metrics: Option<PrometheusHandle>,
    pub health: Arc<Health>,
    pub db: PgPool,
}

pub fn router(endpoints: Endpoints) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(endpoints)
}

/// Serve `app` (the [`router`], and whatever is served beside it) on `listener` until
/// `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

async fn scrape(State(e): State<Endpoints>) -> Response {
    let Some(handle) = &e.metrics else {
        return text(StatusCode::NOT_FOUND, "no metrics recorder\n".into());
    };
    for (queue, seconds) in e.health.seconds_to_next_round() {
        metrics::record_next_round(&queue, seconds);
    }
    // Drains histogram buffers; also run on a timer (see `cli::run`).
    handle.run_upkeep();
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        handle.render(),
    )
        .into_response()
}

async fn healthz(State(e): State<Endpoints>) -> Response {
    let ping = tokio::time::timeout(CHECK_TIMEOUT, sqlx::query("SELECT 1").execute(&e.db)).await;
    match ping {
        Ok(Ok(_)) => text(StatusCode::OK, "ok\ndatabase: answers\n".into()),
        Ok(Err(err)) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("unhealthy\ndatabase: {}\n", db::describe_sql_error(&err)),
        ),
        Err(_) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("unhealthy\ndatabase: no answer to SELECT 1 within {CHECK_TIMEOUT:?}\n"),
        ),
    }
}

async fn readyz(State(e): State<Endpoints>) -> Response {
    let schema = match tokio::time::timeout(CHECK_TIMEOUT, db::check_schema(&e.db)).await {
        Ok(Ok(check)) => Ok(check.latest),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err(format!(
            "the schema check got no answer within {CHECK_TIMEOUT:?}"
        )),
    };
    let readiness = e.health.readiness(schema);
    let status = if readiness.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    text(status, readiness.body())
}
