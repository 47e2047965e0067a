//! `matchmaker health`: ask the daemon's `/readyz` (or `/healthz`) and exit 0 only on a
//! 2xx answer; the request is [`ops::health::get`].

use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;

use crate::ops::health::{Answer, get};

#[derive(Debug, Args)]
pub struct HealthArgs {
    /// The endpoint to ask: `http://HOST:PORT/readyz` (ready) or `/healthz` (alive).
    #[arg(long, default_value = "http://127.0.0.1:9310/readyz")]
    pub url: String,
    /// Ask again every 500 ms until the answer is 2xx or this long has passed ("60s").
    #[arg(long, value_parser = humantime::parse_duration)]
    pub wait: Option<Duration>,
    /// The longest one request may take.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// Print nothing; the exit status tells.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: HealthArgs) -> anyhow::Result<()> {
    let deadline = args.wait.map(|w| Instant::now() + w);
    loop {
        let result = get(&args.url, args.timeout);
        let done = match &result {
            Ok(answer) => (200..300).contains(&answer.status),
            Err(_) => false,
        };
        if done || deadline.is_none_or(|d| Instant::now() >= d) {
            return report(&args, result);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn report(args: &HealthArgs, result: anyhow::Result<Answer>) -> anyhow::Result<()> {
    let answer = result?;
    if !args.quiet {
        print!("{}", answer.body);
    }
    if (200..300).contains(&answer.status) {
        Ok(())
    } else {
        bail!("{} answered {} {}", args.url, answer.status, answer.reason)
    }
}
