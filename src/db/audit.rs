//! The client contract's invariants as counts, read after the fact: what fault-injection
//! tests (`tests/it/faults.rs`) and `matchmaker-lab soak` check after crashes, restarts and
//! races. Every count in [`Audit::violations`] must be zero; the rest describe the run.
//!
//! The audit assumes what those runs do: a player id names one wait. A client that
//! re-queues a player after their match under the same id would show up as a player in
//! two matches (their entries' times are on different clocks, so the audit cannot tell a
//! new wait from a double match by time).
//!
//! [`install_lease_log`] adds a trigger that records every change of hands of a lease, so
//! the audit can tell whether a lease was ever taken while it was live (a replica whose
//! clock runs ahead, a renewal race). It changes the schema: only for scratch databases.

use sqlx::PgPool;

use super::DbError;

/// What the run promised the audit: the entries clients were told exist (ids returned by
/// `enqueue` / `enqueue_party`) and the players whose `cancel()` reported entries
/// cancelled.
#[derive(Debug, Clone, Copy, Default)]
pub struct Expected<'a> {
    pub entries: &'a [i64],
    pub cancelled_players: &'a [String],
}

/// Counts over the whole database.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Audit {
    /// Rows in `queue_entries`, and by status.
    pub entries: i64,
    pub queued: i64,
    pub matched: i64,
    pub cancelled: i64,
    pub rejected: i64,
    pub expired: i64,
    pub withdrawn: i64,
    pub declined: i64,
    pub rounds: i64,
    pub matches: i64,
    /// Expected entries checked.
    pub checked: i64,
    /// Matches by ready check state: still pending, cancelled.
    pub pending_matches: i64,
    pub cancelled_matches: i64,

    // ---- violations ----
    /// Expected entries without a row in a known status.
    pub lost: i64,
    /// Players in more than one match (or twice in one), across all queues.
    pub players_in_two_matches: i64,
    /// Matches holding an entry that is not `matched` (cancelled, expired, withdrawn,
    /// rejected, or still queued) or whose entry names another match.
    pub matches_with_closed_entries: i64,
    /// `matched` rows without their `match_players` row.
    pub matched_without_match: i64,
    /// `match_players` rows whose match or entry is gone (they have no foreign
    /// keys: the round writes all three in one statement).
    pub players_without_match_or_entry: i64,
    /// Matches whose team sizes are none of the queue's formats (`queues.formats`: the
    /// full format, and a flexible queue's smaller ones), or whose teams are not
    /// numbered 0, 1, ... in order.
    pub short_matches: i64,
    /// Parties (one `enqueue_party` call) matched in part, or across matches or teams.
    pub split_parties: i64,
    /// Rows that left the queue unmatched without a reason.
    pub rows_without_reason: i64,
    /// Players whose `cancel()` reported entries cancelled, found in a match.
    pub cancelled_then_matched: i64,
    /// Ready checks resolved both ways, or not at all for their players: a cancelled
    /// match that still holds players (match_players rows, or `matched` entries); a
    /// `declined` entry whose match is not cancelled; a ready match with a player who
    /// did not accept.
    pub ready_checks_resolved_wrong: i64,
    /// Leases taken while the previous holder's was live (by the database's clock).
    /// None: no lease log installed.
    pub live_leases_taken: Option<i64>,
}

impl Audit {
    /// The violation counts, named; all must be zero.
    pub fn violations(&self) -> Vec<(&'static str, i64)> {
        vec![
            ("lost", self.lost),
            ("players in two matches", self.players_in_two_matches),
            (
                "matches with cancelled/expired/withdrawn entries",
                self.matches_with_closed_entries,
            ),
            (
                "matched rows without their match",
                self.matched_without_match,
            ),
            (
                "match players without their match or entry",
                self.players_without_match_or_entry,
            ),
            ("matches outside the queue's formats", self.short_matches),
            ("split parties", self.split_parties),
            ("rows without reason", self.rows_without_reason),
            ("cancelled, then matched", self.cancelled_then_matched),
            (
                "ready checks resolved wrong",
                self.ready_checks_resolved_wrong,
            ),
            ("live leases taken", self.live_leases_taken.unwrap_or(0)),
        ]
    }

    /// The sum of the violation counts.
    pub fn violation_count(&self) -> i64 {
        self.violations().iter().map(|(_, n)| n).sum()
    }

