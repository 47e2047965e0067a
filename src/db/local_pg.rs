//! A private PostgreSQL server started from the local binaries, for tests and for a local
//! trial of `matchmaker run` without a database.
//!
//! It finds `initdb` / `pg_ctl` on `PATH` or in `/usr/lib/postgresql/<version>/bin`
//! (Debian's `postgresql` package; the highest version wins), creates a data directory,
//! and starts the server on a port of 127.0.0.1 with a private unix-socket
//! directory, trust authentication and user `postgres`. PostgreSQL refuses to run as root,
//! so when we are root every command runs as the `postgres` system user (`runuser`) and
//! the directory is handed to that user.
//!
//! * [`LocalPostgres::start_temporary`]: a fresh server in a new directory under the
//!   system temp dir, removed when stopped or dropped (tests, `demo`, `bench-db`, `soak`).
//! * [`LocalPostgres::start_persistent`]: state survives restarts (`matchmaker run`
//!   without `DATABASE_URL` keeps it in `.local-pg/`), and so does the port (kept in
//!   `port` beside the data; a new one only when another program took it). A server
//!   already running in that directory (another `matchmaker run`) is reused and left
//!   running.

use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Standbys started by this process, for their directory names.
static STANDBYS: AtomicU64 = AtomicU64::new(0);

use thiserror::Error;

/// Why a private server could not be started or stopped.
#[derive(Debug, Error)]
pub enum LocalPgError {
    #[error(
        "PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or in \
         /usr/lib/postgresql/*/bin; install the Debian package `postgresql` \
         (apt-get install postgresql) or set DATABASE_URL to an existing server"
    )]
    BinariesMissing,
    #[error(
        "running as root, but PostgreSQL refuses to run as root and the `postgres` system \
         user does not exist; create it (the Debian package `postgresql` does) or set \
         DATABASE_URL"
    )]
    NoPostgresUser,
    #[error(
        "the `postgres` system user (PostgreSQL refuses to run as root) cannot enter \
         {dir}: a parent directory is closed to it (a checkout under /root or in a \
         `mktemp -d` folder is); put the server where that user can reach it: TMPDIR \
         for a temporary server (default /tmp), --local-pg-dir for `matchmaker run`, \
         or set DATABASE_URL"
    )]
    Unreachable { dir: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}): {output}")]
    Command {
        command: String,
        status: String,
        output: String,
    },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> LocalPgError {
    let what = what.into();
    move |source| LocalPgError::Io { what, source }
}

/// How [`LocalPostgres::restart`] stops the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopMode {
    /// Clients are disconnected, the server shuts down cleanly.
    Fast,
    /// The server quits at once, like a crash: crash recovery runs at the next start.
    Immediate,
}

/// A running private server. Stop it with [`LocalPostgres::stop`]; dropping it stops it
/// too (blocking) if this process started it.
#[derive(Debug)]
pub struct LocalPostgres {
    bin_dir: PathBuf,
    /// Holds `data/`, `socket/` and `server.log`.
    base_dir: PathBuf,
    port: u16,
    /// Remove `base_dir` when stopped.
    temporary: bool,
    /// False when we reused a server another process started: we leave it running.
    owned: bool,
    stopped: bool,
    run_as_postgres: bool,
}

impl LocalPostgres {
    /// Start a fresh server in a new directory under the system temp dir (removed on
    /// stop / drop).
    pub async fn start_temporary() -> Result<Self, LocalPgError> {
        tokio::task::spawn_blocking(Self::start_temporary_blocking)
            .await
            .expect("local PostgreSQL start task panicked")
    }

    /// Start (or reuse) a server whose state lives in `dir`, created if missing.
    pub async fn start_persistent(dir: impl Into<PathBuf>) -> Result<Self, LocalPgError> {
        let dir = dir.into();
        tokio::task::spawn_blocking(move || Self::start_persistent_blocking(&dir))
            .await
            .expect("local PostgreSQL start task panicked")
    }

    /// Blocking twin of [`start_temporary`](Self::start_temporary), for callers without
    /// an async runtime (test support starts one server per test binary this way).
    pub fn start_temporary_blocking() -> Result<Self, LocalPgError> {
        Self::start_temporary_in_blocking(&std::env::temp_dir())
    }

    /// [`start_temporary`](Self::start_temporary) with server settings of its own
    /// (`("max_connections", "40")`: a cluster with few slots), applied after the defaults.
    pub async fn start_temporary_with(settings: &[(&str, &str)]) -> Result<Self, LocalPgError> {
        let settings: Vec<(String, String)> = settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        tokio::task::spawn_blocking(move || {
            let settings: Vec<(&str, &str)> = settings
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            Self::start_temporary_in_blocking_with(&std::env::temp_dir(), &settings)
        })
        .await
        .expect("local PostgreSQL start task panicked")
    }

