-- 0023: an entry's match_id and round_id are copies the daemon writes, not foreign keys.
--
-- The link from a matched entry to its match is match_players (entry_id UNIQUE, foreign
-- keys to both queue_entries and matches), written in the same statement as the entry's
-- move to 'matched'. queue_entries.match_id / round_id repeat it for the client's status
-- view, explain and the ops views. As foreign keys they cost every matched row two more
-- key checks and, with retention's two indexes on them (0012), two more index entries: at
-- 10,000 players about 100 ms of a 560 ms round commit (`matchmaker bench-db`), work the
-- round did not do before the client contract. Only the daemon writes these columns (the
-- client role cannot write the table), and `matchmaker soak`'s audit holds every matched
-- entry to its match_players row (same match) after every fault.
--
-- Retention (src/db/retention.rs) now finds a match's entries through match_players, and
-- prunes the entries of other queues withdrawn for it by their own age, like cancelled,
-- expired and rejected ones: every ended entry that is not matched. That needs one index
-- in place of the three: the one below.
--
-- On a large existing history, build the new index beforehand without blocking enqueues
-- (the migration then finds it and skips it), as deploy/README.md says:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS queue_entries_ended_outside_matches
--       ON queue_entries (queue, updated_at, entry_id)
--       WHERE status NOT IN ('queued', 'matched');

ALTER TABLE queue_entries
    DROP CONSTRAINT queue_entries_match_fk,
    DROP CONSTRAINT queue_entries_round_fk;

-- Entries that ended outside a match (cancelled, expired, rejected, withdrawn), by the
-- time they ended, per queue: retention's step 2. Never a queued or a matched row, so the
-- round's commit adds no key here for the players it matches.
CREATE INDEX IF NOT EXISTS queue_entries_ended_outside_matches
    ON queue_entries (queue, updated_at, entry_id)
    WHERE status NOT IN ('queued', 'matched');

DROP INDEX queue_entries_by_match;
DROP INDEX queue_entries_by_round;
DROP INDEX queue_entries_ended_unmatched;

COMMENT ON COLUMN queue_entries.match_id IS
    'matched: the match (as match_players says); withdrawn: the match in another queue that '
    'won. A copy the daemon writes, without a foreign key (0023)';
COMMENT ON COLUMN queue_entries.round_id IS
    'matched or rejected: the round that did it. A copy the daemon writes, without a '
    'foreign key (0023)';
