//! `matchmaker migrate`: apply the embedded migrations (also done by `run` at start-up).

use clap::Args;

use super::run::{DatabaseArgs, init_logging, open_database};
use crate::db;

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
}

pub fn run(args: MigrateArgs) -> anyhow::Result<()> {
    init_logging(Default::default());
    tokio::runtime::Runtime::new()?.block_on(async {
        let (pool, server) = open_database(&args.database).await?;
        db::migrate(&pool).await?;
        let applied: Vec<(i64, String)> =
            sqlx::query_as("SELECT version, description FROM _sqlx_migrations ORDER BY version")
                .fetch_all(&pool)
                .await?;
        for (version, description) in applied {
            println!("{version:04} {description}");
        }
        pool.close().await;
        if let Some(server) = server {
            server.stop().await?;
        }
        Ok(())
    })
}