    /// Like [`start_temporary_blocking`](Self::start_temporary_blocking), under `parent`.
    pub fn start_temporary_in_blocking(parent: &Path) -> Result<Self, LocalPgError> {
        Self::start_temporary_in_blocking_with(parent, &[])
    }

    /// Like [`start_temporary_in_blocking`](Self::start_temporary_in_blocking), with
    /// server settings of its own, applied after the defaults (the last of a setting
    /// given twice wins).
    pub fn start_temporary_in_blocking_with(
        parent: &Path,
        settings: &[(&str, &str)],
    ) -> Result<Self, LocalPgError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!(
            "matchmaker-pg-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let base = parent.join(name);
        let mut server = Self::init(&base, true)?;
        let settings: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut extra = vec!["-c", "fsync=off", "-c", "synchronous_commit=off"];
        for setting in &settings {
            extra.extend(["-c", setting.as_str()]);
        }
        server.start(&extra)?;
        Ok(server)
    }

    /// A hot standby of this server: a new temporary server cloned from it with
    /// `pg_basebackup -R`, streaming its WAL and answering read-only queries (removed on
    /// stop / drop, like [`start_temporary`](Self::start_temporary)).
    pub async fn start_standby(&self) -> Result<Self, LocalPgError> {
        let primary = self.detached();
        tokio::task::spawn_blocking(move || primary.start_standby_blocking())
            .await
            .expect("local PostgreSQL start task panicked")
    }

    fn start_standby_blocking(&self) -> Result<Self, LocalPgError> {
        let parent = self.base_dir.parent().unwrap_or(Path::new("/tmp"));
        let base = parent.join(format!(
            "{}-standby-{}",
            self.base_dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("pg"),
            STANDBYS.fetch_add(1, Ordering::Relaxed)
        ));
        let mut standby = Self::prepare(&base, true)?;
        let data = standby.data_dir();
        let port = self.port.to_string();
        let cloned = standby.run(
            "pg_basebackup",
            &[
                "-D",
                path_str(&data),
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "--no-sync",
            ],
        );
        if let Err(err) = cloned {
            let _ = std::fs::remove_dir_all(&base);
            return Err(err);
        }
        standby.start(&["-c", "fsync=off", "-c", "hot_standby=on"])?;
        Ok(standby)
    }

