//! The database a URL names: one host, or the hosts of a high-availability formation in
//! the multi-host form libpq, psycopg, node-postgres and JDBC share
//! (`postgres://user@h1:5432,h2:5432/db?target_session_attrs=read-write`), and the kind
//! of session every connection must be.
//!
//! sqlx connects to one host, so a pool on several is kept pointed at the right one here:
//! the hosts are tried in the URL's order and the first whose session fits
//! `target_session_attrs` is used; every new connection is checked again; a watcher
//! probes the chosen host every [`PROBE_EVERY`] and, when it is gone or no longer fits (a
//! failover demoted it), finds the host that now fits and re-points the pool, whose older
//! connections are then discarded. A one-host URL without `target_session_attrs` gets a
//! plain pool, with none of this.

use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool};

/// How often the watcher checks the host a pool is on.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);

/// The longest a probe or a host's try may take before the next host is tried: a host
/// whose machine is lost may leave a connection attempt hanging instead of refused.
pub const HOST_TIMEOUT: Duration = Duration::from_secs(3);

/// libpq's `target_session_attrs`: which session a connection must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionAttrs {
    /// Any host that answers (the default).
    Any,
    /// A session that may write (`transaction_read_only` is off): the primary.
    ReadWrite,
    /// A session that may not write.
    ReadOnly,
    /// A server not in recovery.
    Primary,
    /// A server in recovery (a standby).
    Standby,
    /// A standby if any host is one, else any host.
    PreferStandby,
}

impl FromStr for SessionAttrs {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "any" => Self::Any,
            "read-write" => Self::ReadWrite,
            "read-only" => Self::ReadOnly,
            "primary" => Self::Primary,
            "standby" => Self::Standby,
            "prefer-standby" => Self::PreferStandby,
            other => {
                return Err(format!(
                    "target_session_attrs = {other}: not one of any, read-write, read-only, \
                     primary, standby, prefer-standby"
                ));
            }
        })
    }
}

/// What a session is, as the attrs judge it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionKind {
    pub in_recovery: bool,
    pub read_only: bool,
}

impl SessionAttrs {
    /// Whether a session of `kind` may serve. `PreferStandby` accepts any; the search
    /// tries standbys first.
    pub fn accepts(self, kind: SessionKind) -> bool {
        match self {
            Self::Any | Self::PreferStandby => true,
            Self::ReadWrite => !kind.read_only,
            Self::ReadOnly => kind.read_only,
            Self::Primary => !kind.in_recovery,
            Self::Standby => kind.in_recovery,
        }
    }
}

/// One host of the URL.
#[derive(Debug, Clone)]
struct Host {
    /// `host:port`, for logs and errors.
    label: String,
    options: PgConnectOptions,
}

/// The hosts a URL names, in its order, and the session each connection must be.
#[derive(Debug, Clone)]
pub struct DbTarget {
    hosts: Vec<Host>,
    attrs: SessionAttrs,
}

