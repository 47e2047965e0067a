-- The round row a replay reads.
-- $1 = round id.
SELECT round_id, queue, trigger, committed_at, pool_size, matched, left_over,
       rejected, dropped_by_cancel, score, factor_averages, seed::text AS seed,
       config_hash, solve_ms
  FROM rounds WHERE round_id = $1
