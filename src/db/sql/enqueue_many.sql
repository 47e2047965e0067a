-- Bulk insert straight into queue_entries (tests and benchmarks), with given enqueue
-- times; one element a player.
-- $1 = queue, $2 = player ids, $3 = party ids, $4 = skills, $5 = skill sigmas,
-- $6 = latencies, $7 = peer pings, $8 = roles (JSON arrays), $9 = sides,
-- $10 = enqueued_at.
INSERT INTO queue_entries (queue, player_id, party_id, skill, skill_sigma, latencies,
                           peer_pings, roles, side, enqueued_at)
SELECT $1, u.id, u.party, u.skill, u.sigma, u.lat, u.pings,
       ARRAY(SELECT jsonb_array_elements_text(u.roles)), u.side, u.at
  FROM unnest($2::text[], $3::text[], $4::float8[], $5::float8[], $6::jsonb[],
              $7::jsonb[], $8::jsonb[], $9::float8[], $10::timestamptz[])
       AS u(id, party, skill, sigma, lat, pings, roles, side, at)
