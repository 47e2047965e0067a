-- The live replicas (heartbeat not expired), by name.
-- $1 = now (NULL: the database's clock).
SELECT replica, queues FROM replicas
 WHERE expires_at > coalesce($1, now())
 ORDER BY replica
