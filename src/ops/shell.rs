//! The shell every command runs in: one async runtime, the stop signals listened to once
//! for the whole command, and the database opened and closed around the command's work.
//!
//! ```no_run
//! # use matchmaker::ops::{Database, shell};
//! # fn main() -> anyhow::Result<()> {
//! let database = Database { database_url: None, local_pg_dir: ".local-pg".into() };
//! let rounds: i64 = shell::run_on_database(&database, async |db| {
//!     Ok(sqlx::query_scalar("SELECT count(*) FROM rounds").fetch_one(db).await?)
//! })?;
//! # Ok(()) }
//! ```
//!
//! * [`run`] builds the runtime and listens to SIGINT, SIGTERM and SIGHUP from its first
//!   moment: a signal that arrives at any point of the command is seen, once.
//! * [`with_database`] opens the database (a URL, or the private PostgreSQL of
//!   `--local-pg-dir`), runs the work, and closes it whatever the work returned: the
//!   private server is stopped on every way out, a signal included.
//! * A command decides what a signal means to it: one-shot commands let [`Stop::cancel`]
//!   end them with [`Stopped`] (exit status 128 + the signal's number); a live view or
//!   the daemon wait for [`Stop::wait`] and wind down themselves.

use std::future::Future;

use anyhow::Context;
use sqlx::PgPool;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use crate::ops::database::{Database, OpenDatabase};

/// A signal that stops a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM (systemd, docker stop, kill).
    Terminate,
    /// SIGHUP (the terminal closed).
    Hangup,
}

impl Signal {
    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
            Signal::Hangup => "SIGHUP",
        }
    }

    fn number(self) -> u8 {
        match self {
            Signal::Interrupt => 2,
            Signal::Terminate => 15,
            Signal::Hangup => 1,
        }
    }
}

/// Which signals stop the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signals {
    /// SIGINT, SIGTERM and SIGHUP.
    All,
    /// SIGINT and SIGTERM. SIGHUP is the daemon's "re-read the config" (its reload
    /// listens for it); here it is only kept from killing the process.
    ReloadOnHangup,
}

/// The command ended because of a stop signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("stopped by {}", .0.name())]
pub struct Stopped(pub Signal);

impl Stopped {
    /// The shell's convention: 128 + the signal's number (130 for Ctrl-C).
    pub fn exit_code(self) -> u8 {
        128 + self.0.number()
    }
}

/// The stop signals of the process, listened to once for the whole command: the first
/// one is kept, so a signal that arrives while the command is busy elsewhere (reading,
/// printing) is seen at its next wait. Clones share it.
#[derive(Debug, Clone)]
pub struct Stop {
    received: watch::Receiver<Option<Signal>>,
}

impl Stop {
    /// Start listening (inside the runtime). [`run`] does this for every command.
    pub fn listen(signals: Signals) -> anyhow::Result<Stop> {
        let (tx, received) = watch::channel(None);
        let listen = |kind| signal(kind).context("listening for the stop signals");
        let mut interrupt = listen(SignalKind::interrupt())?;
        let mut terminate = listen(SignalKind::terminate())?;
        let mut hangup = listen(SignalKind::hangup())?;
        tokio::spawn(async move {
            let first = loop {
                tokio::select! {
                    _ = interrupt.recv() => break Signal::Interrupt,
                    _ = terminate.recv() => break Signal::Terminate,
                    _ = hangup.recv() => {
                        if signals == Signals::All {
                            break Signal::Hangup;
                        }
                    }
                }
            };
            tracing::info!("{} received", first.name());
            tx.send_replace(Some(first));
            // Later signals are ignored while the command winds down; the handlers stay
            // installed, so none of them kills the process before its cleanup.
            std::future::pending::<()>().await;
        });
        Ok(Stop { received })
    }

    /// A stop that never comes (a library caller without signals, a test).
    pub fn never() -> Stop {
        let (_, received) = watch::channel(None);
        Stop { received }
    }

    /// The signal received so far, if any.
    pub fn signal(&self) -> Option<Signal> {
        *self.received.borrow()
    }

    /// Wait for the first stop signal (at once if one came already).
    pub async fn wait(&self) -> Signal {
        let mut received = self.received.clone();
        let signal = received
            .wait_for(Option::is_some)
            .await
            .map(|signal| signal.expect("waited for a signal"));
        match signal {
            Ok(signal) => signal,
            // No listener (`never`): no signal will come.
            Err(_) => std::future::pending().await,
        }
    }

    /// Run `work` unless a stop signal comes first: then `work` is dropped and the
    /// result is [`Stopped`].
    pub async fn cancel<T>(
        &self,
        work: impl Future<Output = anyhow::Result<T>>,
    ) -> anyhow::Result<T> {
        tokio::select! {
            result = work => result,
            signal = self.wait() => Err(Stopped(signal).into()),
        }
    }
}

/// Runs `command` to its end on the one async runtime of the process, the stop signals
/// listened to from the start.
pub fn run<T>(
    signals: Signals,
    command: impl AsyncFnOnce(Stop) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let stop = Stop::listen(signals)?;
        command(stop).await
    })
}

/// Opens the database (`opening`: [`Database::open`], [`OpenDatabase::temporary`]),
/// runs `work` on its pool and closes it, whatever `work` returned. A stop signal while
/// it opens ends the command before `work` starts.
pub async fn with_database<T>(
    opening: impl Future<Output = anyhow::Result<OpenDatabase>>,
    stop: &Stop,
    work: impl AsyncFnOnce(&PgPool) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    // A server whose start is cut short is stopped when its start returns (its drop).
    let database = stop.cancel(opening).await?;
    let result = work(database.pool()).await;
    let closed = database.close().await;
    let value = result?;
    closed?;
    Ok(value)
}

/// The shape of the one-shot commands: `work` on the open database, cancelled by a stop
/// signal (the command then ends with [`Stopped`]), the database closed either way.
pub fn run_on_database<T>(
    database: &Database,
    work: impl AsyncFnOnce(&PgPool) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    run(Signals::All, async |stop| {
        with_database(database.open(), &stop, async |db| {
            stop.cancel(work(db)).await
        })
        .await
    })
}

/// The shape of the commands that end themselves on a stop signal (a live view, the
/// daemon): `work` gets the [`Stop`] and winds down when it comes; the database is closed
/// after.
pub fn run_on_database_until_stopped<T>(
    database: &Database,
    signals: Signals,
    work: impl AsyncFnOnce(&PgPool, &Stop) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    run(signals, async |stop| {
        with_database(database.open(), &stop, async |db| work(db, &stop).await).await
    })
}
