-- The round row's counts, score and commit time, known once the matches are written.
-- $1 = round id, $2 = commit_ms, $3 = match_count, $4 = matched, $5 = left_over,
-- $6 = rejected, $7 = dropped_by_cancel, $8 = score, $9 = factor_averages,
-- $10 = no_server_matches.
UPDATE rounds
   SET commit_ms = $2, match_count = $3, matched = $4, left_over = $5, rejected = $6,
       dropped_by_cancel = $7, score = $8, factor_averages = $9,
       no_server_matches = $10
 WHERE round_id = $1
