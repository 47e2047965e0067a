//! `matchmaker bench`: all strategies on fixed seeded pools, one side-by-side table.

#[derive(Debug, clap::Args)]
pub struct BenchArgs {}

pub fn run(_args: BenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("matchmaker bench is not built yet")
}
