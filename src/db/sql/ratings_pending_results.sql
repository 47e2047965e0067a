-- The pool's unapplied results, in report order.
-- $1 = rating pool, $2 = how many at most.
SELECT match_id, team_ranks FROM match_results
 WHERE rating_pool = $1 AND applied_at IS NULL
 ORDER BY reported_at, match_id
 LIMIT $2
