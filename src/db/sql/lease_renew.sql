-- Extend a lease still held unexpired to now + ttl.
-- $1 = queue, $2 = holder, $3 = term, $4 = now (NULL: the database's clock),
-- $5 = ttl in seconds.
UPDATE leases SET expires_at = coalesce($4, now()) + make_interval(secs => $5)
 WHERE queue = $1 AND holder = $2 AND term = $3
   -- Not once expired: a standby may be taking it over right now.
   AND expires_at > coalesce($4, now())
