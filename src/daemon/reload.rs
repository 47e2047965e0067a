//! Hot reload of the config file, on file change (notify) and on SIGHUP: validate first,
//! swap second. An invalid file is refused with a log line saying why, and the running
//! config stays (Vector's `app.rs` does the same). A valid one is published to the queue
//! workers, which apply it from their next round.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::health::Health;
use crate::config::{Config, ConfigError};

/// Load `path`; publish it if valid and different. `Ok(true)`: a new config is live.
pub fn reload_config(
    path: &Path,
    current: &watch::Sender<Arc<Config>>,
) -> Result<bool, ConfigError> {
    let loaded = Config::load(path);
    super::metrics::record_config_reload(loaded.is_ok());
    match loaded {
        Ok(new) => {
            if **current.borrow() == new {
                tracing::debug!(path = %path.display(), "config unchanged");
                return Ok(false);
            }
            let changed: Vec<String> = {
                let old = current.borrow();
                new.queues
                    .iter()
                    .filter(|(name, q)| old.queues.get(*name).is_none_or(|o| o != *q))
                    .map(|(name, q)| format!("{name}={}", q.hash()))
                    .collect()
            };
            let (old_addr, new_addr) = (
                current.borrow().daemon.metrics_addr,
                new.daemon.metrics_addr,
            );
            if old_addr != new_addr {
                // The listener is bound once, at start (like the session limits).
                let show =
                    |a: Option<std::net::SocketAddr>| a.map_or("none".into(), |a| a.to_string());
                tracing::warn!(
                    from = %show(old_addr),
                    to = %show(new_addr),
                    "daemon.metrics_addr changed: the endpoints stay where they are until a restart \
                     (--metrics-addr or MATCHMAKER_METRICS_ADDR, if given, override the file)"
                );
            }
            let (old_cores, new_cores) = (
                current.borrow().daemon.solver_threads,
                new.daemon.solver_threads,
            );
            if old_cores != new_cores {
                // The budget of solver cores is sized once, at start.
                let show = |n: Option<usize>| n.map_or("all cores".into(), |n| n.to_string());
                tracing::warn!(
                    from = %show(old_cores),
                    to = %show(new_cores),
                    "daemon.solver_threads changed: the solver keeps its cores until a restart"
                );
            }
            current.send_replace(Arc::new(new));
            tracing::info!(path = %path.display(), changed = ?changed, "config reloaded; applies from each queue's next round");
            Ok(true)
        }
        Err(e) => {
            super::metrics::record_error(super::metrics::ErrorKind::ConfigRefused);
            tracing::error!(path = %path.display(), error = %e, "config refused; keeping the running config");
            Err(e)
        }
    }
}

/// A change to the file (created, written, renamed, removed), not a read of it.
fn is_change(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    match kind {
        notify::EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        notify::EventKind::Access(_) => false,
        _ => true,
    }
}

/// Watch `path` for changes and SIGHUP until `stop` turns true.
pub async fn watch_config(
    path: PathBuf,
    current: watch::Sender<Arc<Config>>,
    mut stop: watch::Receiver<bool>,
    health: Arc<Health>,
) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(16);
    // Watch the directory: editors replace the file (write new, rename), which a watch on
    // the file itself would miss after the first save.
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let file_name = path.file_name().map(|n| n.to_owned());
    let watcher = {
        let tx = tx.clone();
        notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            // Opening or reading the file is not a change: our own reload reads it, and
            // counting that would reload again every 200 ms, forever (and log a bad file
            // each time). A write that completes is.
            if let Ok(event) = event
                && is_change(&event.kind)
                && event
                    .paths
                    .iter()
                    .any(|p| p.file_name() == file_name.as_deref())
            {
                let _ = tx.try_send(());
            }
        })
    };
    let _watcher = match watcher {
        Ok(mut w) => {
            use notify::Watcher;
            match w.watch(&dir, notify::RecursiveMode::NonRecursive) {
                Ok(()) => Some(w),
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "cannot watch config directory; reload with SIGHUP");
                    None
                }
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "no file watcher; reload with SIGHUP");
            None
        }
    };
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            Some(()) = rx.recv() => {
                // An editor's save is several events: let them settle, then read once.
                tokio::time::sleep(Duration::from_millis(200)).await;
                while rx.try_recv().is_ok() {}
            }
            Some(()) = async {
                match hangup.as_mut() {
                    Some(h) => h.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                tracing::info!("SIGHUP: reloading config");
            }
        }
        let result = reload_config(&path, &current);
        health.config_reload(result.err().map(|e| e.to_string()));
    }
}
