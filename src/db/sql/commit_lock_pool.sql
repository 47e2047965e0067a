-- Lock the pool's entries still queued and live, each with the match it already has (a row
-- written around the daemon), if any. SKIP LOCKED: a row in a client's call or in another
-- queue's commit is not this round's.
-- $1 = the pool's entry ids.
SELECT e.entry_id, mp.match_id
  FROM queue_entries e
  LEFT JOIN match_players mp ON mp.entry_id = e.entry_id
 WHERE e.entry_id = ANY($1) AND e.status = 'queued' AND e.expires_at > now()
 ORDER BY e.entry_id
 FOR UPDATE OF e SKIP LOCKED
