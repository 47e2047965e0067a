-- Withdraw the matched players' still-queued entries in other queues, naming the match that
-- won.
-- $1 = entry ids, $2 = the match of each, $3 = queue, $4 = committed_at.
UPDATE queue_entries e
   SET status = 'withdrawn', match_id = u.match_id, updated_at = $4,
       reject_reason = format('matched in queue %s (match %s)', $3, u.match_id)
  FROM unnest($1::bigint[], $2::bigint[]) AS u(entry_id, match_id)
 WHERE e.entry_id = u.entry_id AND e.status = 'queued'
