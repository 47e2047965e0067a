-- Link the fills to their sessions and close their backfill requests as filled (a request
-- no longer open is left alone).
-- $1 = the fills' match ids, $2 = their request ids, $3 = their session ids,
-- $4 = round id, $5 = committed_at.
WITH f AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[])
             AS u(match_id, request_id, session_id)),
linked AS (
    UPDATE matches m SET session_id = f.session_id,
                         backfill_request_id = f.request_id
      FROM f WHERE m.match_id = f.match_id)
UPDATE backfill_requests b
   SET status = 'filled', match_id = f.match_id, round_id = $4,
       attempted_at = now(), updated_at = $5, unfilled_reason = NULL,
       reason = format('filled by round %s (match %s)', $4, f.match_id)
  FROM f
 WHERE b.request_id = f.request_id AND b.status = 'open'
