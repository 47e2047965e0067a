//! Whether the client and server logins leave the daemon its connections: checked once,
//! when `matchmaker run` starts.
//!
//! Why: `max_connections` is one set of slots for the whole cluster, and a login without
//! a `CONNECTION LIMIT` may take every one of them that is not reserved. A game backend
//! that leaks connections, or a hostile one, then stops every other login, and a daemon
//! that restarts cannot connect at all. PostgreSQL 15 reserves slots for superusers only
//! (`superuser_reserved_connections`); a limit on a group role such as
//! `matchmaker_client` bounds nobody (it applies to sessions of that role, never of its
//! members). So the bound has to be on each login, set by a deploy step, and this check
//! makes a forgotten one stop the daemon's start instead of a later outage.
//!
//! The rule: every LOGIN role that is a member of `matchmaker_client` or
//! `matchmaker_server` (directly or through other roles, with or without inherit; not a
//! superuser) has a connection limit, and their sum plus the daemon's own connections
//! plus `superuser_reserved_connections` and `reserved_connections` fits in
//! `max_connections`. On PostgreSQL 16 and later it is also met when the daemon's login
//! has the privileges of `pg_use_reserved_connections` and `reserved_connections` is at
//! least the daemon's connections: those slots are then the daemon's whatever the
//! clients hold. (That branch runs only on a server of version 16 or later.)
//!
//! A deployment that bounds the clients elsewhere (a pooler in front) turns the refusal
//! into a warning with `[daemon] check_login_limits = false`.

use sqlx::PgPool;
use thiserror::Error;

use super::DbError;

/// `server_version_num` of the first PostgreSQL with `reserved_connections`.
pub const RESERVED_CONNECTIONS_SINCE: i32 = 160_000;

/// A client or server login and its connection limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginLimit {
    pub login: String,
    /// `None`: no limit (`rolconnlimit` -1).
    pub limit: Option<u32>,
}

/// The cluster's connection slots as the check sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionSlots {
    /// `server_version_num` (150004 for 15.4).
    pub server_version: i32,
    pub max_connections: u32,
    pub superuser_reserved: u32,
    /// `reserved_connections` (PostgreSQL 16+; 0 before).
    pub reserved: u32,
    /// The daemon's login (`session_user`).
    pub daemon_login: String,
    /// The daemon's login may use the `reserved_connections` slots.
    pub daemon_uses_reserved: bool,
    /// The connections the daemon may open at most.
    pub daemon_needs: u32,
    /// Every client and server login, by name.
    pub logins: Vec<LoginLimit>,
}

/// How the slots were found sufficient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotsKept {
    /// Every login is bounded and the limits fit beside the daemon.
    ByLimits,
    /// PostgreSQL 16+: the daemon's login has reserved slots enough for it.
    ByReservedConnections,
}

/// The client and server logins can take the slots the daemon needs. Its text is one
/// paragraph for the operator: which logins lack a limit, the arithmetic, and the
/// `ALTER ROLE` statements that fix it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "refusing to start: {} Where a pooler in front of PostgreSQL bounds the clients' connections instead, set \
     check_login_limits = false in [daemon] to start with this as a warning.",
    .slots.shortfall_text()
)]
pub struct SlotShortfall {
    pub slots: ConnectionSlots,
}

impl SlotShortfall {
    /// The paragraph without the opt-out: which logins, the arithmetic and the fix.
    pub fn facts(&self) -> String {
        self.slots.shortfall_text()
    }
}

/// The row of `login_limits.sql`.
#[derive(sqlx::FromRow)]
struct SlotsRow {
    server_version: i32,
    max_connections: i32,
    superuser_reserved: i32,
    reserved: i32,
    daemon_login: String,
    daemon_uses_reserved: bool,
    /// The client and server logins, by name, and each one's CONNECTION LIMIT (-1: none).
    logins: Vec<String>,
    limits: Vec<i32>,
}