    /// Blocking twin of [`start_persistent`](Self::start_persistent).
    pub fn start_persistent_blocking(dir: &Path) -> Result<Self, LocalPgError> {
        let base = std::path::absolute(dir).map_err(io_err(format!("{}", dir.display())))?;
        let mut server = Self::init(&base, false)?;
        if let Some(port) = server.running_port() {
            // Another `matchmaker run` started it: share it, leave it running.
            server.port = port;
            server.owned = false;
            return Ok(server);
        }
        server.start(&[])?;
        Ok(server)
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the data directory, socket and log.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    /// Stop the server (fast shutdown) and remove a temporary directory.
    pub async fn stop(mut self) -> Result<(), LocalPgError> {
        tokio::task::spawn_blocking(move || self.stop_blocking())
            .await
            .expect("local PostgreSQL stop task panicked")
    }

    /// Blocking twin of [`stop`](Self::stop); idempotent.
    pub fn stop_blocking(&mut self) -> Result<(), LocalPgError> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        let mut result = Ok(());
        if self.owned {
            let data = self.data_dir();
            result = self
                .pg_ctl(&["-D", path_str(&data), "-m", "fast", "-w", "stop"])
                .map(drop);
        }
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.base_dir);
        }
        result
    }

    /// Restart the server on the same port (`pg_ctl restart`, which keeps the options it
    /// was started with), stopping it the `mode` way. Connections are cut; a client
    /// reconnects once it is back (fault injection: `matchmaker-lab soak`, tests).
    pub async fn restart(&self, mode: StopMode) -> Result<(), LocalPgError> {
        let ctl = self.detached();
        tokio::task::spawn_blocking(move || ctl.restart_blocking(mode))
            .await
            .expect("local PostgreSQL restart task panicked")
    }

    /// Blocking twin of [`restart`](Self::restart).
    pub fn restart_blocking(&self, mode: StopMode) -> Result<(), LocalPgError> {
        let data = self.data_dir();
        let log = self.base_dir.join("server.log");
        let mode = match mode {
            StopMode::Fast => "fast",
            StopMode::Immediate => "immediate",
        };
        self.pg_ctl(&[
            "-D",
            path_str(&data),
            "-l",
            path_str(&log),
            "-m",
            mode,
            "-w",
            "-t",
            "60",
            "restart",
        ])
        .map(drop)
    }

    /// A copy that runs commands on the same server but never stops it when dropped.
    fn detached(&self) -> LocalPostgres {
        LocalPostgres {
            bin_dir: self.bin_dir.clone(),
            base_dir: self.base_dir.clone(),
            port: self.port,
            temporary: false,
            owned: false,
            stopped: true,
            run_as_postgres: self.run_as_postgres,
        }
    }

    fn data_dir(&self) -> PathBuf {
        self.base_dir.join("data")
    }

    fn socket_dir(&self) -> PathBuf {
        self.base_dir.join("socket")
    }

    /// Create the base and socket directories, handed to the server's user when we are
    /// root, and check that user can reach them.
    fn prepare(base: &Path, temporary: bool) -> Result<Self, LocalPgError> {
        let bin_dir = find_bin_dir().ok_or(LocalPgError::BinariesMissing)?;
        let run_as_postgres = running_as_root();
        let owner = if run_as_postgres {
            Some(postgres_user_ids().ok_or(LocalPgError::NoPostgresUser)?)
        } else {
            None
        };
        let server = LocalPostgres {
            bin_dir,
            base_dir: base.to_path_buf(),
            port: 0,
            temporary,
            owned: true,
            stopped: true, // nothing to stop until `start` succeeds
            run_as_postgres,
        };
        let created = !base.exists();
        for dir in [base.to_path_buf(), server.socket_dir()] {
            std::fs::create_dir_all(&dir).map_err(io_err(format!("create {}", dir.display())))?;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
                .map_err(io_err(format!("chmod {}", dir.display())))?;
            if let Some((uid, gid)) = owner {
                std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                    .map_err(io_err(format!("chown {} to postgres", dir.display())))?;
            }
        }
        if run_as_postgres && !server.reachable_by_server_user() {
            if temporary || created {
                let _ = std::fs::remove_dir_all(base);
            }
            return Err(LocalPgError::Unreachable {
                dir: base.display().to_string(),
            });
        }
        Ok(server)
    }

    /// Create the directories and the cluster (unless it exists already).
    fn init(base: &Path, temporary: bool) -> Result<Self, LocalPgError> {
        let server = Self::prepare(base, temporary)?;
        if !server.data_dir().join("PG_VERSION").exists() {
            let data = server.data_dir();
            let result = server.run(
                "initdb",
                &[
                    "-D",
                    path_str(&data),
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ],
            );
            if let Err(err) = result {
                if temporary {
                    let _ = std::fs::remove_dir_all(base);
                }
                return Err(err);
            }
        }
        Ok(server)
    }

    /// Start on the port a persistent server had last time if it is free, else on a free
    /// port (remembered for the next start); a port taken between our probe and the
    /// server's bind is retried with another port.
    fn start(&mut self, extra: &[&str]) -> Result<(), LocalPgError> {
        let mut remembered = self.remembered_port().filter(|&p| port_is_free(p));
        let mut last_err = None;
        for _ in 0..5 {
            let port = match remembered.take() {
                Some(port) => port,
                None => free_port().map_err(io_err("find a free TCP port"))?,
            };
            match self.start_on(port, extra) {
                Ok(()) => {
                    self.port = port;
                    self.stopped = false;
                    self.remember_port();
                    return Ok(());
                }
                Err(err) => last_err = Some(err),
            }
        }
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.base_dir);
        }
        Err(last_err.expect("at least one attempt"))
    }

    fn start_on(&self, port: u16, extra: &[&str]) -> Result<(), LocalPgError> {
        let mut options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=300",
            path_str(&self.socket_dir())
        );
        for pair in extra.chunks(2) {
            options.push(' ');
            options.push_str(&pair.join(" "));
        }
        let data = self.data_dir();
        let log = self.base_dir.join("server.log");
        self.pg_ctl(&[
            "-D",
            path_str(&data),
            "-l",
            path_str(&log),
            "-o",
            &options,
            "-w",
            "-t",
            "60",
            "start",
        ])
        .map(drop)
    }

    /// Where a persistent server keeps its port: a restart keeps the URL whoever
    /// connects to it knows.
    fn port_file(&self) -> PathBuf {
        self.base_dir.join("port")
    }

    /// The port of a persistent server's last start, if any.
    fn remembered_port(&self) -> Option<u16> {
        if self.temporary {
            return None;
        }
        std::fs::read_to_string(self.port_file())
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    fn remember_port(&self) {
        if !self.temporary {
            // A lost note only costs the next start its old port.
            let _ = std::fs::write(self.port_file(), format!("{}\n", self.port));
        }
    }

    /// Whether the `postgres` user may enter and write `base_dir`: `access(2)` checks
    /// every parent on the way, which is where a root-only checkout closes the path.
    fn reachable_by_server_user(&self) -> bool {
        Command::new("runuser")
            .args(["-u", "postgres", "--", "test", "-x"])
            .arg(&self.base_dir)
            .args(["-a", "-w"])
            .arg(&self.base_dir)
            // `/`: our own working directory may be closed to that user too.
            .current_dir("/")
            .output()
            .is_ok_and(|out| out.status.success())
    }

    /// The port of a server already running in our data directory, if any.
    fn running_port(&self) -> Option<u16> {
        let data = self.data_dir();
        self.pg_ctl(&["-D", path_str(&data), "status"]).ok()?;
        // postmaster.pid: line 4 is the port.
        let pid_file = std::fs::read_to_string(data.join("postmaster.pid")).ok()?;
        pid_file.lines().nth(3)?.trim().parse().ok()
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<Output, LocalPgError> {
        self.run("pg_ctl", args)
    }

    /// `program` beside `pg_ctl`: in the binaries' directory, or where its `pg_ctl` links
    /// to (a `PATH` directory may hold links to only the server's binaries).
    fn program(&self, program: &str) -> PathBuf {
        let exe = self.bin_dir.join(program);
        if exe.exists() {
            return exe;
        }
        std::fs::canonicalize(self.bin_dir.join("pg_ctl"))
            .ok()
            .and_then(|pg_ctl| Some(pg_ctl.parent()?.join(program)))
            .filter(|linked| linked.exists())
            .unwrap_or(exe)
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<Output, LocalPgError> {
        let exe = self.program(program);
        let mut command = if self.run_as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        // The postgres user may not be allowed into our working directory.
        command.args(args).current_dir(&self.base_dir);
        let shown = format!("{} {}", exe.display(), args.join(" "));
        let output = command.output().map_err(io_err(format!("run {shown}")))?;
        if output.status.success() {
            Ok(output)
        } else {
            let mut text = String::from_utf8_lossy(&output.stderr).trim().to_string();
            if text.is_empty() {
                text = String::from_utf8_lossy(&output.stdout).trim().to_string();
            }
            let log = self.base_dir.join("server.log");
            if let Ok(log) = std::fs::read_to_string(&log) {
                let tail: Vec<_> = log.lines().rev().take(5).collect();
                let tail: Vec<_> = tail.into_iter().rev().collect();
                text.push_str(&format!("; server log tail: {}", tail.join(" | ")));
            }
            Err(LocalPgError::Command {
                command: shown,
                status: output.status.to_string(),
                output: text,
            })
        }
    }
}

impl Drop for LocalPostgres {
    fn drop(&mut self) {
        let _ = self.stop_blocking();
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("local PostgreSQL paths are UTF-8")
}

/// `PATH` first, then Debian's versioned directories, highest version first.
fn find_bin_dir() -> Option<PathBuf> {
    find_bin_dir_in(
        std::env::var_os("PATH").as_deref(),
        Path::new("/usr/lib/postgresql"),
    )
    .ok()
}

/// The directory holding both `initdb` and `pg_ctl`: the first of `path` (a `PATH`
/// value), else `<versioned>/<version>/bin` of the highest version. The places are
/// parameters so that tests can point the lookup at directories without them.
pub fn find_bin_dir_in(
    path: Option<&std::ffi::OsStr>,
    versioned: &Path,
) -> Result<PathBuf, LocalPgError> {
    let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(path) = path {
        for dir in std::env::split_paths(path) {
            if has_both(&dir) {
                return Ok(dir);
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(versioned)
        .map_err(|_| LocalPgError::BinariesMissing)?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, bin)| has_both(bin))
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, bin)| bin)
        .ok_or(LocalPgError::BinariesMissing)
}

/// `/proc/self` belongs to the effective user of this process.
fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// (uid, gid) of the `postgres` system user, from `/etc/passwd`.
fn postgres_user_ids() -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<_> = line.split(':').collect();
        if fields.first() == Some(&"postgres") && fields.len() > 3 {
            Some((fields[2].parse().ok()?, fields[3].parse().ok()?))
        } else {
            None
        }
    })
}

fn port_is_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
