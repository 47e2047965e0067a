//! The database of a command: a URL, or the private PostgreSQL kept in a directory, opened
//! as one handle that closes its pool and stops its private server. Commands open it
//! through [`crate::ops::shell::with_database`], which closes it on every way out.

use std::path::PathBuf;

use anyhow::Context;
use sqlx::PgPool;

use crate::db::{self, local_pg::LocalPostgres};

/// Where the database comes from: a URL, or a private PostgreSQL kept in a directory.
#[derive(Debug, Clone)]
pub struct Database {
    pub database_url: Option<String>,
    pub local_pg_dir: PathBuf,
}

/// An open database: its pool, and the private server under it when no URL was given.
/// [`close`](Self::close) closes the pool and stops the server this process started (a
/// server another command started, found running in the directory, is left running).
/// Dropped without `close` (a panic), the server is stopped all the same.
#[derive(Debug)]
pub struct OpenDatabase {
    pool: PgPool,
    server: Option<LocalPostgres>,
}

impl Database {
    /// Connect to the URL, or start (or reuse) the private PostgreSQL in the directory.
    pub async fn open(&self) -> anyhow::Result<OpenDatabase> {
        let Some(url) = &self.database_url else {
            let dir = &self.local_pg_dir;
            let server = LocalPostgres::start_persistent(dir)
                .await
                .context("no DATABASE_URL given, and the private PostgreSQL did not start")?;
            tracing::info!(url = %db::redact(&server.url()), dir = %dir.display(), "using the private PostgreSQL (no DATABASE_URL)");
            return OpenDatabase::on_server(server).await;
        };
        Ok(OpenDatabase {
            pool: db::connect(url).await?,
            server: None,
        })
    }
}

impl OpenDatabase {
    /// A fresh private server in a new temporary directory, removed when closed (a demo
    /// that leaves nothing behind).
    pub async fn temporary() -> anyhow::Result<OpenDatabase> {
        let server = LocalPostgres::start_temporary()
            .await
            .context("starting a private PostgreSQL (or set DATABASE_URL)")?;
        OpenDatabase::on_server(server).await
    }

    /// Connect to `server`; a failed connection stops it.
    async fn on_server(server: LocalPostgres) -> anyhow::Result<OpenDatabase> {
        match db::connect(&server.url()).await {
            Ok(pool) => Ok(OpenDatabase {
                pool,
                server: Some(server),
            }),
            Err(e) => {
                server.stop().await.ok();
                Err(e.into())
            }
        }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The private server under the pool, if no URL was given.
    pub fn server(&self) -> Option<&LocalPostgres> {
        self.server.as_ref()
    }

    /// Close the pool, then stop the private server this process started.
    pub async fn close(self) -> anyhow::Result<()> {
        self.pool.close().await;
        if let Some(server) = self.server {
            server
                .stop()
                .await
                .context("stopping the private PostgreSQL")?;
        }
        Ok(())
    }

    /// The pool and the server, for a caller that closes them itself.
    pub fn into_parts(self) -> (PgPool, Option<LocalPostgres>) {
        (self.pool, self.server)
    }
}

/// Connect to the URL, or start (or reuse) the private PostgreSQL; the caller closes the
/// pool and stops the server. Commands use [`crate::ops::shell::with_database`], which
/// does both on every way out.
pub async fn open_database(database: &Database) -> anyhow::Result<(PgPool, Option<LocalPostgres>)> {
    Ok(database.open().await?.into_parts())
}
