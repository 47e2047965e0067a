-- The fence, as the round's commit holds it: the queue's lease, if this holder and term
-- still hold it unexpired, locked until COMMIT.
-- $1 = queue, $2 = holder, $3 = term, $4 = the lease clock (NULL: the database's).
SELECT term FROM leases
 WHERE queue = $1 AND holder = $2 AND term = $3 AND expires_at > coalesce($4, now())
 FOR UPDATE
