-- Per queue (or only queue $1), its pool and its countdown: the first section of
-- `matchmaker status`.
--
-- Queues the daemon runs (queue_state) plus queues that only have waiting players (no
-- daemon yet): a full join of the two.
WITH pools AS (
    SELECT queue, count(*) AS pool_size
      FROM queue_entries
     WHERE status = 'queued'
     GROUP BY queue)
SELECT coalesce(s.queue, p.queue) AS queue,
       coalesce(p.pool_size, 0) AS pool_size,
       -- Whole seconds to the announced tick, never negative; NULL while the queue
       -- waits for players rather than a tick.
       ceil(greatest(0, extract(epoch FROM s.next_round_at - now())))::bigint
           AS seconds_to_next,
       coalesce(s.waiting_for, 'no daemon') AS waiting_for,
       s.target_pool,
       s.min_pool,
       l.holder || ' (term ' || l.term || ')' AS leader,
       (SELECT count(*) FROM matches m
         WHERE m.queue = coalesce(s.queue, p.queue) AND m.status = 'pending')
           AS pending_matches
  FROM queue_state s
  FULL JOIN pools p ON p.queue = s.queue
  -- Only a live lease names a leader; an expired one is up for grabs.
  LEFT JOIN leases l
         ON l.queue = coalesce(s.queue, p.queue) AND l.expires_at > now()
 WHERE $1::text IS NULL OR coalesce(s.queue, p.queue) = $1
 ORDER BY 1
