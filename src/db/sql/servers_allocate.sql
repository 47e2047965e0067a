-- Allocate each server to its match: the server hosts it, the match names it.
-- $1 = match ids, $2 = the servers' logins, $3 = server ids (one element a match).
WITH a AS (
    SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[])
             AS a(match_id, owner, server_id)),
allocated AS (
    UPDATE servers s
       SET status = 'allocated', match_id = a.match_id, allocated_at = now()
      FROM a
     WHERE s.owner = a.owner AND s.server_id = a.server_id AND s.status = 'ready'
    RETURNING s.owner, s.server_id, s.address, s.ready_since, s.match_id)
UPDATE matches m
   SET server_owner = x.owner, server_id = x.server_id,
       server_address = x.address, server_ready_at = x.ready_since
  FROM allocated x
 WHERE m.match_id = x.match_id
