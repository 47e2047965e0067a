//! The round's input, read in one place: the queue's snapshot, the core's pool made of
//! it (with the rows the core cannot read, as rejections), and the queue's open backfill
//! requests as the core's sessions. The round (`daemon::round`) solves exactly this.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::DbError;
use super::backfill::{load_member_avoids, snapshot_backfills_within};
use super::snapshot::{Snapshot, SnapshotLimits, snapshot_round};
use matchmaker_optimizer::backfill::Session;
use matchmaker_optimizer::{Pool, Rejection};

/// How much of the queue one round reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InputLimits {
    pub snapshot: SnapshotLimits,
    /// None: backfill is off, no request is read.
    pub backfill: Option<BackfillShare>,
}

/// How many open slots a round's backfill requests may take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackfillShare {
    /// At most this share of the pool (`limits.max_fill_share`), so new matches keep
    /// the rest...
    pub max_fill_share: f64,
    /// ... and one match worth however small the pool (teams times team size).
    pub match_size: usize,
}

/// What one round solves.
#[derive(Debug, Clone)]
pub struct RoundInput {
    pub snapshot: Snapshot,
    pub pool: Pool,
    /// Rows the core cannot read, with why (the commit marks them rejected).
    pub rejected: Vec<Rejection>,
    pub backfill: BackfillSessions,
}

/// The round's open backfill requests as the core's sessions.
#[derive(Debug, Clone, Default)]
pub struct BackfillSessions {
    /// Oldest request first.
    pub sessions: Vec<Session>,
    /// (request id, the client's session id) by the core's session id.
    pub requests: HashMap<String, (i64, String)>,
    /// Requests the core cannot read, with why: left open (they expire with it).
    pub unreadable: Vec<(i64, String)>,
}

impl BackfillSessions {
    /// (request id, session id) of the core's session `id` ((-1, "") for none).
    pub fn request(&self, id: &str) -> (i64, String) {
        self.requests
            .get(id)
            .cloned()
            .unwrap_or((-1, String::new()))
    }
}

/// Read the round of `queue` at `now`: its snapshot, the pool, and its backfill
/// requests within their share of that pool.
pub async fn read_round_input(
    db: &PgPool,
    queue: &str,
    limits: InputLimits,
    now: DateTime<Utc>,
) -> Result<RoundInput, DbError> {
    let snapshot = snapshot_round(db, queue, limits.snapshot).await?;
    let (pool, rejected) = snapshot.to_pool(now);
    let backfill = match limits.backfill {
        Some(share) => read_sessions(db, queue, &snapshot, &pool, share, limits.snapshot).await?,
        None => BackfillSessions::default(),
    };
    Ok(RoundInput {
        snapshot,
        pool,
        rejected,
        backfill,
    })
}

/// The open requests within their share of `pool`, with their members' avoids, as the
/// core's sessions named in the round's terms.
async fn read_sessions(
    db: &PgPool,
    queue: &str,
    snapshot: &Snapshot,
    pool: &Pool,
    share: BackfillShare,
    limits: SnapshotLimits,
) -> Result<BackfillSessions, DbError> {
    let slots = (share.max_fill_share * pool.players.len() as f64)
        .ceil()
        .max(share.match_size as f64);
    let mut requests = snapshot_backfills_within(
        db,
        queue,
        slots as i64,
        share.max_fill_share,
        pool.players.len(),
        share.match_size,
    )
    .await?;
    load_member_avoids(db, &mut requests, snapshot, limits.max_avoids).await?;
    let ids = snapshot.pool_ids();
    let mut out = BackfillSessions::default();
    for r in &requests {
        match r.to_session(&ids) {
            Ok(s) => {
                out.requests
                    .insert(s.id.clone(), (r.request_id, r.session_id.clone()));
                out.sessions.push(s);
            }
            Err(why) => out.unreadable.push((r.request_id, why)),
        }
    }
    Ok(out)
}
