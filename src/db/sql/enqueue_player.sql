-- Enqueue one solo player through the front door's enqueue(); returns the entry id.
-- $1 = queue, $2 = player id, $3 = skill, $4 = latencies, $5 = peer_pings, $6 = roles,
-- $7 = side, $8 = skill_sigma, $9 = attributes.
SELECT enqueue(queue => $1, player_id => $2, skill => $3, latencies => $4,
               peer_pings => $5, roles => $6, side => $7, skill_sigma => $8,
               attributes => $9)
