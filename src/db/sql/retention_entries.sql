-- One batch ($3 rows at most) of the entries of queue $1 that ended outside a match
-- before the cutoff $2.
DELETE FROM queue_entries WHERE entry_id IN (
    -- Index queue_entries_ended_outside_matches: never a queued row, never a matched
    -- one (those go with their match).
    SELECT e.entry_id FROM queue_entries e
     WHERE e.queue = $1 AND e.status NOT IN ('queued', 'matched')
       AND e.updated_at < $2
       -- Rejected in a round newer than the cutoff: that round's.
       AND NOT EXISTS (SELECT 1 FROM rounds r
                        WHERE r.round_id = e.round_id AND r.committed_at >= $2)
       -- A match player naming an entry without a match was written around the daemon;
       -- the entry stays rather than the batch failing.
       AND NOT EXISTS (SELECT 1 FROM match_players mp
                        WHERE mp.entry_id = e.entry_id)
     ORDER BY e.updated_at, e.entry_id
     LIMIT $3
     -- SKIP LOCKED: a row another pruner (or a client) holds waits for a later batch.
     FOR UPDATE SKIP LOCKED)
