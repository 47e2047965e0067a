//! `matchmaker report`: the rounds of a time window as one self-contained HTML page with
//! plots ([`crate::report`]), read from the database only ([`crate::db::report`]).

use anyhow::Context;
use chrono::{DateTime, Utc};

use sqlx::PgPool;

use crate::db::report::{ReportInput, ReportWindow, read_report};
use crate::ops::require_ops_database;
use crate::report;

/// What to report on.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    pub window: ReportWindow,
    /// When the report is made (stamped on the page).
    pub generated_at: DateTime<Utc>,
}

/// The page, and the rounds it was made of.
#[derive(Debug, Clone)]
pub struct Report {
    pub input: ReportInput,
    /// The HTML page.
    pub page: String,
}

/// Reads the window's rounds and renders the page.
pub async fn make_report(db: &PgPool, options: &ReportOptions) -> anyhow::Result<Report> {
    require_ops_database(db, "report").await?;
    if let Some(queue) = &options.window.queue {
        crate::db::queues::check_known_queue(db, queue).await??;
    }
    let input = read_report(db, &options.window, options.generated_at)
        .await
        .context("reading the rounds")?;
    let page = report::render_html(&input)?;
    Ok(Report { input, page })
}
