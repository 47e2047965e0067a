-- The window's rounds, oldest first, each with the left-over players by outcome and the
-- ping rules of the config it ran with.
SELECT round_id, queue, trigger, committed_at, pool_size::int8, match_count::int8,
       matched::int8, left_over::int8, rejected::int8, score, factor_averages,
       wait_estimates,
       -- The ping rules of the config the round ran with (the enemy ping in ms is
       -- estimated as its enemy_ping factor did); a config stored before a key existed
       -- falls back to the default.
       coalesce(config ->> 'network', 'peer_to_peer') = 'dedicated' AS dedicated,
       coalesce((config -> 'ping' ->> 'relay_overhead_ms')::float8, 0)
           AS relay_overhead_ms,
       coalesce((config -> 'ping' ->> 'unknown_ms')::float8, 150) AS unknown_ms,
       -- Rejected players are not left over; a round without a snapshot counts none.
       (SELECT coalesce(jsonb_object_agg(o.outcome, o.n), '{}')
          FROM (SELECT l.value ->> 'outcome' AS outcome, count(*) AS n
                  FROM round_snapshots s CROSS JOIN LATERAL jsonb_each(s.left_over) l
                 WHERE s.round_id = window_rounds.round_id
                   AND l.value ->> 'outcome' <> 'rejected'
                 GROUP BY 1) o) AS left_over_by_reason
  FROM window_rounds
 ORDER BY committed_at, round_id
