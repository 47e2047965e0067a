-- The answers stay with the ready matches' players.
-- $1 = match ids.
UPDATE match_players mp SET answer = a.answer, answered_at = a.answered_at
  FROM ready_answers a
 WHERE mp.match_id = ANY($1) AND a.match_id = mp.match_id
   AND a.entry_id = mp.entry_id
