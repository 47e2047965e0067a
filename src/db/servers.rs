//! Game servers (`servers`, migration 12): the supply a round reads, the allocation its
//! commit writes, the release of a cancelled match's server, and the fleet operators see.
//!
//! A server is ready when it announced itself (`server_ready`) within the queue's ttl and
//! hosts nothing. The commit locks the servers it allocates with SKIP LOCKED: a server
//! login's call in flight holds its own row, and the commit never waits for it (that
//! server is simply not this round's).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

use super::DbError;
use matchmaker_optimizer::servers::Supply;

/// Ready servers per region, announced within `ttl` (the database's clock).
pub async fn ready_supply(db: &PgPool, ttl: Duration) -> Result<Supply, DbError> {
    let rows: Vec<(String, i64)> = sqlx::query_as(include_str!("sql/servers_ready_supply.sql"))
        .bind(ttl.as_secs_f64())
        .fetch_all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(region, n)| (region, n.clamp(0, u32::MAX as i64) as u32))
        .collect())
}

/// A ready server the commit holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadyServer {
    pub owner: String,
    pub server_id: String,
    pub address: String,
    pub ready_since: DateTime<Utc>,
}

/// A ready server locked for a region's need (`servers_lock_ready.sql`).
#[derive(sqlx::FromRow)]
struct ReadyRow {
    region: String,
    owner: String,
    server_id: String,
    address: String,
    ready_since: DateTime<Utc>,
}

/// Lock up to `needs[region]` ready servers of each region, the most recently heard
/// from first (the likeliest to be alive). Servers locked by a server login's call right
/// now are skipped.
pub(super) async fn lock_ready(
    tx: &mut PgConnection,
    needs: &BTreeMap<&str, usize>,
    ttl: Duration,
) -> Result<HashMap<String, Vec<ReadyServer>>, DbError> {
    if needs.is_empty() {
        return Ok(HashMap::new());
    }
    let regions: Vec<&str> = needs.keys().copied().collect();
    let counts: Vec<i64> = needs.values().map(|&n| n as i64).collect();
    let rows: Vec<ReadyRow> = sqlx::query_as(include_str!("sql/servers_lock_ready.sql"))
        .bind(&regions)
        .bind(&counts)
        .bind(ttl.as_secs_f64())
        .fetch_all(&mut *tx)
        .await?;
    let mut out: HashMap<String, Vec<ReadyServer>> = HashMap::new();
    for row in rows {
        out.entry(row.region).or_default().push(ReadyServer {
            owner: row.owner,
            server_id: row.server_id,
            address: row.address,
            ready_since: row.ready_since,
        });
    }
    Ok(out)
}

/// Allocate each server to its match: the server hosts it, the match names it.
pub(super) async fn allocate(
    tx: &mut PgConnection,
    allocations: &[(i64, &ReadyServer)],
) -> Result<(), DbError> {
    if allocations.is_empty() {
        return Ok(());
    }
    let match_ids: Vec<i64> = allocations.iter().map(|(m, _)| *m).collect();
    let owners: Vec<&str> = allocations.iter().map(|(_, s)| s.owner.as_str()).collect();
    let ids: Vec<&str> = allocations
        .iter()
        .map(|(_, s)| s.server_id.as_str())
        .collect();
    sqlx::query(include_str!("sql/servers_allocate.sql"))
        .bind(&match_ids)
        .bind(&owners)
        .bind(&ids)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Fills of running sessions name the session's server: the server of the requesting
/// login whose id is the session id, or that hosts the match whose id is the session id
/// (a session the matchmaker placed). A session on no known server keeps none.
pub(super) async fn fills_stay_on_their_server(
    tx: &mut PgConnection,
    fill_ids: &[i64],
) -> Result<(), DbError> {
    sqlx::query(include_str!("sql/servers_place_fills.sql"))
        .bind(fill_ids)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// A server given back by a cancelled match.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Released {
    pub owner: String,
    pub server_id: String,
    pub match_id: i64,
}

/// The servers of these matches are free again (the ready check cancelled them before
/// they were played); they keep their last announcement, so the ttl still holds.
pub(super) async fn release(
    tx: &mut PgConnection,
    match_ids: &[i64],
) -> Result<Vec<Released>, DbError> {
    if match_ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(sqlx::query_as(include_str!("sql/servers_release.sql"))
        .bind(match_ids)
        .fetch_all(&mut *tx)
        .await?)
}

/// One region of the fleet, as `status` and the metrics show it (`server_fleet`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, sqlx::FromRow)]
pub struct FleetRegion {
    pub region: String,
    /// Ready and heard from within the shortest server ttl of the queues.
    pub ready: i64,
    /// Ready, but silent for longer: not used until they announce again.
    pub silent: i64,
    pub allocated: i64,
}

/// The fleet per region, every server login's servers together.
pub async fn fleet(db: &PgPool) -> Result<Vec<FleetRegion>, sqlx::Error> {
    sqlx::query_as(include_str!("sql/servers_fleet.sql"))
        .fetch_all(db)
        .await
}
