//! Bounded history: delete a queue's rounds, matches, match players and ended entries
//! older than the retention horizon, in small batches, each its own short transaction.
//!
//! What goes, per queue, in this order (each step in batches of at most `batch_size`):
//!
//! 1. **Matches** created before the cutoff, with their `match_players` rows and the
//!    entries matched into them (found through `match_players`), except a match that is
//!    still among the last `keep_matches` matches of one of its players (see below).
//! 2. **Entries that ended outside a match** (cancelled, expired, rejected, withdrawn
//!    from this queue for a match elsewhere) before the cutoff, unless a round newer than
//!    the cutoff names them. (An entry's `match_id` and `round_id` are copies without a
//!    foreign key: a withdrawn entry may outlive the match that won, or
//!    go before it.)
//! 3. **Backfill requests** that ended (filled, expired, cancelled) before the cutoff;
//!    an open request is never touched. (They name their fill's match and round by id,
//!    without a foreign key, so they may go before or after those.)
//! 4. **Avoids** past their `expires_at` (of every login: avoids belong to no queue; the
//!    snapshot ignores them from the moment they expire, so they go whatever the
//!    horizon).
//! 5. **Rounds** committed before the cutoff that nothing points at any more (no match,
//!    not the queue's `queue_state.last_round_id`). Tables that reference rounds
//!    `ON DELETE CASCADE` follow. The entries a round matched or rejected went in steps 1
//!    and 2: they ended when it committed.
//! 6. **Enqueue buckets** (`call_buckets`, of every login and queue) that have refilled:
//!    untouched for `enqueue_burst / enqueue_rate` seconds of their queue, or of a queue
//!    that is retired or gone. A missing row starts full, so such a row holds nothing;
//!    backends come and go, and their rows would pile up. Not history: the daemon prunes
//!    them on every pass, with a horizon or without ([`QueuePruner::call_buckets_only`]).
//!
//! Never touched: a `queued` entry (whatever its age), anything of a round newer than the
//! cutoff, and the history the next round reads. The snapshot reads, for each pooled
//! player, their last `round.history_matches` matches in the queue (never fewer than the
//! model's `opponent_variation.depth`), however old (`snapshot.rs`). A time horizon alone
//! cannot promise that (a player back after two months has a last match older than any
//! horizon), so a match stays while it is among the last `keep_matches` matches of any
//! of its players in the queue, as `recent_matches` names them (the round's commit
//! writes that row with the match). Keeping it costs at most
//! `keep_matches` matches per player ever seen: bounded by the player base, not by time. Which matches are a player's last
//! only changes by newer matches arriving, so a match found prunable stays prunable, and
//! two pruners (or a pruner and a round) never disagree.
//!
//! Locks: a batch locks only rows older than the cutoff, which no round and no client
//! call touches (those only lock queued rows and write new ones), and skips rows another
//! pruner holds (`SKIP LOCKED`). The one exception is a refilled enqueue bucket: an
//! enqueue on its connection in the moment of the batch waits for the batch's commit,
//! then starts a full bucket (the row it waited for is gone); one that updated the row
//! first makes it recent, and the batch, rechecking the row as it locks it, keeps it.
//! Run on the daemon's pool, every statement is bounded by `daemon.lock_timeout` and
//! `daemon.statement_timeout`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

use super::DbError;

/// What one queue's pruning deletes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub rounds: u64,
    pub matches: u64,
    pub match_players: u64,
    pub entries: u64,
    pub backfill_requests: u64,
    pub avoids: u64,
    pub call_buckets: u64,
    /// Transactions (batches) that deleted something.
    pub batches: u64,
}

impl Pruned {
    pub fn is_empty(&self) -> bool {
        self.rounds
            + self.matches
            + self.match_players
            + self.entries
            + self.backfill_requests
            + self.avoids
            + self.call_buckets
            == 0
    }

    pub fn add(&mut self, other: Pruned) {
        self.rounds += other.rounds;
        self.matches += other.matches;
        self.match_players += other.match_players;
        self.entries += other.entries;
        self.backfill_requests += other.backfill_requests;
        self.avoids += other.avoids;
        self.call_buckets += other.call_buckets;
        self.batches += other.batches;
    }
}

