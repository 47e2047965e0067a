-- The player's last rounds, newest first: the two halves of the player_rounds view, each
-- through its index (queue_entries_player_latest, and the GIN index of left_over).
-- $1 = player id, $2 = how many rounds.
(SELECT r.queue, r.round_id, r.committed_at, r.pool_size, 'matched' AS outcome,
        e.match_id, e.team, NULL::text AS reason
   FROM queue_entries e JOIN rounds r ON r.round_id = e.round_id
  WHERE e.player_id = $1 AND e.status = 'matched')
UNION ALL
(SELECT r.queue, r.round_id, r.committed_at, r.pool_size,
        s.left_over -> $1 ->> 'outcome', NULL, NULL, s.left_over -> $1 ->> 'reason'
   FROM round_snapshots s JOIN rounds r USING (round_id)
  WHERE s.left_over ? $1)
ORDER BY round_id DESC
LIMIT $2
