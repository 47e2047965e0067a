-- Fills of running sessions name the session's server: the requesting login's server
-- whose id is the session id, or that hosts the match whose id is the session id.
-- $1 = the fills' match ids.
UPDATE matches m
   SET server_owner = s.owner, server_id = s.server_id,
       server_address = s.address, region = s.region
  FROM backfill_requests b
 CROSS JOIN LATERAL (
       SELECT x.owner, x.server_id, x.address, x.region FROM servers x
        WHERE x.owner = b.owner
          AND (x.server_id = b.session_id OR x.match_id::text = b.session_id)
        ORDER BY x.server_id = b.session_id DESC
        LIMIT 1) s
 WHERE m.match_id = ANY($1) AND b.request_id = m.backfill_request_id
