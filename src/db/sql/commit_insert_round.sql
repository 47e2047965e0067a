-- Insert the round row (counts, score and commit time set later by commit_finish_round)
-- and reserve the ids of its matches; returns (round_id, the match ids).
-- $1 = queue, $2 = trigger, $3 = leader, $4 = term, $5 = started_at, $6 = snapshot_at,
-- $7 = committed_at, $8 = pool_size, $9 = match_count, $10 = matched, $11 = left_over,
-- $12 = rejected, $13 = dropped_by_cancel, $14 = score, $15 = factor_averages,
-- $16 = solver_stats, $17 = snapshot_ms, $18 = solve_ms, $19 = commit_ms, $20 = seed (as
-- text), $21 = config_hash, $22 = config, $23 = how many match ids to reserve.
WITH round AS (
    INSERT INTO rounds (queue, trigger, leader, term, started_at, snapshot_at,
                        committed_at, pool_size, match_count, matched, left_over,
                        rejected, dropped_by_cancel, score, factor_averages,
                        solver_stats, snapshot_ms, solve_ms, commit_ms, seed,
                        config_hash, config)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
            $17, $18, $19, $20::text::numeric, $21, $22)
    RETURNING round_id)
SELECT round_id,
       ARRAY(SELECT nextval(pg_get_serial_sequence('matches', 'match_id'))
               FROM generate_series(1, $23))
  FROM round
