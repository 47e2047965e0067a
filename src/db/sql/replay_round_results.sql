-- The reported results of a round's two-team matches ($1 the round): per match, the
-- first team's predicted chance at match time (match_players' win_probability) and what
-- happened (1 a win, 0.5 a draw, 0 a loss), as the report counts them.
SELECT (SELECT mp.win_probability FROM match_players mp
         WHERE mp.match_id = x.match_id
         ORDER BY mp.team LIMIT 1) AS predicted,
       CASE WHEN r.team_ranks[1] < r.team_ranks[2] THEN 1.0
            WHEN r.team_ranks[1] = r.team_ranks[2] THEN 0.5
            ELSE 0.0 END::float8 AS outcome
  FROM matches x
  JOIN match_results r ON r.match_id = x.match_id
 WHERE x.round_id = $1 AND x.status = 'ready' AND x.session_id IS NULL
   AND cardinality(r.team_ranks) = 2
