-- Insert or update the queue's countdown row and recount its pool; with a lease ($16),
-- only while that lease is held.
-- $1 = queue, $2 = next_round_at, $3 = waiting_for, $4 = schedule, $5 = target_pool,
-- $6 = min_pool, $7 = players_per_match, $8 = max_wait in seconds, $9 = last round id
-- and $10 = its commit time (NULL: not a round's commit), $11 = config_hash,
-- $12 = now, $13 = players_missing, $14 = latest_round_at, $15 = round_started_at,
-- $16 = lease holder (NULL: unfenced), $17 = lease term, $18 = the lease clock (NULL: the
-- database's).
INSERT INTO queue_state (queue, next_round_at, waiting_for, schedule, target_pool,
                         min_pool, players_per_match, max_wait, last_round_id,
                         last_round_at, config_hash, updated_at, pool_size,
                         pool_counted_at, players_missing, latest_round_at,
                         round_started_at)
SELECT $1, $2, $3, $4, $5, $6, $7, make_interval(secs => $8), $9, $10, $11, $12,
       -- Counted here, in the writer's transaction: after a commit it is the
       -- pool the round left.
       (SELECT count(*) FROM queue_entries
         WHERE queue = $1 AND status = 'queued'),
       $12, $13, $14, $15
 WHERE $16::text IS NULL
    OR EXISTS (SELECT 1 FROM leases
                WHERE queue = $1 AND holder = $16 AND term = $17
                  AND expires_at > coalesce($18, now()))
ON CONFLICT (queue) DO UPDATE SET
    pool_size = EXCLUDED.pool_size,
    pool_counted_at = EXCLUDED.pool_counted_at,
    next_round_at = EXCLUDED.next_round_at,
    waiting_for = EXCLUDED.waiting_for,
    players_missing = EXCLUDED.players_missing,
    latest_round_at = EXCLUDED.latest_round_at,
    round_started_at = EXCLUDED.round_started_at,
    schedule = EXCLUDED.schedule,
    target_pool = EXCLUDED.target_pool,
    min_pool = EXCLUDED.min_pool,
    players_per_match = EXCLUDED.players_per_match,
    max_wait = EXCLUDED.max_wait,
    -- Keep the last round unless this write comes from a round commit.
    last_round_id = coalesce(EXCLUDED.last_round_id, queue_state.last_round_id),
    last_round_at = coalesce(EXCLUDED.last_round_at, queue_state.last_round_at),
    config_hash = EXCLUDED.config_hash,
    updated_at = EXCLUDED.updated_at
