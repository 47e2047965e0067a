-- The round's matches and their players, by match, team and player.
-- $1 = round id.
SELECT m.match_id, m.score, m.factors, mp.team, mp.player_id
  FROM matches m JOIN match_players mp USING (match_id)
 WHERE m.round_id = $1
 ORDER BY m.match_id, mp.team, mp.player_id