/// One queue's pruning pass, batch by batch: [`QueuePruner::next_batch`] until it
/// returns `None`. Holds the position of each step, so a batch never scans again what
/// an earlier one of the pass kept.
#[derive(Debug, Clone)]
pub struct QueuePruner {
    pub queue: String,
    /// Rows that ended before this are past the horizon.
    pub cutoff: DateTime<Utc>,
    /// Each player's last matches in the queue that stay (the snapshot's history depth).
    pub keep_matches: usize,
    pub batch_size: usize,
    step: Step,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Matches { after: Option<(DateTime<Utc>, i64)> },
    Entries,
    BackfillRequests,
    Avoids,
    Rounds { after: Option<(DateTime<Utc>, i64)> },
    CallBuckets,
    Done,
}

/// `now - horizon`, by the database's clock (`now: None`) or the given time (tests).
pub async fn cutoff(
    db: &PgPool,
    horizon: Duration,
    now: Option<DateTime<Utc>>,
) -> Result<DateTime<Utc>, DbError> {
    Ok(
        sqlx::query_scalar("SELECT coalesce($1, now()) - make_interval(secs => $2)")
            .bind(now)
            .bind(horizon.as_secs_f64())
            .fetch_one(db)
            .await?,
    )
}

/// The queues that have history in the database: published, with a countdown, or with
/// rounds (every queue a daemon ever served is in one of them).
pub async fn queues_with_history(db: &PgPool) -> Result<Vec<String>, DbError> {
    Ok(sqlx::query_scalar(include_str!("sql/retention_queues.sql"))
        .fetch_all(db)
        .await?)
}

impl QueuePruner {
    pub fn new(queue: &str, cutoff: DateTime<Utc>, keep_matches: usize, batch_size: usize) -> Self {
        QueuePruner {
            queue: queue.to_string(),
            cutoff,
            keep_matches,
            batch_size: batch_size.max(1),
            step: Step::Matches { after: None },
        }
    }

    /// A pass that prunes the refilled enqueue buckets only (step 6), for a daemon that
    /// keeps all history (no horizon): those rows are no history, and hold nothing.
    pub fn call_buckets_only(queue: &str, batch_size: usize) -> Self {
        QueuePruner {
            queue: queue.to_string(),
            // Nothing ended before the earliest time: no history goes.
            cutoff: DateTime::<Utc>::MIN_UTC,
            keep_matches: i32::MAX as usize,
            batch_size: batch_size.max(1),
            step: Step::CallBuckets,
        }
    }

    /// Run the next batch on `conn` (inside the caller's transaction). `None`: the pass
    /// is complete. A batch may delete nothing (every candidate it looked at is kept).
    pub async fn next_batch(&mut self, conn: &mut PgConnection) -> Result<Option<Pruned>, DbError> {
        loop {
            match self.step.clone() {
                Step::Matches { after } => match self.match_batch(conn, after).await? {
                    Some((pruned, last)) => {
                        self.step = Step::Matches { after: Some(last) };
                        return Ok(Some(pruned));
                    }
                    None => self.step = Step::Entries,
                },
                Step::Entries => {
                    if let Some(pruned) = self.single_batch(conn, ENTRIES).await? {
                        return Ok(Some(pruned));
                    }
                    self.step = Step::BackfillRequests;
                }
                Step::BackfillRequests => {
                    if let Some(pruned) = self.single_batch(conn, BACKFILL_REQUESTS).await? {
                        return Ok(Some(pruned));
                    }
                    self.step = Step::Avoids;
                }
                Step::Avoids => {
                    if let Some(pruned) = self.single_batch(conn, AVOIDS).await? {
                        return Ok(Some(pruned));
                    }
                    self.step = Step::Rounds { after: None };
                }
                Step::Rounds { after } => match self.round_batch(conn, after).await? {
                    Some((pruned, last)) => {
                        self.step = Step::Rounds { after: Some(last) };
                        return Ok(Some(pruned));
                    }
                    None => self.step = Step::CallBuckets,
                },
                Step::CallBuckets => {
                    if let Some(pruned) = self.single_batch(conn, CALL_BUCKETS).await? {
                        return Ok(Some(pruned));
                    }
                    self.step = Step::Done;
                }
                Step::Done => return Ok(None),
            }
        }
    }

