-- The next batch of old rounds of queue $1 (committed before the cutoff $2), $5 at
-- most, oldest first from where the last batch stopped (keyset ($3, $4); NULL: the
-- start), each with whether it is kept.
WITH candidate AS (
    -- Index rounds_by_queue_age. SKIP LOCKED: another pruner's.
    SELECT r.round_id, r.committed_at FROM rounds r
     WHERE r.queue = $1 AND r.committed_at < $2
       AND ($3::timestamptz IS NULL OR (r.committed_at, r.round_id) > ($3, $4))
     ORDER BY r.committed_at, r.round_id
     LIMIT $5
     FOR UPDATE SKIP LOCKED)
SELECT c.round_id AS id, c.committed_at AS at,
       -- Kept while anything points at it: a kept match (and so the entries matched in
       -- it), the countdown's last round.
       EXISTS (SELECT 1 FROM matches m WHERE m.round_id = c.round_id)
       OR EXISTS (SELECT 1 FROM queue_state s WHERE s.last_round_id = c.round_id)
       AS kept
  FROM candidate c
 ORDER BY c.committed_at, c.round_id
