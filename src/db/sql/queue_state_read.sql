-- The queue's stored countdown, where a new leader continues.
-- $1 = queue.
SELECT next_round_at, waiting_for, config_hash, last_round_at FROM queue_state
 WHERE queue = $1
