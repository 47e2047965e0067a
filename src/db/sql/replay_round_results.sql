-- The reported results of a round's two-team matches ($1 the round): per match, the
-- teams' ranks as reported, and the first team's predicted chance at match time
-- (match_players' win_probability).
SELECT r.team_ranks,
       (SELECT mp.win_probability FROM match_players mp
         WHERE mp.match_id = r.match_id ORDER BY mp.team LIMIT 1) AS predicted
  FROM match_results r
  JOIN matches x ON x.match_id = r.match_id
 WHERE x.round_id = $1 AND x.status = 'ready' AND x.session_id IS NULL
   AND cardinality(r.team_ranks) = 2
