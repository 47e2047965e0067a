-- Delete the answers of the matches this look resolved, and any answer older than an
-- hour, of matches no longer pending. SKIP LOCKED: a row a client's open transaction
-- holds waits for a later look (or retention).
-- $1 = the match ids this look resolved.
DELETE FROM ready_answers
 WHERE (match_id, entry_id) IN (
       SELECT a.match_id, a.entry_id FROM ready_answers a
         JOIN matches m ON m.match_id = a.match_id
        WHERE (a.match_id = ANY($1) OR a.answered_at < now() - interval '1 hour')
          AND m.status <> 'pending'
          FOR UPDATE OF a SKIP LOCKED)
