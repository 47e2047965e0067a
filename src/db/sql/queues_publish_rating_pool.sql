-- Insert or update a rating pool's row; unchanged, no write.
-- $1 = pool, $2 = system, $3 = initial_rating, $4 = initial_uncertainty,
-- $5 = idle_to_initial in seconds, $6 = config, $7 = published_by.
INSERT INTO rating_pools (pool, system, initial_rating, initial_uncertainty,
                          idle_to_initial, config, published_by, published_at)
VALUES ($1, $2, $3, $4, make_interval(secs => $5), $6, $7, now())
ON CONFLICT (pool) DO UPDATE SET
    system = EXCLUDED.system, initial_rating = EXCLUDED.initial_rating,
    initial_uncertainty = EXCLUDED.initial_uncertainty,
    idle_to_initial = EXCLUDED.idle_to_initial, config = EXCLUDED.config,
    published_by = EXCLUDED.published_by, published_at = EXCLUDED.published_at
WHERE rating_pools.config IS DISTINCT FROM EXCLUDED.config
