-- Queue the entries of a cancelled match's players again, on the same row, with a fresh
-- ticket; a player queued again by another call meanwhile keeps that row, and this one is
-- cancelled.
-- $1 = entry ids, $2 = reasons.
WITH back AS (
    UPDATE queue_entries e
       SET status = 'queued', match_id = NULL, round_id = NULL, team = NULL,
           role = NULL, reject_reason = NULL, left_over = 'ready_check',
           left_over_reason = u.reason, expires_at = now() + q.ticket_ttl,
           updated_at = now()
      FROM unnest($1::bigint[], $2::text[]) AS u(entry_id, reason), queues q
     WHERE e.entry_id = u.entry_id AND e.status = 'matched' AND q.queue = e.queue
       AND NOT EXISTS (SELECT 1 FROM queue_entries o
                        WHERE o.queue = e.queue AND o.owner = e.owner
                          AND o.player_id = e.player_id AND o.status = 'queued')
 RETURNING e.entry_id)
UPDATE queue_entries e
   SET status = 'cancelled', updated_at = now(),
       reject_reason = 'match ' || e.match_id || ' was cancelled; the player was '
                       || 'queued again by another call meanwhile'
 WHERE e.entry_id = ANY($1) AND e.status = 'matched'
   AND e.entry_id NOT IN (SELECT entry_id FROM back)
