-- The stored ratings in the pool of these players.
-- $1 = rating pool, $2 = logins, $3 = player ids (one element a player).
SELECT r.owner, r.player_id, r.rating, r.uncertainty, r.volatility, r.matches,
       r.updated_at
  FROM ratings r
  JOIN unnest($2::text[], $3::text[]) AS u(owner, player_id)
    ON r.owner = u.owner AND r.player_id = u.player_id
 WHERE r.pool = $1
