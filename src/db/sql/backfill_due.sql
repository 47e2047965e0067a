-- Whether an immediate backfill round is due in queue $1: an open, unexpired request
-- that no round has tried yet, or that was tried at least $2 ms ago and players arrived
-- since; and queued players to try it with.
SELECT EXISTS (
       SELECT 1 FROM backfill_requests b
        WHERE b.queue = $1 AND b.status = 'open' AND b.expires_at > now()
          AND (b.attempted_at IS NULL
               OR (b.attempted_at <= now() - make_interval(secs => $2 / 1000.0)
                   AND EXISTS (
                       SELECT 1 FROM queue_entries e
                        WHERE e.queue = $1 AND e.status = 'queued'
                          AND e.enqueued_at > b.attempted_at))))
   AND EXISTS (
       SELECT 1 FROM queue_entries
        WHERE queue = $1 AND status = 'queued' AND expires_at > now())
