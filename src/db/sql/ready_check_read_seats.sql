-- The players of the locked matches with their committed answers.
-- $1 = match ids.
SELECT mp.match_id, mp.entry_id, e.owner, mp.player_id, a.answer, e.party_key,
       extract(epoch FROM a.answered_at - m.created_at)::float8 AS accept_secs
  FROM match_players mp
  JOIN matches m ON m.match_id = mp.match_id
  JOIN queue_entries e ON e.entry_id = mp.entry_id
  -- The committed answers, held until COMMIT so none changes under the verdict.
  -- A row a client's open transaction holds (an answer changing) is skipped,
  -- never waited for: no answer yet, and silence at answer_by.
  LEFT JOIN LATERAL (
       SELECT x.answer, x.answered_at FROM ready_answers x
        WHERE x.match_id = mp.match_id AND x.entry_id = mp.entry_id
          FOR SHARE SKIP LOCKED) a ON true
 WHERE mp.match_id = ANY($1)
 ORDER BY mp.match_id, mp.player_id
