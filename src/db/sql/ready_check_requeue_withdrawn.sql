-- The requeued players' entries in other queues that the cancelled match withdrew: queued
-- again as well (active queues only, unless the player is queued there again).
-- $1 = match ids, $2 = the requeued entry ids (one element each), $3 = queue.
UPDATE queue_entries e
   SET status = 'queued', match_id = NULL, reject_reason = NULL,
       left_over = 'ready_check',
       left_over_reason = format('match %s in queue %s was cancelled; queued again',
                                 u.match_id, $3::text),
       expires_at = now() + q.ticket_ttl, updated_at = now()
  FROM unnest($1::bigint[], $2::bigint[]) AS u(match_id, entry_id)
  JOIN queue_entries seat ON seat.entry_id = u.entry_id, queues q
 WHERE e.status = 'withdrawn' AND e.match_id = u.match_id
   AND e.owner = seat.owner AND e.player_id = seat.player_id
   AND e.queue <> $3 AND q.queue = e.queue AND q.active
   AND NOT EXISTS (SELECT 1 FROM queue_entries o
                    WHERE o.queue = e.queue AND o.owner = e.owner
                      AND o.player_id = e.player_id AND o.status = 'queued')
