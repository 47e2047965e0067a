-- The fleet per region, every server login's servers together.
SELECT region, sum(ready)::bigint AS ready, sum(silent)::bigint AS silent,
       sum(allocated)::bigint AS allocated
  FROM server_fleet GROUP BY region ORDER BY region
