-- Per queue and factor, over the window's reported two-team matches ($1 the queue or
-- NULL, $2 from, $3 to): how each factor's value at match time relates to what
-- happened, so a weight can be judged by results, not only by the score it buys. The
-- matches are split at the factor's median; per half, the share of players who left
-- early and the share of stomps (a team predicted at 70% or more won). The correlations
-- are of the factor with leaving early and with the prediction's squared error (a factor
-- that moves with surprises or quits is one whose weight matters).
WITH m AS (
    SELECT x.queue, x.factors,
           cardinality(r.left_early_entries)::float8
             / nullif((SELECT count(*) FROM match_players mp
                        WHERE mp.match_id = x.match_id), 0) AS left_early,
           (SELECT mp.win_probability FROM match_players mp
             WHERE mp.match_id = x.match_id
             ORDER BY mp.team LIMIT 1) AS predicted,
           CASE WHEN r.team_ranks[1] < r.team_ranks[2] THEN 1.0
                WHEN r.team_ranks[1] = r.team_ranks[2] THEN 0.5
                ELSE 0.0 END::float8 AS outcome
      FROM matches x
      JOIN match_results r ON r.match_id = x.match_id
     WHERE x.created_at >= $2 AND x.created_at < $3 AND x.status = 'ready'
       AND x.session_id IS NULL
       AND ($1::text IS NULL OR x.queue = $1)
       AND cardinality(r.team_ranks) = 2),
f AS (
    SELECT m.queue, kv.key AS factor, (kv.value #>> '{}')::float8 AS value,
           m.left_early, m.predicted, m.outcome,
           ((m.predicted >= 0.7 AND m.outcome = 1)
             OR (m.predicted <= 0.3 AND m.outcome = 0))::int::float8 AS stomp
      FROM m, jsonb_each(m.factors) kv
     WHERE jsonb_typeof(kv.value) = 'number'),
med AS (
    SELECT queue, factor, percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS median
      FROM f
     GROUP BY queue, factor)
SELECT f.queue, f.factor, count(*) AS matches, med.median,
       avg(f.left_early) FILTER (WHERE f.value <= med.median) AS left_early_low,
       avg(f.left_early) FILTER (WHERE f.value > med.median) AS left_early_high,
       avg(f.stomp) FILTER (WHERE f.value <= med.median) AS stomps_low,
       avg(f.stomp) FILTER (WHERE f.value > med.median) AS stomps_high,
       corr(f.left_early, f.value) AS left_early_corr,
       corr((f.outcome - f.predicted) ^ 2, f.value) AS surprise_corr
  FROM f
  JOIN med USING (queue, factor)
 GROUP BY f.queue, f.factor, med.median
 ORDER BY f.queue, f.factor
