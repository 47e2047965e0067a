-- Reject the still-queued entries the round cannot use, with the reason.
-- $1 = entry ids, $2 = reasons, $3 = round id, $4 = committed_at.
UPDATE queue_entries e
   SET status = 'rejected', reject_reason = u.reason, round_id = $3,
       updated_at = $4
  FROM unnest($1::bigint[], $2::text[]) AS u(entry_id, reason)
 WHERE e.entry_id = u.entry_id AND e.status = 'queued'