/// Reads the cluster's slot settings and the client and server logins; `daemon_needs`
/// is the most connections the daemon will open.
pub async fn read_connection_slots(
    db: &PgPool,
    daemon_needs: u32,
) -> Result<ConnectionSlots, DbError> {
    let row: SlotsRow = sqlx::query_as(include_str!("sql/login_limits.sql"))
        .fetch_one(db)
        .await?;
    let count = |n: i32| u32::try_from(n).unwrap_or(0);
    Ok(ConnectionSlots {
        server_version: row.server_version,
        max_connections: count(row.max_connections),
        superuser_reserved: count(row.superuser_reserved),
        reserved: count(row.reserved),
        daemon_login: row.daemon_login,
        daemon_uses_reserved: row.daemon_uses_reserved,
        daemon_needs,
        logins: row
            .logins
            .into_iter()
            .zip(row.limits)
            .map(|(login, limit)| LoginLimit {
                login,
                limit: u32::try_from(limit).ok(),
            })
            .collect(),
    })
}

impl ConnectionSlots {
    /// Whether the daemon keeps its connections whatever the client and server logins
    /// do (see the module's documentation for the rule).
    pub fn check(&self) -> Result<SlotsKept, SlotShortfall> {
        if self.server_version >= RESERVED_CONNECTIONS_SINCE
            && self.daemon_uses_reserved
            && self.reserved >= self.daemon_needs
        {
            return Ok(SlotsKept::ByReservedConnections);
        }
        if self.unbounded().is_empty() && self.taken() <= u64::from(self.max_connections) {
            return Ok(SlotsKept::ByLimits);
        }
        Err(SlotShortfall {
            slots: self.clone(),
        })
    }

    /// The logins without a connection limit.
    pub fn unbounded(&self) -> Vec<&str> {
        self.logins
            .iter()
            .filter(|l| l.limit.is_none())
            .map(|l| l.login.as_str())
            .collect()
    }

    /// The sum of the limits of the bounded logins.
    pub fn limits_sum(&self) -> u64 {
        self.logins
            .iter()
            .filter_map(|l| l.limit)
            .map(u64::from)
            .sum()
    }

    /// The slots reserved from everyone but superusers (and, 16+, the members of
    /// `pg_use_reserved_connections`).
    fn reserved_slots(&self) -> u64 {
        u64::from(self.superuser_reserved) + u64::from(self.reserved)
    }

    /// Slots the bounded logins, the daemon and the reservations may take.
    fn taken(&self) -> u64 {
        self.limits_sum() + u64::from(self.daemon_needs) + self.reserved_slots()
    }

    /// What the client and server logins may hold together: `max_connections` less the
    /// reservations and the daemon's connections (negative: not even the daemon fits).
    pub fn room_for_logins(&self) -> i64 {
        i64::from(self.max_connections)
            - self.reserved_slots() as i64
            - i64::from(self.daemon_needs)
    }

    /// The highest connection limit `c` such that every login bounded to at most `c`
    /// fits: the sum over the logins of `min(limit, c)` (a login without a limit counts
    /// `c`) is at most [`room_for_logins`](Self::room_for_logins). `None`: not even a
    /// limit of 1 each fits.
    pub fn fitting_cap(&self) -> Option<u32> {
        let room = u64::try_from(self.room_for_logins()).ok()?;
        let held = |cap: u64| -> u64 {
            self.logins
                .iter()
                .map(|l| l.limit.map_or(cap, |limit| u64::from(limit).min(cap)))
                .sum()
        };
        if held(1) > room {
            return None;
        }
        // held() is monotone in the cap: the largest cap that fits, by bisection.
        let (mut fits, mut too_many) = (1u64, room + 1);
        while too_many - fits > 1 {
            let mid = fits + (too_many - fits) / 2;
            if held(mid) <= room {
                fits = mid;
            } else {
                too_many = mid;
            }
        }
        Some(u32::try_from(fits).unwrap_or(u32::MAX))
    }

    /// The statements that fix it: every login without a limit, or with a higher one,
    /// bounded to [`fitting_cap`](Self::fitting_cap).
    pub fn fix_statements(&self) -> Vec<String> {
        let Some(cap) = self.fitting_cap() else {
            return Vec::new();
        };
        self.logins
            .iter()
            .filter(|l| l.limit.is_none_or(|limit| limit > cap))
            .map(|l| {
                format!(
                    "ALTER ROLE {} CONNECTION LIMIT {cap};",
                    quote_ident(&l.login)
                )
            })
            .collect()
    }

