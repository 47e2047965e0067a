-- The open, unexpired backfill requests of queue $1 that one round tries: at most $2
-- open slots and $3 requests in all, each login's oldest request in turn (then each
-- login's second, ...), so that one login's requests cannot take a round's pool nor
-- hold back another login's request; returned oldest first. Not locked: the commit
-- locks the ones it fills (a cancel in flight wins).
WITH open AS (
    SELECT request_id, session_id, owner, members, open_slots, created_at,
           expires_at,
           (SELECT coalesce(sum(x), 0) FROM unnest(open_slots) x) AS slots,
           row_number() OVER (PARTITION BY owner
                              ORDER BY created_at, request_id) AS turn
      FROM backfill_requests
     WHERE queue = $1 AND status = 'open' AND expires_at > now()),
taken AS (
    -- The slots taken by the requests up to each one, in the order they are tried.
    SELECT *, sum(slots) OVER (ORDER BY turn, created_at, request_id) AS running
      FROM open
     ORDER BY turn, created_at, request_id
     LIMIT $3)
SELECT request_id, session_id, owner, members, open_slots, created_at, expires_at
  FROM taken
 WHERE running <= $2
 ORDER BY created_at, request_id
