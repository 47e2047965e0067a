-- Expire the queued entries of queue $1 whose ticket ran out (no keep_alive within the
-- queue's ticket_ttl), with the reason. SKIP LOCKED: a row a client call or another
-- queue's commit holds right now waits for the next look.
UPDATE queue_entries e
   SET status = 'expired', updated_at = now(),
       reject_reason = format('expired: no keep_alive within the queue''s ticket_ttl '
                              '(ticket ran out at %s)', e.expires_at)
 WHERE e.entry_id IN (
       SELECT entry_id FROM queue_entries
        WHERE queue = $1 AND status = 'queued' AND expires_at <= now()
          FOR UPDATE SKIP LOCKED)
