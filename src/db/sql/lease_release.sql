-- Give a lease up: it expires now.
-- $1 = queue, $2 = holder, $3 = term, $4 = now (NULL: the database's clock).
UPDATE leases SET expires_at = coalesce($4, now())
 WHERE queue = $1 AND holder = $2 AND term = $3 AND expires_at > coalesce($4, now())
