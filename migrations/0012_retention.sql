-- Bounded history: the daemon (and `matchmaker prune`) deletes rounds, matches, match
-- players and ended entries older than the configured retention horizon, in small
-- batches of short transactions (src/db/retention.rs). These indexes keep each batch an
-- index range scan, and every foreign-key check its delete triggers an index lookup,
-- however long the history is.
--
-- On a large existing history, build them beforehand without blocking enqueues (the
-- migration then finds them and skips them): CREATE INDEX CONCURRENTLY IF NOT EXISTS ...
-- with the same definitions, one statement at a time (deploy/README.md).

-- The next old matches of a queue, oldest first, from where the last batch stopped.
CREATE INDEX IF NOT EXISTS matches_by_queue_age ON matches (queue, created_at, match_id);

-- The next old rounds of a queue, oldest first.
CREATE INDEX IF NOT EXISTS rounds_by_queue_age ON rounds (queue, committed_at, round_id);

-- The entries of a match (matched in its queue, withdrawn from other queues): deleted
-- with it. Also the foreign-key check of every deleted match, which would otherwise scan
-- all of queue_entries once per match.
CREATE INDEX IF NOT EXISTS queue_entries_by_match ON queue_entries (match_id)
    WHERE match_id IS NOT NULL;

-- The foreign-key check of every deleted round (entries rejected in it, matched in it).
CREATE INDEX IF NOT EXISTS queue_entries_by_round ON queue_entries (round_id)
    WHERE round_id IS NOT NULL;

-- Entries that ended without a match (cancelled, expired, rejected), by the time they
-- ended, per queue. Queued rows are never in it: pruning never touches a waiting player.
CREATE INDEX IF NOT EXISTS queue_entries_ended_unmatched
    ON queue_entries (queue, updated_at, entry_id)
    WHERE status <> 'queued' AND match_id IS NULL;

-- The daemon prunes; operators only read. (Tables added later by other migrations that
-- reference rounds ON DELETE CASCADE are cleaned by the cascade, which runs with the
-- privileges of the table's owner.)
GRANT DELETE ON queue_entries, rounds, matches, match_players TO matchmaker_daemon;

COMMENT ON TABLE queue_entries IS
    'One row per player per enqueue, written by the client functions (enqueue, '
    'enqueue_party); the daemon moves rows out of ''queued'' (matched, rejected, expired, '
    'withdrawn; cancel() cancels), and deletes rows that ended before the retention horizon '
    '([retention] horizon; never a queued row).';
