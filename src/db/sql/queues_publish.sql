-- Insert or update the queue's published row (active again if it was retired); unchanged,
-- no write.
-- $1 = queue, $2 = teams, $3 = team_size, $4 = network, $5 = roles, $6 = regions,
-- $7 = max_party_size, $8 = ticket_ttl in seconds, $9 = max_wait in seconds,
-- $10 = config_hash, $11 = published_by, $12 = min_teams, $13 = min_team_size,
-- $14 = formats, $15 = max_queued_per_login, $16 = max_backfill_per_login,
-- $17 = enqueue_rate, $18 = enqueue_burst, $19 = same_attributes, $20 = max_avoids,
-- $21 = ready_timeout in seconds, $22 = decline_cooldown in seconds,
-- $23 = max_avoids_per_login, $24 = rating_pool, $25 = server_ttl in seconds,
-- $26 = skill_min, $27 = skill_max, $28 = maps, $29 = max_vetoes.
INSERT INTO queues (queue, active, teams, team_size, network, roles, regions,
                    max_party_size, ticket_ttl, max_wait, config_hash, published_by,
                    published_at, min_teams, min_team_size, formats,
                    max_queued_per_login, max_backfill_per_login, enqueue_rate,
                    enqueue_burst, same_attributes, max_avoids, ready_timeout,
                    decline_cooldown, max_avoids_per_login, rating_pool,
                    server_ttl, skill_min, skill_max, maps, max_vetoes)
VALUES ($1, true, $2, $3, $4, $5, $6, $7, make_interval(secs => $8),
        make_interval(secs => $9), $10, $11, now(), $12, $13, $14, $15, $16, $17,
        $18, $19, $20, make_interval(secs => $21), make_interval(secs => $22), $23,
        $24, make_interval(secs => $25), $26, $27, $28, $29)
ON CONFLICT (queue) DO UPDATE SET
    active = true, teams = EXCLUDED.teams, team_size = EXCLUDED.team_size,
    network = EXCLUDED.network, roles = EXCLUDED.roles, regions = EXCLUDED.regions,
    max_party_size = EXCLUDED.max_party_size, ticket_ttl = EXCLUDED.ticket_ttl,
    max_wait = EXCLUDED.max_wait, config_hash = EXCLUDED.config_hash,
    published_by = EXCLUDED.published_by, published_at = EXCLUDED.published_at,
    min_teams = EXCLUDED.min_teams, min_team_size = EXCLUDED.min_team_size,
    formats = EXCLUDED.formats,
    max_queued_per_login = EXCLUDED.max_queued_per_login,
    max_backfill_per_login = EXCLUDED.max_backfill_per_login,
    enqueue_rate = EXCLUDED.enqueue_rate, enqueue_burst = EXCLUDED.enqueue_burst,
    same_attributes = EXCLUDED.same_attributes, max_avoids = EXCLUDED.max_avoids,
    ready_timeout = EXCLUDED.ready_timeout,
    decline_cooldown = EXCLUDED.decline_cooldown,
    max_avoids_per_login = EXCLUDED.max_avoids_per_login,
    rating_pool = EXCLUDED.rating_pool, server_ttl = EXCLUDED.server_ttl,
    skill_min = EXCLUDED.skill_min, skill_max = EXCLUDED.skill_max,
    maps = EXCLUDED.maps, max_vetoes = EXCLUDED.max_vetoes,
    retired_at = NULL, retired_reason = NULL
-- Unchanged: no write (no dead row version for every poll). The formats are
-- compared too, so a change of format alone is published.
WHERE (queues.active, queues.config_hash, queues.formats)
      IS DISTINCT FROM (true, EXCLUDED.config_hash, EXCLUDED.formats)
