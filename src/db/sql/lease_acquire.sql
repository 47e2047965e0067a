-- Take the queue's lease if it is free or expired, in a new term; returns the term (no row:
-- someone else holds it).
-- $1 = queue, $2 = holder, $3 = now (NULL: the database's clock), $4 = ttl in seconds.
INSERT INTO leases (queue, holder, term, acquired_at, expires_at)
SELECT $1, $2, 1, t.now, t.now + make_interval(secs => $4)
  FROM (SELECT coalesce($3, now()) AS now) t
ON CONFLICT (queue) DO UPDATE
   SET holder = EXCLUDED.holder,
       -- A new term on every change of hands: the old holder's term is now stale,
       -- and its commits are refused.
       term = leases.term + 1,
       acquired_at = EXCLUDED.acquired_at,
       expires_at = EXCLUDED.expires_at
 -- Only an expired (or released) lease changes hands.
 WHERE leases.expires_at <= EXCLUDED.acquired_at
RETURNING term
