-- Write the replay record of a round (inside the round's commit).
-- $1 = round id, $2 = queue, $3 = format, $4 = pool (LZ4), $5 = pool_players,
-- $6 = pool_json_bytes, $7 = config, $8 = budget, $9 = strategy, $10 = threads,
-- $11 = left_over, $12 = dropped_matches, $13 = servers.
INSERT INTO round_snapshots (round_id, queue, format, pool, pool_players,
                             pool_json_bytes, config, budget, strategy, threads,
                             left_over, dropped_matches, servers)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