impl DbTarget {
    /// Parse a `postgres://` URL with one host or a comma-separated list of them; every
    /// other part (user, password, database, `sslmode` and the other parameters) is shared
    /// by all hosts.
    pub fn parse(url: &str) -> Result<Self, sqlx::Error> {
        let config = |msg: String| sqlx::Error::Configuration(msg.into());
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| config("not a postgres:// URL".into()))?;
        // The authority ends at the path or the query; the user info at its last `@`.
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (userinfo, hosts) = match rest[..end].rfind('@') {
            Some(at) => (&rest[..=at], &rest[at + 1..end]),
            None => ("", &rest[..end]),
        };
        let (path, query) = match rest[end..].split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (&rest[end..], None),
        };
        let mut attrs = SessionAttrs::Any;
        let mut kept = Vec::new();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("target_session_attrs", value)) => attrs = value.parse().map_err(config)?,
                _ => kept.push(pair),
            }
        }
        let query = if kept.is_empty() {
            String::new()
        } else {
            format!("?{}", kept.join("&"))
        };
        let hosts = hosts
            .split(',')
            .map(|host| {
                let options = PgConnectOptions::from_str(&format!(
                    "{scheme}://{userinfo}{host}{path}{query}"
                ))?;
                Ok(Host {
                    label: format!("{}:{}", options.get_host(), options.get_port()),
                    options,
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()?;
        Ok(DbTarget { hosts, attrs })
    }

    pub fn attrs(&self) -> SessionAttrs {
        self.attrs
    }

    /// The hosts, `host:port`, in the URL's order.
    pub fn host_labels(&self) -> Vec<&str> {
        self.hosts.iter().map(|h| h.label.as_str()).collect()
    }

    /// Whether a pool on this target needs the checks and the watcher.
    fn is_plain(&self) -> bool {
        self.hosts.len() == 1 && self.attrs == SessionAttrs::Any
    }

    /// The first host (in the URL's order) whose session fits; for `PreferStandby`, the
    /// first standby, else the first host that answers. The error names every host's.
    pub async fn find(&self) -> Result<usize, sqlx::Error> {
        let mut kinds = Vec::with_capacity(self.hosts.len());
        let mut failures = Vec::new();
        for (i, host) in self.hosts.iter().enumerate() {
            match tokio::time::timeout(HOST_TIMEOUT, probe_once(&host.options)).await {
                Ok(Ok(kind)) => {
                    let fits = match self.attrs {
                        SessionAttrs::PreferStandby => kind.in_recovery,
                        attrs => attrs.accepts(kind),
                    };
                    if fits {
                        return Ok(i);
                    }
                    kinds.push(i);
                    failures.push(format!("{}: {}", host.label, describe_kind(kind)));
                }
                Ok(Err(e)) => {
                    failures.push(format!("{}: {}", host.label, super::describe_sql_error(&e)))
                }
                Err(_) => {
                    failures.push(format!("{}: no answer within {HOST_TIMEOUT:?}", host.label))
                }
            }
        }
        if self.attrs == SessionAttrs::PreferStandby
            && let Some(&i) = kinds.first()
        {
            return Ok(i);
        }
        Err(sqlx::Error::Configuration(
            format!(
                "no host fits target_session_attrs={}: {}",
                attrs_name(self.attrs),
                failures.join("; ")
            )
            .into(),
        ))
    }

    /// A pool of at most `max_connections` on the host that fits, each connection with
    /// `session` settings; kept on the host that fits as long as the pool is open.
    pub async fn pool(
        self: &Arc<Self>,
        max_connections: u32,
        session: Vec<(String, String)>,
    ) -> Result<PgPool, sqlx::Error> {
        let with_session = {
            let session = session.clone();
            move |options: &PgConnectOptions| {
                options
                    .clone()
                    .options(session.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            }
        };
        let base = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(30));
        if self.is_plain() {
            return base
                .connect_with(with_session(&self.hosts[0].options))
                .await;
        }
        let current = self.find().await?;
        let switched = Switch::default();
        let attrs = self.attrs;
        let pool = switched
            .discard_older(base)
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    let kind = session_kind(conn).await?;
                    if attrs.accepts(kind) {
                        Ok(())
                    } else {
                        Err(sqlx::Error::Configuration(
                            format!(
                                "host no longer fits target_session_attrs={}: {}",
                                attrs_name(attrs),
                                describe_kind(kind)
                            )
                            .into(),
                        ))
                    }
                })
            })
            .connect_with(with_session(&self.hosts[current].options))
            .await?;
        tracing::info!(host = %self.hosts[current].label, hosts = self.hosts.len(), target_session_attrs = attrs_name(attrs), "database host chosen");
        tokio::spawn(watch(
            self.clone(),
            pool.clone(),
            current,
            switched,
            Box::new(with_session),
        ));
        Ok(pool)
    }
}

/// When the pool last moved to another host: connections made before are discarded as
/// they are next acquired, so none of them stays on a host that no longer fits.
#[derive(Debug, Clone, Default)]
pub(crate) struct Switch(Arc<Mutex<Option<Instant>>>);

impl Switch {
    pub(crate) fn mark(&self) {
        *self.0.lock().expect("switch lock") = Some(Instant::now());
    }

    pub(crate) fn discard_older(&self, options: PgPoolOptions) -> PgPoolOptions {
        let switch = self.clone();
        options.before_acquire(move |_, meta| {
            let at = *switch.0.lock().expect("switch lock");
            let keep = match (at, Instant::now().checked_sub(meta.age)) {
                (Some(at), Some(made)) => made >= at,
                _ => true,
            };
            Box::pin(async move { Ok(keep) })
        })
    }
}

pub(crate) type WithSession = Box<dyn Fn(&PgConnectOptions) -> PgConnectOptions + Send + Sync>;

/// Keep `pool` on the host that fits until it closes.
async fn watch(
    target: Arc<DbTarget>,
    pool: PgPool,
    mut current: usize,
    switched: Switch,
    with_session: WithSession,
) {
    let mut probe: Option<PgConnection> = None;
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        if pool.is_closed() {
            break;
        }
        let host = &target.hosts[current];
        let fits =
            match tokio::time::timeout(HOST_TIMEOUT, probe_on(&mut probe, &host.options)).await {
                Ok(Ok(kind)) => target.attrs.accepts(kind) && !prefers_a_standby(&target, kind),
                _ => false,
            };
        if fits {
            continue;
        }
        probe = None;
        match target.find().await {
            Ok(found) if found == current => {}
            Ok(found) => {
                pool.set_connect_options(with_session(&target.hosts[found].options));
                switched.mark();
                metrics::counter!("matchmaker_database_host_switches_total").increment(1);
                tracing::warn!(
                    from = %target.hosts[current].label,
                    to = %target.hosts[found].label,
                    target_session_attrs = attrs_name(target.attrs),
                    "database host changed (a failover or switchover): new connections go to the new host"
                );
                current = found;
            }
            Err(e) => {
                tracing::warn!(error = %e, "no database host fits; trying again");
            }
        }
    }
}

