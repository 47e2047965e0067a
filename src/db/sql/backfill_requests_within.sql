-- The open, unexpired backfill requests of queue $1 that one round tries: at most $2
-- open slots and $3 requests in all, each login's oldest request in turn (then each
-- login's second, ...), so that one login's requests cannot take a round's pool nor
-- hold back another login's request; returned oldest first. Not locked: the commit
-- locks the ones it fills (a cancel in flight wins).
-- Over time too: a login whose fills of the last minute reached share $4 of the players
-- the queue placed in that minute plus the $5 players pooled now (and at least $6, one
-- match's worth) waits, however many rounds run meanwhile.
WITH minute AS (
    SELECT (SELECT count(*) FROM match_players mp JOIN matches m USING (match_id)
             WHERE m.queue = $1 AND m.created_at > now() - interval '1 minute') AS placed),
filled AS (
    SELECT b.owner, count(mp.*) AS players
      FROM backfill_requests b
      JOIN match_players mp ON mp.match_id = b.match_id
     WHERE b.queue = $1 AND b.status = 'filled'
       AND b.updated_at > now() - interval '1 minute'
     GROUP BY b.owner),
open AS (
    SELECT request_id, session_id, owner, members, open_slots, created_at,
           expires_at, map,
           (SELECT coalesce(sum(x), 0) FROM unnest(open_slots) x) AS slots,
           row_number() OVER (PARTITION BY owner
                              ORDER BY created_at, request_id) AS turn
      FROM backfill_requests r
     WHERE queue = $1 AND status = 'open' AND expires_at > now()
       AND coalesce((SELECT f.players FROM filled f WHERE f.owner = r.owner), 0)
           < greatest($4 * ((SELECT placed FROM minute) + $5), $6)),
taken AS (
    -- The slots taken by the requests up to each one, in the order they are tried.
    SELECT *, sum(slots) OVER (ORDER BY turn, created_at, request_id) AS running
      FROM open
     ORDER BY turn, created_at, request_id
     LIMIT $3)
SELECT request_id, session_id, owner, members, open_slots, created_at, expires_at, map,
       -- Members sent with skill NULL to a rated queue play at their rating as it is
       -- now, as queued entries do: {player_id: [rating, uncertainty]}.
       (SELECT jsonb_object_agg(m ->> 'player_id', jsonb_build_array(c.rating, c.uncertainty))
          FROM jsonb_array_elements(taken.members) m
          JOIN rating_pools rp
            ON rp.pool = (SELECT q.rating_pool FROM queues q WHERE q.queue = $1)
         CROSS JOIN LATERAL matchmaker_current_rating(rp, taken.owner, m ->> 'player_id') c
         WHERE m ->> 'skill' IS NULL) AS member_ratings
  FROM taken
 WHERE running <= $2
 ORDER BY created_at, request_id
