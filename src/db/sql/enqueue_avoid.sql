-- A player avoids another through avoid(); returns how many avoids the player holds.
-- $1 = player id, $2 = avoided player id, $3 = duration in seconds (NULL: until
-- unavoid).
SELECT avoid($1, $2, CASE WHEN $3::float8 IS NULL THEN NULL
                          ELSE make_interval(secs => $3) END)
