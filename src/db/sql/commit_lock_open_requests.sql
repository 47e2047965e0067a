-- Lock the backfill requests the round fills that are still open and unexpired. SKIP
-- LOCKED: a request its client is cancelling right now is not filled.
-- $1 = the fills' request ids.
SELECT request_id FROM backfill_requests
 WHERE request_id = ANY($1) AND status = 'open' AND expires_at > now()
 ORDER BY request_id
 FOR UPDATE SKIP LOCKED
