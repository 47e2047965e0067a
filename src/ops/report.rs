//! `matchmaker report`: the rounds of a time window as one self-contained HTML page with
//! plots ([`crate::report`]), read from the database only ([`crate::db::report`]).

use anyhow::Context;
use chrono::{DateTime, Utc};

use crate::db::report::{ReportInput, ReportWindow, read_report};
use crate::ops::{Database, open_database, require_schema};
use crate::report;

/// What to report on.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    pub database: Database,
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
pub async fn make_report(options: &ReportOptions) -> anyhow::Result<Report> {
    let (db, server) = open_database(&options.database).await?;
    let read = async {
        crate::ops::access::require_ops_login(&db, "report").await?;
        require_schema(&db).await?;
        if let Some(queue) = &options.window.queue {
            crate::db::queues::check_known_queue(&db, queue).await??;
        }
        read_report(&db, &options.window, options.generated_at)
            .await
            .context("reading the rounds")
    }
    .await;
    db.close().await;
    if let Some(server) = server {
        server.stop().await?;
    }
    let input = read?;
    let page = report::render_html(&input)?;
    Ok(Report { input, page })
}
