-- What each applied result did to each of its players.
-- $1 = rating pool, then one element a change: $2 = match ids, $3 = entry ids,
-- $4 = logins, $5 = player ids, $6 = teams, $7 = left early, $8 = rating before,
-- $9 = uncertainty before, $10 = rating after, $11 = uncertainty after;
-- $12 = applied_at.
INSERT INTO rating_changes (match_id, entry_id, pool, owner, player_id, team,
                            left_early, rating_before, uncertainty_before,
                            rating_after, uncertainty_after, applied_at)
SELECT u.match_id, u.entry_id, $1, u.owner, u.player_id, u.team, u.left_early,
       u.rb, u.ub, u.ra, u.ua, $12
  FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::int[],
              $7::bool[], $8::float8[], $9::float8[], $10::float8[], $11::float8[])
       AS u(match_id, entry_id, owner, player_id, team, left_early, rb, ub, ra, ua)