/// A pool made from `base`'s options by `derive`, connecting on first use and kept on the
/// host `base` is on (the watcher moves `base` after a failover).
pub fn derived_lazy(
    base: &PgPool,
    options: PgPoolOptions,
    derive: impl Fn(&PgConnectOptions) -> PgConnectOptions + Send + Sync + 'static,
) -> PgPool {
    let switched = Switch::default();
    let pool = switched
        .discard_older(options)
        .connect_lazy_with(derive(&base.connect_options()));
    tokio::spawn(follow(
        base.clone(),
        pool.clone(),
        switched,
        Box::new(derive),
    ));
    pool
}

/// Keep `pool`, made from `base`'s options by `derive`, on the host `base` is on (the
/// watcher moves `base`), until either closes.
pub(crate) async fn follow(base: PgPool, pool: PgPool, switched: Switch, derive: WithSession) {
    let mut seen = base.connect_options();
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        if base.is_closed() || pool.is_closed() {
            break;
        }
        let now = base.connect_options();
        if !Arc::ptr_eq(&now, &seen) {
            pool.set_connect_options(derive(&now));
            switched.mark();
            seen = now;
        }
    }
}

/// A `PreferStandby` pool on a primary keeps looking for a standby.
fn prefers_a_standby(target: &DbTarget, kind: SessionKind) -> bool {
    target.attrs == SessionAttrs::PreferStandby && !kind.in_recovery && target.hosts.len() > 1
}

async fn probe_on(
    conn: &mut Option<PgConnection>,
    options: &PgConnectOptions,
) -> Result<SessionKind, sqlx::Error> {
    if conn.is_none() {
        *conn = Some(PgConnection::connect_with(options).await?);
    }
    let result = session_kind(conn.as_mut().expect("connected above")).await;
    if result.is_err() {
        *conn = None;
    }
    result
}

async fn probe_once(options: &PgConnectOptions) -> Result<SessionKind, sqlx::Error> {
    let mut conn = PgConnection::connect_with(options).await?;
    let kind = session_kind(&mut conn).await;
    conn.close().await.ok();
    kind
}

/// What libpq asks a host to judge `target_session_attrs`.
async fn session_kind(conn: &mut PgConnection) -> Result<SessionKind, sqlx::Error> {
    let (in_recovery, read_only): (bool, String) =
        sqlx::query_as("SELECT pg_is_in_recovery(), current_setting('transaction_read_only')")
            .fetch_one(conn)
            .await?;
    Ok(SessionKind {
        in_recovery,
        read_only: read_only == "on",
    })
}

fn describe_kind(kind: SessionKind) -> &'static str {
    match (kind.in_recovery, kind.read_only) {
        (true, _) => "a standby (in recovery)",
        (false, true) => "a primary whose sessions are read-only",
        (false, false) => "a primary (read-write)",
    }
}

fn attrs_name(attrs: SessionAttrs) -> &'static str {
    match attrs {
        SessionAttrs::Any => "any",
        SessionAttrs::ReadWrite => "read-write",
        SessionAttrs::ReadOnly => "read-only",
        SessionAttrs::Primary => "primary",
        SessionAttrs::Standby => "standby",
        SessionAttrs::PreferStandby => "prefer-standby",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multi_host_url_is_split_into_hosts_sharing_the_rest() {
        let t = DbTarget::parse(
            "postgres://app:p%40ss@db1:5433,db2,[::1]:6000/game?sslmode=require&target_session_attrs=read-write",
        )
        .unwrap();
        assert_eq!(t.host_labels(), ["db1:5433", "db2:5432", "[::1]:6000"]);
        assert_eq!(t.attrs(), SessionAttrs::ReadWrite);
        for h in &t.hosts {
            assert_eq!(h.options.get_username(), "app");
            assert_eq!(h.options.get_database(), Some("game"));
        }
    }

    #[test]
    fn a_one_host_url_without_attrs_is_plain() {
        let t = DbTarget::parse("postgres://postgres@127.0.0.1:5432/postgres").unwrap();
        assert!(t.is_plain());
        let t = DbTarget::parse("postgres://h/db?target_session_attrs=primary").unwrap();
        assert!(!t.is_plain());
    }

    #[test]
    fn an_unknown_session_attr_is_refused_with_the_choices() {
        let e = DbTarget::parse("postgres://h1,h2/db?target_session_attrs=leader").unwrap_err();
        assert!(e.to_string().contains("read-write"), "{e}");
    }

    #[test]
    fn attrs_judge_sessions_as_libpq_does() {
        let primary = SessionKind {
            in_recovery: false,
            read_only: false,
        };
        let standby = SessionKind {
            in_recovery: true,
            read_only: true,
        };
        assert!(SessionAttrs::ReadWrite.accepts(primary));
        assert!(!SessionAttrs::ReadWrite.accepts(standby));
        assert!(SessionAttrs::ReadOnly.accepts(standby));
        assert!(SessionAttrs::Standby.accepts(standby));
        assert!(!SessionAttrs::Primary.accepts(standby));
        assert!(SessionAttrs::PreferStandby.accepts(primary));
    }
}
