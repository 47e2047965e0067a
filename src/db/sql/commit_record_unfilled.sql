-- Record why each backfill request the round tried was not filled (open requests only).
-- $1 = request ids, $2 = reasons.
UPDATE backfill_requests b
   -- the database's clock, as the worker's retry look-up reads it
   SET attempted_at = now(), unfilled_reason = u.reason
  FROM unnest($1::bigint[], $2::text[]) AS u(request_id, reason)
 WHERE b.request_id = u.request_id AND b.status = 'open'