    /// The descriptive counts, named.
    pub fn totals(&self) -> Vec<(&'static str, i64)> {
        vec![
            ("rounds", self.rounds),
            ("matches", self.matches),
            ("entries", self.entries),
            ("  queued", self.queued),
            ("  matched", self.matched),
            ("  cancelled", self.cancelled),
            ("  rejected", self.rejected),
            ("  expired", self.expired),
            ("  withdrawn", self.withdrawn),
            ("  declined (ready check)", self.declined),
            ("matches pending their ready check", self.pending_matches),
            (
                "matches cancelled by their ready check",
                self.cancelled_matches,
            ),
            ("entries checked (returned to clients)", self.checked),
        ]
    }
}

impl std::fmt::Display for Audit {
    /// One `name  count` line each: totals, then violations.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (name, n) in self.totals() {
            writeln!(f, "  {name:<50} {n:>8}")?;
        }
        writeln!(f, "  violations (all must be 0):")?;
        for (name, n) in self.violations() {
            let shown = match (name, self.live_leases_taken) {
                ("live leases taken", None) => "n/a".to_string(),
                _ => n.to_string(),
            };
            writeln!(f, "  {name:<50} {shown:>8}")?;
        }
        Ok(())
    }
}

/// Count everything, in one consistent snapshot of the database.
pub async fn audit(db: &PgPool, expected: Expected<'_>) -> Result<Audit, DbError> {
    let mut tx = db.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute(&mut *tx)
        .await?;
    let mut a = Audit::default();

    (
        a.entries,
        a.queued,
        a.matched,
        a.cancelled,
        a.rejected,
        a.expired,
        a.withdrawn,
        a.declined,
    ) = sqlx::query_as(
        "SELECT count(*),
                count(*) FILTER (WHERE status = 'queued'),
                count(*) FILTER (WHERE status = 'matched'),
                count(*) FILTER (WHERE status = 'cancelled'),
                count(*) FILTER (WHERE status = 'rejected'),
                count(*) FILTER (WHERE status = 'expired'),
                count(*) FILTER (WHERE status = 'withdrawn'),
                count(*) FILTER (WHERE status = 'declined')
           FROM queue_entries",
    )
    .fetch_one(&mut *tx)
    .await?;
    (a.rounds, a.matches) =
        sqlx::query_as("SELECT (SELECT count(*) FROM rounds), (SELECT count(*) FROM matches)")
            .fetch_one(&mut *tx)
            .await?;

    a.checked = expected.entries.len() as i64;
    a.lost = sqlx::query_scalar(
        "SELECT count(*) FROM unnest($1::bigint[]) AS x(entry_id)
          WHERE NOT EXISTS (
                SELECT 1 FROM queue_entries e
                 WHERE e.entry_id = x.entry_id
                   AND e.status IN ('queued', 'matched', 'cancelled', 'rejected', 'expired',
                                    'withdrawn', 'declined'))",
    )
    .bind(expected.entries)
    .fetch_one(&mut *tx)
    .await?;

    // A player is a login's player id (two logins may each have an alice).
    a.players_in_two_matches = sqlx::query_scalar(
        "SELECT count(*) FROM (
             SELECT e.owner, mp.player_id
               FROM match_players mp JOIN queue_entries e USING (entry_id)
              GROUP BY 1, 2 HAVING count(*) > 1) x",
    )
    .fetch_one(&mut *tx)
    .await?;

    a.matches_with_closed_entries = sqlx::query_scalar(
        "SELECT count(DISTINCT mp.match_id)
           FROM match_players mp
           LEFT JOIN queue_entries e ON e.entry_id = mp.entry_id
          WHERE e.status IS DISTINCT FROM 'matched'
             OR e.match_id IS DISTINCT FROM mp.match_id",
    )
    .fetch_one(&mut *tx)
    .await?;

    a.matched_without_match = sqlx::query_scalar(
        "SELECT count(*) FROM queue_entries e
          WHERE e.status = 'matched'
            AND NOT EXISTS (SELECT 1 FROM match_players mp
                             WHERE mp.entry_id = e.entry_id AND mp.match_id = e.match_id)",
    )
    .fetch_one(&mut *tx)
    .await?;

    a.players_without_match_or_entry = sqlx::query_scalar(
        "SELECT count(*) FROM match_players mp
          WHERE NOT EXISTS (SELECT 1 FROM matches m WHERE m.match_id = mp.match_id)
             OR NOT EXISTS (SELECT 1 FROM queue_entries e WHERE e.entry_id = mp.entry_id)",
    )
    .fetch_one(&mut *tx)
    .await?;

    // The formats as the queue is published now (the fault runs never change them). A
    // match's format in the published words: its team sizes, largest first, joined by
    // 'v' (a 4v5 reads '5v4'); a match without players reads '' and matches no format.
    // A backfill's match holds the players it added to a session: exactly the request's
    // open slots, team by team.
    a.short_matches = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM (
             SELECT m.match_id
               FROM matches m
               JOIN queues q ON q.queue = m.queue
               LEFT JOIN LATERAL (
                     SELECT mp.team, count(*) AS size FROM match_players mp
                      WHERE mp.match_id = m.match_id
                      GROUP BY mp.team) t ON true
              -- A cancelled match holds no players any more (its ready check failed).
              WHERE m.session_id IS NULL AND m.status <> 'cancelled'
              GROUP BY m.match_id, q.formats
             HAVING coalesce(string_agg(t.size::text, 'v' ORDER BY t.size DESC), '')
                        <> ALL (q.formats)
                 -- teams 0..k-1: a gap would show a team missing to a client
                 OR min(t.team) IS DISTINCT FROM 0
                 OR max(t.team) IS DISTINCT FROM count(t.team) - 1) x)
           + (SELECT count(*)
                FROM matches m
                LEFT JOIN backfill_requests b ON b.request_id = m.backfill_request_id
               WHERE m.session_id IS NOT NULL
                 AND (b.request_id IS NULL
                      OR EXISTS (SELECT 1 FROM generate_subscripts(b.open_slots, 1) AS i
                                  WHERE b.open_slots[i] <> (
                                        SELECT count(*) FROM match_players mp
                                         WHERE mp.match_id = m.match_id AND mp.team = i - 1))
                      OR EXISTS (SELECT 1 FROM match_players mp
                                  WHERE mp.match_id = m.match_id
                                    AND mp.team >= cardinality(b.open_slots))))",
    )
    .fetch_one(&mut *tx)
    .await?;

    // A party is matched whole, on one team of one match, or not at all. (A party with
    // members still queued beside closed ones is a moment's state the daemon's next look
    // closes; not counted.)
    a.split_parties = sqlx::query_scalar(
        "SELECT count(*) FROM (
             SELECT party_key
               FROM queue_entries
              WHERE party_key IS NOT NULL
              GROUP BY party_key
             HAVING count(*) FILTER (WHERE status = 'matched') > 0
                AND (count(*) FILTER (WHERE status = 'matched') <> max(party_size)
                     OR count(*) <> max(party_size)
                     OR count(DISTINCT match_id) FILTER (WHERE status = 'matched') > 1
                     OR count(DISTINCT team) FILTER (WHERE status = 'matched') > 1)) x",
    )
    .fetch_one(&mut *tx)
    .await?;

    a.rows_without_reason = sqlx::query_scalar(
        "SELECT count(*) FROM queue_entries
          WHERE status NOT IN ('queued', 'matched')
            AND coalesce(btrim(reject_reason), '') = ''",
    )
    .fetch_one(&mut *tx)
    .await?;

    a.cancelled_then_matched = sqlx::query_scalar(
        "SELECT count(DISTINCT mp.player_id) FROM match_players mp
          WHERE mp.player_id = ANY($1)",
    )
    .bind(expected.cancelled_players)
    .fetch_one(&mut *tx)
    .await?;

    (a.pending_matches, a.cancelled_matches) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status = 'pending'),
                count(*) FILTER (WHERE status = 'cancelled')
           FROM matches",
    )
    .fetch_one(&mut *tx)
    .await?;
    a.ready_checks_resolved_wrong = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM matches m
                  WHERE m.status = 'cancelled'
                    AND (EXISTS (SELECT 1 FROM match_players mp WHERE mp.match_id = m.match_id)
                         OR EXISTS (SELECT 1 FROM queue_entries e
                                     WHERE e.match_id = m.match_id AND e.status = 'matched')))
              + (SELECT count(*) FROM queue_entries e
                  WHERE e.status = 'declined'
                    AND EXISTS (SELECT 1 FROM matches m
                                 WHERE m.match_id = e.match_id AND m.status <> 'cancelled'))
              + (SELECT count(*) FROM matches m
                  WHERE m.status = 'ready' AND m.answer_by IS NOT NULL
                    AND EXISTS (SELECT 1 FROM match_players mp
                                 WHERE mp.match_id = m.match_id
                                   AND mp.answer IS DISTINCT FROM 'accepted'))",
    )
    .fetch_one(&mut *tx)
    .await?;

    let has_log: bool = sqlx::query_scalar("SELECT to_regclass('audit_lease_log') IS NOT NULL")
        .fetch_one(&mut *tx)
        .await?;
    if has_log {
        a.live_leases_taken = Some(
            sqlx::query_scalar(
                "SELECT count(*) FROM audit_lease_log
                  WHERE old_term IS NOT NULL AND old_expires_at > new_acquired_at",
            )
            .fetch_one(&mut *tx)
            .await?,
        );
    }
    tx.commit().await?;
    Ok(a)
}

