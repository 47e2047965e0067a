//! `[daemon]`: the process-wide settings of `matchmaker run`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Process-wide settings of `matchmaker run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DaemonConfig {
    /// How often each queue looks at its pool even without a NOTIFY (the fallback when
    /// notifications are lost) and re-checks its lease.
    #[serde(with = "humantime_serde")]
    pub poll_interval: Duration,
    /// A leader that stops renewing loses its queues after this long; the other replicas
    /// take over within it. Also how long a replica's heartbeat counts it as live
    /// (balanced leadership, `daemon::leadership`).
    #[serde(with = "humantime_serde")]
    pub lease_ttl: Duration,
    /// How often each replica heartbeats, renews its leases and rebalances the queues
    /// (well below `lease_ttl`).
    #[serde(with = "humantime_serde")]
    pub lease_renew: Duration,
    /// The longest the daemon waits for a lock; a statement that would wait longer fails
    /// and is retried at the next look (read at start).
    #[serde(with = "humantime_serde")]
    pub lock_timeout: Duration,
    /// The longest any one statement of the daemon may run (read at start).
    #[serde(with = "humantime_serde")]
    pub statement_timeout: Duration,
    /// The longest a queue's step (snapshot, solve, commit) may wait on the database
    /// beyond its round's budget before it is given up and the next step opens a new
    /// connection. Absent: `lease_ttl`. Raise it for pools whose database work alone
    /// outlasts a lease TTL; read at every step.
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub step_timeout: Option<Duration>,
    /// Serve `/metrics`, `/healthz` and `/readyz` on this address (`IP:PORT`; port 0: any
    /// free port, logged). `run --metrics-addr` overrides it. Absent: not served. Read at
    /// start: a reload that changes it logs that it takes effect at the next restart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Cores the solves of all queues of this replica share (rounds that overlap split
    /// them; a round that finds none free runs on one thread of its own, see
    /// `daemon::cores`). A queue's `round.threads` caps its share. Absent: the machine's
    /// cores. Read at start: a reload that changes it logs that a restart is needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solver_threads: Option<usize>,
    /// Refuse to start unless every client and server login has a connection limit and
    /// the limits leave the daemon its connections (`db::login_limits`). Off (a pooler
    /// bounds the clients instead): the same facts are logged as a warning and the daemon
    /// starts. Read at start.
    pub check_login_limits: bool,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            poll_interval: Duration::from_secs(5),
            lease_ttl: Duration::from_secs(15),
            lease_renew: Duration::from_secs(5),
            lock_timeout: Duration::from_secs(2),
            statement_timeout: Duration::from_secs(60),
            step_timeout: None,
            metrics_addr: None,
            solver_threads: None,
            check_login_limits: true,
        }
    }
}

impl DaemonConfig {
    /// How long a queue's step may take in all, given its round's `budget`:
    /// `step_timeout` (or `lease_ttl`) beyond the solve.
    pub fn step_limit(&self, budget: Duration) -> Duration {
        self.step_timeout.unwrap_or(self.lease_ttl) + budget
    }

    /// How long one batch of the retention pruner may wait on the database: its
    /// statements' own bound (`statement_timeout`) and a step's wait beyond it.
    pub fn prune_batch_limit(&self) -> Duration {
        self.statement_timeout + self.step_limit(Duration::ZERO)
    }
}
