-- Pending matches every player accepted: final.
-- $1 = match ids.
UPDATE matches SET status = 'ready', resolved_at = now()
 WHERE match_id = ANY($1) AND status = 'pending'
