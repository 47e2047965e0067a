-- The ready matches enter their players' recent_matches, as the round's commit writes it
-- (commit_insert_matches).
-- $1 = match ids, $2 = the history depth (matches kept per player).
INSERT INTO recent_matches AS r (queue, owner, player_id, match_ids)
SELECT mp.queue, e.owner, mp.player_id, ARRAY[mp.match_id]
  FROM match_players mp JOIN queue_entries e USING (entry_id)
 WHERE mp.match_id = ANY($1) AND $2 > 0
 ORDER BY mp.queue, e.owner, mp.player_id
    ON CONFLICT (queue, owner, player_id) DO UPDATE
       SET match_ids = (r.match_ids || EXCLUDED.match_ids)
                       [greatest(cardinality(r.match_ids) + 2 - $2, 1):]
