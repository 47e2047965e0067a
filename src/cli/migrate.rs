//! `matchmaker migrate`: apply the embedded migrations (also done by `run` at start-up).

use clap::Args;

use super::run::{DatabaseArgs, init_logging};
use crate::ops::{migrate::migrate, shell};

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
}

pub fn run(args: MigrateArgs) -> anyhow::Result<()> {
    init_logging(Default::default());
    let applied = shell::run_on_database(&(&args.database).into(), async |db| migrate(db).await)?;
    for migration in applied {
        println!("{:04} {}", migration.version, migration.description);
    }
    Ok(())
}
