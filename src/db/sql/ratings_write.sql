-- Write each player's rating after the applied results and count the results played.
-- $1 = rating pool, then one element a player: $2 = logins, $3 = player ids,
-- $4 = ratings, $5 = uncertainties, $6 = volatilities, $7 = results played;
-- $8 = now.
INSERT INTO ratings AS r (owner, player_id, pool, rating, uncertainty, volatility,
                          matches, updated_at)
SELECT u.owner, u.player_id, $1, u.rating, u.uncertainty, u.volatility, u.played, $8
  FROM unnest($2::text[], $3::text[], $4::float8[], $5::float8[], $6::float8[],
              $7::int[]) AS u(owner, player_id, rating, uncertainty, volatility, played)
 ORDER BY u.owner, u.player_id
ON CONFLICT (owner, player_id, pool) DO UPDATE SET
    rating = EXCLUDED.rating, uncertainty = EXCLUDED.uncertainty,
    volatility = EXCLUDED.volatility, matches = r.matches + EXCLUDED.matches,
    updated_at = EXCLUDED.updated_at