/// One change of hands of a lease, from the lease log.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct LeaseChange {
    pub queue: String,
    pub old_holder: Option<String>,
    pub old_term: Option<i64>,
    pub old_expires_at: Option<chrono::DateTime<chrono::Utc>>,
    pub new_holder: String,
    pub new_term: i64,
    /// By the database's clock (the lease queries' `now()`).
    pub new_acquired_at: chrono::DateTime<chrono::Utc>,
}

impl LeaseChange {
    /// The new holder took the lease before the old one expired.
    pub fn took_live_lease(&self) -> bool {
        self.old_expires_at
            .is_some_and(|expiry| expiry > self.new_acquired_at)
    }
}

/// Record every change of hands of a lease (and first acquisition) in `audit_lease_log`,
/// with the previous holder's expiry. Idempotent. Scratch databases only: it adds a table
/// and a trigger on `leases`.
pub async fn install_lease_log(db: &PgPool) -> Result<(), DbError> {
    let mut tx = db.begin().await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS audit_lease_log (
             logged_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
             queue           text NOT NULL,
             old_holder      text NULL,
             old_term        bigint NULL,
             old_expires_at  timestamptz NULL,
             new_holder      text NOT NULL,
             new_term        bigint NOT NULL,
             new_acquired_at timestamptz NOT NULL,
             new_expires_at  timestamptz NOT NULL)",
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        // SECURITY DEFINER: the daemon's role may not write the log table itself.
        "CREATE OR REPLACE FUNCTION audit_log_lease() RETURNS trigger
         LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
         BEGIN
             IF TG_OP = 'INSERT' THEN
                 INSERT INTO audit_lease_log (queue, new_holder, new_term, new_acquired_at,
                                              new_expires_at)
                 VALUES (NEW.queue, NEW.holder, NEW.term, NEW.acquired_at, NEW.expires_at);
             ELSIF NEW.term IS DISTINCT FROM OLD.term THEN
                 INSERT INTO audit_lease_log (queue, old_holder, old_term, old_expires_at,
                                              new_holder, new_term, new_acquired_at,
                                              new_expires_at)
                 VALUES (NEW.queue, OLD.holder, OLD.term, OLD.expires_at, NEW.holder,
                         NEW.term, NEW.acquired_at, NEW.expires_at);
             END IF;
             RETURN NULL;
         END
         $$",
    )
    .execute(&mut *tx)
    .await?;
    // DROP + CREATE rather than CREATE OR REPLACE TRIGGER (PostgreSQL 14+).
    sqlx::query("DROP TRIGGER IF EXISTS audit_lease_log ON leases")
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "CREATE TRIGGER audit_lease_log AFTER INSERT OR UPDATE ON leases
         FOR EACH ROW EXECUTE FUNCTION audit_log_lease()",
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The lease log, oldest first (empty without [`install_lease_log`]).
pub async fn lease_changes(db: &PgPool) -> Result<Vec<LeaseChange>, DbError> {
    let has_log: bool = sqlx::query_scalar("SELECT to_regclass('audit_lease_log') IS NOT NULL")
        .fetch_one(db)
        .await?;
    if !has_log {
        return Ok(Vec::new());
    }
    Ok(sqlx::query_as(
        "SELECT queue, old_holder, old_term, old_expires_at, new_holder, new_term,
                new_acquired_at
           FROM audit_lease_log ORDER BY logged_at, new_term",
    )
    .fetch_all(db)
    .await?)
}
