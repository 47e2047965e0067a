-- Record on each still-queued left-over entry its outcome, the reason and since which round
-- it holds; an entry left over with no_host or no_valid_match for $6 rounds is told it now
-- waits behind the others when the pool is capped.
-- $1 = entry ids, $2 = outcomes, $3 = reasons, $4 = round id, $5 = queue,
-- $6 = limits.sit_out_after.
WITH horizon AS (
    SELECT (SELECT round_id FROM rounds WHERE queue = $5
             ORDER BY round_id DESC OFFSET $6 - 1 LIMIT 1) AS round_id),
u AS (
    SELECT u.entry_id, u.outcome,
           CASE WHEN e.left_over IS NOT DISTINCT FROM u.outcome
                THEN e.left_over_since ELSE $4 END AS since,
           u.reason
           || CASE WHEN u.outcome IN ('no_host', 'no_valid_match')
                        AND e.left_over IS NOT DISTINCT FROM u.outcome
                        AND e.left_over_since <= h.round_id
                   THEN format('; left over so for %s rounds: waits behind the '
                               || 'other entries when the pool is larger than a '
                               || 'round takes', $6)
                   ELSE '' END AS reason
      FROM unnest($1::bigint[], $2::text[], $3::text[]) AS u(entry_id, outcome, reason)
      JOIN queue_entries e USING (entry_id), horizon h)
UPDATE queue_entries e
   SET left_over = u.outcome, left_over_reason = u.reason, left_over_since = u.since
  FROM u
 WHERE e.entry_id = u.entry_id AND e.status = 'queued'
   -- A row version per change only: a player left over round after
   -- round for the same reason costs the commit nothing more.
   AND (e.left_over, e.left_over_reason, e.left_over_since)
       IS DISTINCT FROM (u.outcome, u.reason, u.since)