    /// The refusal's paragraph (also the warning's, when the check is turned off).
    fn shortfall_text(&self) -> String {
        let unbounded = self.unbounded();
        let mut text = String::from(
            "client and server logins can take the connection slots the daemon needs: ",
        );
        if !unbounded.is_empty() {
            text.push_str(&format!(
                "{} {} of matchmaker_client or matchmaker_server with no connection limit \
                 (each may open sessions until the cluster refuses everyone); ",
                unbounded.join(", "),
                if unbounded.len() == 1 {
                    "is a login"
                } else {
                    "are logins"
                },
            ));
        }
        let whose = if unbounded.is_empty() {
            "the client and server logins"
        } else {
            "the other client and server logins"
        };
        let reservations = if self.server_version >= RESERVED_CONNECTIONS_SINCE {
            format!(
                "superuser_reserved_connections {} and reserved_connections {} keep {}",
                self.superuser_reserved,
                self.reserved,
                self.reserved_slots()
            )
        } else {
            format!(
                "superuser_reserved_connections keeps {}",
                self.superuser_reserved
            )
        };
        let (taken, max) = (self.taken(), u64::from(self.max_connections));
        let verdict = if !unbounded.is_empty() && taken <= max {
            format!(
                "of max_connections {max}, and the unbounded logins may take the other {}",
                max - taken
            )
        } else {
            format!("> max_connections {max}")
        };
        text.push_str(&format!(
            "the connection limits of {whose} sum to {}, the daemon needs {} connections \
             and {reservations}: {} + {} + {} = {taken} {verdict}. ",
            self.limits_sum(),
            self.daemon_needs,
            self.limits_sum(),
            self.daemon_needs,
            self.reserved_slots(),
        ));
        let statements = self.fix_statements();
        if statements.is_empty() {
            let at_least =
                self.reserved_slots() + u64::from(self.daemon_needs) + self.logins.len() as u64;
            text.push_str(&format!(
                "Fix: raise max_connections to at least {at_least} (a restart of PostgreSQL), \
                 then bound each login (ALTER ROLE name CONNECTION LIMIT n, as a role with \
                 CREATEROLE) so the limits sum to at most max_connections - {}",
                at_least - self.logins.len() as u64,
            ));
        } else {
            text.push_str(&format!(
                "Fix, as a role with CREATEROLE: {} (any limits that sum to at most {} do; \
                 or raise max_connections",
                statements.join(" "),
                self.room_for_logins(),
            ));
        }
        if self.server_version >= RESERVED_CONNECTIONS_SINCE {
            text.push_str(&format!(
                "; or GRANT pg_use_reserved_connections TO {} and set reserved_connections \
                 to at least {}",
                quote_ident(&self.daemon_login),
                self.daemon_needs
            ));
        }
        if !statements.is_empty() {
            text.push(')');
        }
        text.push('.');
        text
    }
}

