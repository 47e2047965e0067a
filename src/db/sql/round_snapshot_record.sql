-- The round's replay record.
-- $1 = round id.
SELECT format, pool, config, budget, strategy, threads, left_over, dropped_matches,
       servers
  FROM round_snapshots WHERE round_id = $1