    /// Step 1. `None` when no old match is left after `after`.
    async fn match_batch(
        &self,
        conn: &mut PgConnection,
        after: Option<(DateTime<Utc>, i64)>,
    ) -> Result<Option<(Pruned, (DateTime<Utc>, i64))>, DbError> {
        let candidates = self
            .candidates(
                conn,
                include_str!("sql/retention_match_candidates.sql"),
                after,
                Some(self.keep_matches as i32),
            )
            .await?;
        let Some((ids, next)) = unkept(&candidates) else {
            return Ok(None);
        };
        let mut pruned = Pruned::default();
        if !ids.is_empty() {
            // Children first: match_players (-> matches, entries), then the entries they
            // named (a queued one stays: it was written around the daemon), then the
            // matches.
            // An answer a client's open transaction holds stays for a later batch.
            sqlx::query(include_str!("sql/retention_match_answers.sql"))
                .bind(&ids)
                .execute(&mut *conn)
                .await?;
            let entries: Vec<i64> = sqlx::query_scalar(
                "DELETE FROM match_players WHERE match_id = ANY($1) RETURNING entry_id",
            )
            .bind(&ids)
            .fetch_all(&mut *conn)
            .await?;
            pruned.match_players = entries.len() as u64;
            pruned.entries = sqlx::query(
                "DELETE FROM queue_entries WHERE entry_id = ANY($1) AND status <> 'queued'",
            )
            .bind(&entries)
            .execute(&mut *conn)
            .await?
            .rows_affected();
            pruned.matches = sqlx::query("DELETE FROM matches WHERE match_id = ANY($1)")
                .bind(&ids)
                .execute(&mut *conn)
                .await?
                .rows_affected();
            pruned.batches = 1;
        }
        Ok(Some((pruned, next)))
    }

    /// Step 5. `None` when no old round is left after `after`.
    async fn round_batch(
        &self,
        conn: &mut PgConnection,
        after: Option<(DateTime<Utc>, i64)>,
    ) -> Result<Option<(Pruned, (DateTime<Utc>, i64))>, DbError> {
        let candidates = self
            .candidates(
                conn,
                include_str!("sql/retention_round_candidates.sql"),
                after,
                None,
            )
            .await?;
        let Some((ids, next)) = unkept(&candidates) else {
            return Ok(None);
        };
        let mut pruned = Pruned::default();
        if !ids.is_empty() {
            pruned.rounds = sqlx::query("DELETE FROM rounds WHERE round_id = ANY($1)")
                .bind(&ids)
                .execute(&mut *conn)
                .await?
                .rows_affected();
            pruned.batches = 1;
        }
        Ok(Some((pruned, next)))
    }

    /// The keyset batch of `sql` after `after` ($1 the queue, $2 the cutoff, $3 and $4
    /// the keyset, $5 the batch size, $6 `keep` when given), oldest first.
    async fn candidates(
        &self,
        conn: &mut PgConnection,
        sql: &'static str,
        after: Option<(DateTime<Utc>, i64)>,
        keep: Option<i32>,
    ) -> Result<Vec<Candidate>, DbError> {
        let (after_at, after_id) = after.unzip();
        let query = sqlx::query_as(sql)
            .bind(&self.queue)
            .bind(self.cutoff)
            .bind(after_at)
            .bind(after_id)
            .bind(self.batch_size as i64);
        let query = match keep {
            Some(keep) => query.bind(keep),
            None => query,
        };
        Ok(query.fetch_all(&mut *conn).await?)
    }

    /// Run one batch of a one-statement step: None when it deleted nothing (the step is
    /// done).
    async fn single_batch(
        &self,
        conn: &mut PgConnection,
        batch: SingleBatch,
    ) -> Result<Option<Pruned>, DbError> {
        let query = if batch.per_queue {
            sqlx::query(batch.sql).bind(&self.queue).bind(self.cutoff)
        } else {
            sqlx::query(batch.sql)
        };
        let deleted = query
            .bind(self.batch_size as i64)
            .execute(&mut *conn)
            .await?
            .rows_affected();
        if deleted == 0 {
            return Ok(None);
        }
        let mut pruned = Pruned {
            batches: 1,
            ..Pruned::default()
        };
        *(batch.count)(&mut pruned) = deleted;
        Ok(Some(pruned))
    }
}

