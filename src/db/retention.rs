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
    Ok(sqlx::query_scalar(
        "SELECT queue FROM queues
         UNION SELECT queue FROM queue_state
         UNION SELECT DISTINCT queue FROM rounds
         ORDER BY 1",
    )
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
                    let pruned = self.entry_batch(conn).await?;
                    if pruned.entries > 0 {
                        return Ok(Some(pruned));
                    }
                    self.step = Step::BackfillRequests;
                }
                Step::BackfillRequests => {
                    let pruned = self.backfill_batch(conn).await?;
                    if pruned.backfill_requests > 0 {
                        return Ok(Some(pruned));
                    }
                    self.step = Step::Avoids;
                }
                Step::Avoids => {
                    let pruned = self.avoid_batch(conn).await?;
                    if pruned.avoids > 0 {
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
                    let pruned = self.call_bucket_batch(conn).await?;
                    if pruned.call_buckets > 0 {
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
        let (after_at, after_id) = after.unzip();
        let candidates: Vec<(i64, DateTime<Utc>, bool)> = sqlx::query_as(
            "WITH candidate AS (
                 -- The queue's next old matches, oldest first, from where the last batch
                 -- stopped (index matches_by_queue_age). SKIP LOCKED: another pruner's.
                 SELECT m.match_id, m.created_at FROM matches m
                  WHERE m.queue = $1 AND m.created_at < $2
                    AND ($3::timestamptz IS NULL OR (m.created_at, m.match_id) > ($3, $4))
                  ORDER BY m.created_at, m.match_id
                  LIMIT $5
                  FOR UPDATE SKIP LOCKED)
             SELECT c.match_id, c.created_at,
                    -- Kept: it is among the last $6 matches of one of its players in
                    -- the queue (recent_matches, the history the snapshot reads).
                    EXISTS (SELECT 1 FROM match_players mp
                              JOIN recent_matches r
                                ON r.queue = mp.queue AND r.player_id = mp.player_id
                             WHERE mp.match_id = c.match_id
                               AND c.match_id = ANY (
                                   r.match_ids[greatest(cardinality(r.match_ids) - $6 + 1, 1):]))
                    AS kept
               FROM candidate c
              ORDER BY c.created_at, c.match_id",
        )
        .bind(&self.queue)
        .bind(self.cutoff)
        .bind(after_at)
        .bind(after_id)
        .bind(self.batch_size as i64)
        .bind(self.keep_matches as i32)
        .fetch_all(&mut *conn)
        .await?;
        let Some(&(last_id, last_at, _)) = candidates.last() else {
            return Ok(None);
        };
        let ids: Vec<i64> = candidates
            .iter()
            .filter(|(_, _, kept)| !kept)
            .map(|(id, _, _)| *id)
            .collect();
        let mut pruned = Pruned::default();
        if !ids.is_empty() {
            // Children first: match_players (-> matches, entries), then the entries they
            // named (a queued one stays: it was written around the daemon), then the
            // matches.
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
        Ok(Some((pruned, (last_at, last_id))))
    }

    /// Step 2: one batch of entries that ended outside a match before the cutoff.
    async fn entry_batch(&self, conn: &mut PgConnection) -> Result<Pruned, DbError> {
        let entries = sqlx::query(
            "DELETE FROM queue_entries WHERE entry_id IN (
                 -- Index queue_entries_ended_outside_matches: never a queued row, never
                 -- a matched one (those go with their match, step 1).
                 SELECT e.entry_id FROM queue_entries e
                  WHERE e.queue = $1 AND e.status NOT IN ('queued', 'matched')
                    AND e.updated_at < $2
                    -- Rejected in a round newer than the cutoff: that round's.
                    AND NOT EXISTS (SELECT 1 FROM rounds r
                                     WHERE r.round_id = e.round_id AND r.committed_at >= $2)
                    -- A match player naming an entry without a match was written around
                    -- the daemon; the entry stays rather than the batch failing.
                    AND NOT EXISTS (SELECT 1 FROM match_players mp
                                     WHERE mp.entry_id = e.entry_id)
                  ORDER BY e.updated_at, e.entry_id
                  LIMIT $3
                  FOR UPDATE SKIP LOCKED)",
        )
        .bind(&self.queue)
        .bind(self.cutoff)
        .bind(self.batch_size as i64)
        .execute(&mut *conn)
        .await?
        .rows_affected();
        Ok(Pruned {
            entries,
            batches: u64::from(entries > 0),
            ..Pruned::default()
        })
    }

    /// Step 3: one batch of backfill requests that ended before the cutoff.
    async fn backfill_batch(&self, conn: &mut PgConnection) -> Result<Pruned, DbError> {
        let deleted = sqlx::query(
            "DELETE FROM backfill_requests WHERE request_id IN (
                 SELECT b.request_id FROM backfill_requests b
                  WHERE b.queue = $1 AND b.status <> 'open' AND b.updated_at < $2
                  ORDER BY b.updated_at, b.request_id
                  LIMIT $3
                  FOR UPDATE SKIP LOCKED)",
        )
        .bind(&self.queue)
        .bind(self.cutoff)
        .bind(self.batch_size as i64)
        .execute(&mut *conn)
        .await?
        .rows_affected();
        Ok(Pruned {
            backfill_requests: deleted,
            batches: u64::from(deleted > 0),
            ..Pruned::default()
        })
    }

    /// Step 4: one batch of expired avoids.
    async fn avoid_batch(&self, conn: &mut PgConnection) -> Result<Pruned, DbError> {
        let deleted = sqlx::query(
            "DELETE FROM avoids WHERE (owner, player_id, avoided_player_id) IN (
                 SELECT a.owner, a.player_id, a.avoided_player_id FROM avoids a
                  WHERE a.expires_at <= now()
                  ORDER BY a.expires_at
                  LIMIT $1
                  FOR UPDATE SKIP LOCKED)",
        )
        .bind(self.batch_size as i64)
        .execute(&mut *conn)
        .await?
        .rows_affected();
        Ok(Pruned {
            avoids: deleted,
            batches: u64::from(deleted > 0),
            ..Pruned::default()
        })
    }

    /// Step 6: one batch of enqueue buckets that have refilled (or whose queue is retired
    /// or gone). `at` is the bucket's last take; after `enqueue_burst / enqueue_rate`
    /// seconds it is full whatever it held (it never holds less than nothing).
    async fn call_bucket_batch(&self, conn: &mut PgConnection) -> Result<Pruned, DbError> {
        let deleted = sqlx::query(
            "DELETE FROM call_buckets WHERE (login, pid, queue) IN (
                 SELECT b.login, b.pid, b.queue FROM call_buckets b
                   LEFT JOIN queues q ON q.queue = b.queue AND q.active
                  WHERE q.queue IS NULL
                     OR b.at < now() - make_interval(secs => q.enqueue_burst / q.enqueue_rate)
                  LIMIT $1
                  FOR UPDATE OF b SKIP LOCKED)",
        )
        .bind(self.batch_size as i64)
        .execute(&mut *conn)
        .await?
        .rows_affected();
        Ok(Pruned {
            call_buckets: deleted,
            batches: u64::from(deleted > 0),
            ..Pruned::default()
        })
    }

    /// Step 5. `None` when no old round is left after `after`.
    async fn round_batch(
        &self,
        conn: &mut PgConnection,
        after: Option<(DateTime<Utc>, i64)>,
    ) -> Result<Option<(Pruned, (DateTime<Utc>, i64))>, DbError> {
        let (after_at, after_id) = after.unzip();
        let candidates: Vec<(i64, DateTime<Utc>, bool)> = sqlx::query_as(
            "WITH candidate AS (
                 -- Index rounds_by_queue_age.
                 SELECT r.round_id, r.committed_at FROM rounds r
                  WHERE r.queue = $1 AND r.committed_at < $2
                    AND ($3::timestamptz IS NULL OR (r.committed_at, r.round_id) > ($3, $4))
                  ORDER BY r.committed_at, r.round_id
                  LIMIT $5
                  FOR UPDATE SKIP LOCKED)
             SELECT c.round_id, c.committed_at,
                    -- Kept while anything points at it: a kept match (and so the
                    -- entries matched in it), the countdown's last round.
                    EXISTS (SELECT 1 FROM matches m WHERE m.round_id = c.round_id)
                    OR EXISTS (SELECT 1 FROM queue_state s WHERE s.last_round_id = c.round_id)
                    AS kept
               FROM candidate c
              ORDER BY c.committed_at, c.round_id",
        )
        .bind(&self.queue)
        .bind(self.cutoff)
        .bind(after_at)
        .bind(after_id)
        .bind(self.batch_size as i64)
        .fetch_all(&mut *conn)
        .await?;
        let Some(&(last_id, last_at, _)) = candidates.last() else {
            return Ok(None);
        };
        let ids: Vec<i64> = candidates
            .iter()
            .filter(|(_, _, kept)| !kept)
            .map(|(id, _, _)| *id)
            .collect();
        let mut pruned = Pruned::default();
        if !ids.is_empty() {
            pruned.rounds = sqlx::query("DELETE FROM rounds WHERE round_id = ANY($1)")
                .bind(&ids)
                .execute(&mut *conn)
                .await?
                .rows_affected();
            pruned.batches = 1;
        }
        Ok(Some((pruned, (last_at, last_id))))
    }
}

/// Prune one queue completely: every batch its own transaction, a short pause between
/// batches (other sessions get the server between them). `keep_going` is asked before
/// each batch (the daemon stops when it loses the lease or shuts down).
pub async fn prune_queue<F: Future<Output = bool>>(
    db: &PgPool,
    pruner: &mut QueuePruner,
    pause: Duration,
    mut keep_going: impl FnMut() -> F,
) -> Result<Pruned, DbError> {
    let mut total = Pruned::default();
    loop {
        if !keep_going().await {
            return Ok(total);
        }
        let mut tx = db.begin().await?;
        let Some(pruned) = pruner.next_batch(&mut tx).await? else {
            tx.commit().await?;
            return Ok(total);
        };
        tx.commit().await?;
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
