-- The servers of these cancelled matches are ready again (their last announcement kept).
-- $1 = match ids.
WITH freed AS (
    SELECT owner, server_id, match_id FROM servers
     WHERE match_id = ANY($1) FOR UPDATE)
UPDATE servers s
   SET status = 'ready', match_id = NULL, allocated_at = NULL, ready_since = now()
  FROM freed f
 WHERE s.owner = f.owner AND s.server_id = f.server_id
RETURNING f.owner, f.server_id, f.match_id
