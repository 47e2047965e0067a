-- The next batch of old matches of queue $1 (created before the cutoff $2), $5 at most,
-- oldest first from where the last batch stopped (keyset ($3, $4); NULL: the start),
-- each with whether it is kept.
WITH candidate AS (
    -- Index matches_by_queue_age. SKIP LOCKED: another pruner's.
    SELECT m.match_id, m.created_at FROM matches m
     WHERE m.queue = $1 AND m.created_at < $2
       AND ($3::timestamptz IS NULL OR (m.created_at, m.match_id) > ($3, $4))
     ORDER BY m.created_at, m.match_id
     LIMIT $5
     FOR UPDATE SKIP LOCKED)
SELECT c.match_id AS id, c.created_at AS at,
       -- Kept: it is among the last $6 matches of one of its players in the queue
       -- (recent_matches, the history the snapshot reads).
       EXISTS (SELECT 1 FROM match_players mp
                 JOIN recent_matches r
                   ON r.queue = mp.queue AND r.player_id = mp.player_id
                WHERE mp.match_id = c.match_id
                  AND c.match_id = ANY (
                      r.match_ids[greatest(cardinality(r.match_ids) - $6 + 1, 1):]))
       AS kept
  FROM candidate c
 ORDER BY c.created_at, c.match_id
