-- The rounds with a replay record committed in [$1, $2), oldest first.
-- $1 = from, $2 = to, $3 = queue (NULL: every queue).
SELECT r.round_id FROM rounds r JOIN round_snapshots s USING (round_id)
 WHERE r.committed_at >= $1 AND r.committed_at < $2
   AND ($3::text IS NULL OR r.queue = $3)
 ORDER BY r.committed_at, r.round_id
