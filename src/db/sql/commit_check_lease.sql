-- The commit's fence: the queue's lease, if this holder and term still hold it unexpired,
-- locked until COMMIT (a takeover waits); also sets this transaction's plan cache mode.
-- $1 = queue, $2 = holder, $3 = term, $4 = the lease clock (NULL: the database's),
-- $5 = plan_cache_mode (force_generic_plan or auto).
SELECT term, set_config('plan_cache_mode', $5, true) FROM leases
 WHERE queue = $1 AND holder = $2 AND term = $3 AND expires_at > coalesce($4, now())
 FOR UPDATE
