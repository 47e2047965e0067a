//! Who may run the operators' commands: a login that reads the tables (a member of
//! `matchmaker_ops` or `matchmaker_daemon`, the schema owner, a superuser). Each command
//! asks once, before its first query, and a client login gets one line that names the
//! role it needs. `prune` deletes, so it asks for a login that may delete from the history
//! tables (a member of `matchmaker_daemon`, the schema owner, a superuser).

use sqlx::PgPool;
use thiserror::Error;

use crate::db::{self, DbError};

/// The role the operators' commands need, as the refusal names it.
const NEEDED: &str = "a login in role matchmaker_ops (or matchmaker_daemon)";

#[derive(Debug, Error)]
pub enum AccessError {
    #[error("{command} needs {NEEDED}; this login ({login}) may only use the client API")]
    ClientLogin { command: String, login: String },
    #[error("{command} needs {NEEDED}; login {login} may not read {}", .tables.join(", "))]
    CannotRead {
        command: String,
        login: String,
        tables: Vec<String>,
    },
    #[error(
        "{command} deletes history and needs a login in role matchmaker_daemon; login \
         {login} may not delete from {}",
        .tables.join(", ")
    )]
    CannotDelete {
        command: String,
        login: String,
        tables: Vec<String>,
    },
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Refuse a login that cannot read what `command` reads ([`db::access::OPS_READS`]).
pub async fn require_ops_login(db: &PgPool, command: &str) -> Result<(), AccessError> {
    let access = db::access::read_access(db, db::access::OPS_READS).await?;
    if access.unreadable.is_empty() {
        return Ok(());
    }
    let command = command.to_string();
    Err(if access.client {
        AccessError::ClientLogin {
            command,
            login: access.login,
        }
    } else {
        AccessError::CannotRead {
            command,
            login: access.login,
            tables: access.unreadable,
        }
    })
}

/// Refuse a login that cannot delete what `command` deletes ([`db::access::PRUNE_DELETES`]).
pub async fn require_daemon_login(db: &PgPool, command: &str) -> Result<(), AccessError> {
    let access = db::access::delete_access(db, db::access::PRUNE_DELETES).await?;
    if access.unreadable.is_empty() {
        return Ok(());
    }
    Err(AccessError::CannotDelete {
        command: command.to_string(),
        login: access.login,
        tables: access.unreadable,
    })
}
