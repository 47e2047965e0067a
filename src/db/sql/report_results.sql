-- Per queue with a two-team match created in the window ($1 the queue or NULL, $2 from,
-- $3 to): how the predictions at match time came true. Each reported match counts once,
-- from its first team's side: its predicted chance to win (match_players'
-- win_probability) against what happened (1 a win, 0.5 a draw, 0 a loss).
WITH m AS (
    SELECT x.match_id, x.queue, r.team_ranks, r.disputed,
           cardinality(r.left_early_entries) AS left_early,
           (SELECT mp.win_probability FROM match_players mp
             WHERE mp.match_id = x.match_id
             ORDER BY mp.team LIMIT 1) AS predicted,
           (SELECT count(*) FROM match_players mp WHERE mp.match_id = x.match_id) AS players,
           (SELECT count(DISTINCT mp.team) FROM match_players mp
             WHERE mp.match_id = x.match_id) AS teams
      FROM matches x
      LEFT JOIN match_results r ON r.match_id = x.match_id
     WHERE x.created_at >= $2 AND x.created_at < $3 AND x.status = 'ready'
       AND x.session_id IS NULL
       AND ($1::text IS NULL OR x.queue = $1)),
played AS (
    SELECT m.*,
           CASE WHEN m.team_ranks[1] < m.team_ranks[2] THEN 1.0
                WHEN m.team_ranks[1] = m.team_ranks[2] THEN 0.5
                ELSE 0.0 END::float8 AS outcome
      FROM m
     WHERE m.team_ranks IS NOT NULL AND m.teams = 2 AND m.predicted IS NOT NULL)
SELECT q.queue,
       (SELECT count(*) FROM m WHERE m.queue = q.queue) AS matches,
       (SELECT count(*) FROM m WHERE m.queue = q.queue AND m.team_ranks IS NOT NULL)
           AS reported,
       (SELECT count(*) FROM m WHERE m.queue = q.queue AND m.disputed) AS disputed,
       (SELECT sum(m.left_early)::float8 / nullif(sum(m.players), 0)
          FROM m WHERE m.queue = q.queue AND m.team_ranks IS NOT NULL) AS left_early_share,
       -- Brier score: the mean squared gap between prediction and outcome (0.25: a coin
       -- flip's).
       (SELECT avg((p.predicted - p.outcome) ^ 2) FROM played p WHERE p.queue = q.queue)
           AS brier,
       -- Matches the prediction called lopsided (one team at 70% or more), and how many
       -- of those the favourite won: the stomps.
       (SELECT count(*) FROM played p
         WHERE p.queue = q.queue AND greatest(p.predicted, 1 - p.predicted) >= 0.7)
           AS lopsided,
       (SELECT count(*) FROM played p
         WHERE p.queue = q.queue AND ((p.predicted >= 0.7 AND p.outcome = 1)
                                      OR (p.predicted <= 0.3 AND p.outcome = 0)))
           AS stomps,
       -- The reliability curve: per tenth of predicted probability, the matches, their
       -- mean prediction and how often the first team won.
       (SELECT coalesce(jsonb_agg(b ORDER BY b.bucket), '[]')
          FROM (SELECT least(floor(p.predicted * 10), 9)::int AS bucket, count(*) AS matches,
                       avg(p.predicted) AS predicted, avg(p.outcome) AS observed
                  FROM played p WHERE p.queue = q.queue
                 GROUP BY 1) b) AS calibration
  FROM (SELECT DISTINCT queue FROM m) q
 ORDER BY q.queue