/// Where a keyset batch stops: the last candidate's time and id.
type Keyset = (DateTime<Utc>, i64);

/// One old match or round of a keyset batch (`retention_match_candidates.sql`,
/// `retention_round_candidates.sql`).
#[derive(sqlx::FromRow)]
struct Candidate {
    /// The match or round id.
    id: i64,
    /// Its creation or commit time.
    at: DateTime<Utc>,
    /// Kept: something still points at it.
    kept: bool,
}

/// A keyset batch's candidates, oldest first: the ids to delete and where the next
/// batch starts (None: no candidate left).
fn unkept(candidates: &[Candidate]) -> Option<(Vec<i64>, Keyset)> {
    let last = candidates.last()?;
    let ids = candidates
        .iter()
        .filter(|c| !c.kept)
        .map(|c| c.id)
        .collect();
    Some((ids, (last.at, last.id)))
}

/// A step that deletes with one statement per batch: its DELETE (with `per_queue`, $1
/// the queue, $2 the cutoff and $3 the batch size; else $1 the batch size) and what it
/// counts in [`Pruned`].
#[derive(Clone, Copy)]
struct SingleBatch {
    sql: &'static str,
    per_queue: bool,
    count: fn(&mut Pruned) -> &mut u64,
}

/// Step 2: entries that ended outside a match before the cutoff.
const ENTRIES: SingleBatch = SingleBatch {
    sql: include_str!("sql/retention_entries.sql"),
    per_queue: true,
    count: |p| &mut p.entries,
};

/// Step 3: backfill requests that ended before the cutoff.
const BACKFILL_REQUESTS: SingleBatch = SingleBatch {
    sql: include_str!("sql/retention_backfill_requests.sql"),
    per_queue: true,
    count: |p| &mut p.backfill_requests,
};

/// Step 4: expired avoids.
const AVOIDS: SingleBatch = SingleBatch {
    sql: include_str!("sql/retention_avoids.sql"),
    per_queue: false,
    count: |p| &mut p.avoids,
};

/// Step 6: enqueue buckets that have refilled (or whose queue is retired or gone).
const CALL_BUCKETS: SingleBatch = SingleBatch {
    sql: include_str!("sql/retention_call_buckets.sql"),
    per_queue: false,
    count: |p| &mut p.call_buckets,
};

/// Prune one queue completely: every batch its own transaction, a short pause between
/// batches (other sessions get the server between them). `keep_going` is asked before
/// each batch (the daemon stops when it loses the lease or shuts down). A batch not
/// answered within `batch_limit` (a cut route: see [`super::answered_within`]) ends the
/// pass with [`DbError::Unanswered`]; the server rolls it back, the batches before it
/// stay done.
pub async fn prune_queue<F: Future<Output = bool>>(
    db: &PgPool,
    pruner: &mut QueuePruner,
    pause: Duration,
    batch_limit: Duration,
    mut keep_going: impl FnMut() -> F,
) -> Result<Pruned, DbError> {
    let mut total = Pruned::default();
    loop {
        if !keep_going().await {
            return Ok(total);
        }
        let batch = super::answered_within(batch_limit, async {
            let mut tx = db.begin().await?;
            let pruned = pruner.next_batch(&mut tx).await?;
            tx.commit().await?;
            Ok::<_, DbError>(pruned)
        })
        .await?;
        let Some(pruned) = batch else {
            return Ok(total);
        };
        total.add(pruned);
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
}

/// What [`prune_queue`] would delete now, found by doing it inside one transaction that
/// is rolled back: exactly the same batches, nothing changed. Row locks on the old rows
/// last until the end (no round and no client call wants those rows; another pruner
/// skips them), but for refilled enqueue buckets: an enqueue on such a bucket's
/// connection meanwhile waits for the end.
pub async fn dry_run_queue(db: &PgPool, pruner: &mut QueuePruner) -> Result<Pruned, DbError> {
    let mut tx = db.begin().await?;
    let mut total = Pruned::default();
    while let Some(pruned) = pruner.next_batch(&mut tx).await? {
        total.add(pruned);
    }
    tx.rollback().await?;
    Ok(total)
}