/// `name` as an SQL identifier: as is when PostgreSQL would read it unchanged, else
/// double-quoted.
fn quote_ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(logins: &[(&str, Option<u32>)]) -> ConnectionSlots {
        ConnectionSlots {
            server_version: 150_004,
            max_connections: 100,
            superuser_reserved: 3,
            reserved: 0,
            daemon_login: "matchmaker".into(),
            daemon_uses_reserved: false,
            daemon_needs: 21,
            logins: logins
                .iter()
                .map(|(login, limit)| LoginLimit {
                    login: login.to_string(),
                    limit: *limit,
                })
                .collect(),
        }
    }

    #[test]
    fn bounded_logins_that_fit_pass() {
        assert_eq!(
            slots(&[("a", Some(40)), ("b", Some(36))]).check(),
            Ok(SlotsKept::ByLimits)
        );
        assert_eq!(slots(&[]).check(), Ok(SlotsKept::ByLimits));
    }

    #[test]
    fn one_slot_too_many_fails_with_the_arithmetic() {
        let err = slots(&[("a", Some(40)), ("b", Some(37))])
            .check()
            .unwrap_err()
            .to_string();
        assert!(err.contains("sum to 77"), "{err}");
        assert!(err.contains("the daemon needs 21"), "{err}");
        assert!(
            err.contains("77 + 21 + 3 = 101 > max_connections 100"),
            "{err}"
        );
        // a bounded to 39: 39 + 37 = 76, the room left.
        assert!(err.contains("ALTER ROLE a CONNECTION LIMIT 39;"), "{err}");
        assert!(!err.contains("ALTER ROLE b"), "{err}");
        assert!(err.contains("at most 76"), "{err}");
    }

    #[test]
    fn an_unbounded_login_is_named_and_given_the_room_left() {
        let s = slots(&[("game_backend", None), ("servers", Some(10))]);
        let err = s.check().unwrap_err().to_string();
        assert!(err.contains("game_backend is a login"), "{err}");
        assert!(
            err.contains("10 + 21 + 3 = 34 of max_connections 100, and the unbounded logins may take the other 66"),
            "{err}"
        );
        assert!(
            err.contains("ALTER ROLE game_backend CONNECTION LIMIT 66;"),
            "{err}"
        );
        assert!(err.contains("check_login_limits = false"), "{err}");
        assert!(!err.contains('\n'), "one paragraph: {err}");
        // Two unbounded logins share the room.
        let s = slots(&[("x", None), ("Y", None)]);
        let fix = s.fix_statements();
        assert_eq!(
            fix,
            [
                "ALTER ROLE x CONNECTION LIMIT 38;",
                "ALTER ROLE \"Y\" CONNECTION LIMIT 38;"
            ]
        );
    }

    #[test]
    fn the_operations_guide_shows_the_refusal_as_it_is() {
        let s = slots(&[("game_backend", None), ("game_servers", Some(10))]);
        let refusal = format!("error: {}", s.check().unwrap_err());
        let guide = include_str!("../../docs/operations.md");
        assert!(guide.contains(&refusal), "{refusal}");
    }

    #[test]
    fn the_fix_always_fits() {
        for logins in [
            vec![("a", None), ("b", Some(70)), ("c", Some(2))],
            vec![("a", Some(500)), ("b", Some(500))],
            vec![("a", None); 7],
        ] {
            let s = slots(&logins);
            let cap = s.fitting_cap().unwrap();
            let mut fixed = s.clone();
            for l in &mut fixed.logins {
                l.limit = Some(l.limit.map_or(cap, |limit| limit.min(cap)));
            }
            assert_eq!(fixed.check(), Ok(SlotsKept::ByLimits), "{logins:?}");
            // And one more would not.
            for l in &mut fixed.logins {
                if s.logins
                    .iter()
                    .any(|o| o.login == l.login && o.limit.is_none_or(|x| x > cap))
                {
                    l.limit = Some(cap + 1);
                }
            }
            assert!(fixed.check().is_err(), "{logins:?}");
        }
    }

    #[test]
    fn too_many_logins_for_the_room_asks_for_more_max_connections() {
        let mut s = slots(&[("a", None), ("b", None)]);
        s.max_connections = 25;
        let err = s.check().unwrap_err().to_string();
        assert!(
            err.contains("raise max_connections to at least 26"),
            "{err}"
        );
        assert!(s.fix_statements().is_empty());
    }

    #[test]
    fn reserved_connections_count_only_from_postgresql_16() {
        let mut s = slots(&[("a", None)]);
        s.reserved = 25;
        s.daemon_uses_reserved = true;
        assert!(s.check().is_err(), "15 has no reserved_connections");
        s.server_version = 160_002;
        assert_eq!(s.check(), Ok(SlotsKept::ByReservedConnections));
        s.reserved = 20;
        let err = s.check().unwrap_err().to_string();
        assert!(err.contains("reserved_connections to at least 21"), "{err}");
        s.reserved = 25;
        s.daemon_uses_reserved = false;
        assert!(
            s.check().is_err(),
            "the daemon's login must be granted the role"
        );
    }
}
