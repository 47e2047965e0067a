-- Close the open requests of queue $1 past their expiry, with why nothing filled them
-- (the last round's reason). SKIP LOCKED: a request a client or a commit holds right now
-- waits for the next sweep.
UPDATE backfill_requests b
   SET status = 'expired', updated_at = now(),
       reason = 'expired: nothing filled it before expires_at'
                || coalesce(' (last try: ' || b.unfilled_reason || ')',
                            ' (no round tried it: no queued player in time)')
 WHERE b.request_id IN (
       SELECT request_id FROM backfill_requests
        WHERE queue = $1 AND status = 'open' AND expires_at <= now()
          FOR UPDATE SKIP LOCKED)
