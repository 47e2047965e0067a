-- The player's ratings (every login's player of that id), each with its last five applied
-- results, newest first.
-- $1 = player id.
SELECT r.owner, r.pool, r.rating, r.uncertainty, r.matches, r.updated_at,
       coalesce((SELECT jsonb_agg(jsonb_build_array(c.match_id, c.rating_before,
                                                    c.rating_after, c.left_early)
                                  ORDER BY c.match_id DESC)
                   FROM (SELECT * FROM rating_changes c
                          WHERE c.owner = r.owner AND c.player_id = r.player_id
                            AND c.pool = r.pool
                          ORDER BY c.match_id DESC LIMIT 5) c), '[]') AS recent
  FROM ratings r
 WHERE r.player_id = $1
 ORDER BY r.owner, r.pool
