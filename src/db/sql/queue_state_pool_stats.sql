-- The queue's pool: its size, its oldest player and its oldest player enqueued after $2.
-- Served by the partial index queue_entries_queued_oldest_first.
-- $1 = queue, $2 = enqueued after (NULL: the oldest of all).
SELECT count(*) AS size, min(enqueued_at) AS oldest_enqueued_at,
       min(enqueued_at) FILTER (WHERE $2::timestamptz IS NULL OR enqueued_at > $2)
           AS oldest_fresh_enqueued_at
  FROM queue_entries
 WHERE queue = $1 AND status = 'queued'
