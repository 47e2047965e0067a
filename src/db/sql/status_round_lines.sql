-- The latest $2 rounds (of queue $1, or of every queue when NULL), newest first, each
-- with the wait of the players it placed: the rounds section of `matchmaker status`.
SELECT r.round_id, r.queue, r.trigger, r.committed_at, r.pool_size, r.match_count,
       r.matched, r.left_over, r.rejected, r.score, r.factor_averages, r.solve_ms,
       w.p50, w.p90, w.max,
       (SELECT x.no_server_matches FROM rounds x WHERE x.round_id = r.round_id)
           AS no_server_matches
  FROM round_summaries r
  -- Wait from enqueue to match of the players this round placed (NULLs: no match).
  LEFT JOIN LATERAL (
       SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d.waited_seconds) AS p50,
              percentile_cont(0.9) WITHIN GROUP (ORDER BY d.waited_seconds) AS p90,
              max(d.waited_seconds) AS max
         FROM match_details d
        WHERE d.round_id = r.round_id) w ON true
 WHERE $1::text IS NULL OR r.queue = $1
 ORDER BY r.round_id DESC
 LIMIT $2
