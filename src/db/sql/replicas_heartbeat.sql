-- Register this replica or write its heartbeat; an expired row under the same name starts
-- again.
-- $1 = replica, $2 = the queues its config lists, $3 = now (NULL: the database's clock),
-- $4 = ttl in seconds, $5 = version.
INSERT INTO replicas AS r (replica, started_at, heartbeat_at, expires_at, queues,
                           version)
SELECT $1, t.now, t.now, t.now + make_interval(secs => $4), $2, $5
  FROM (SELECT coalesce($3, now()) AS now) t
ON CONFLICT (replica) DO UPDATE
   SET heartbeat_at = EXCLUDED.heartbeat_at,
       expires_at = EXCLUDED.expires_at,
       queues = EXCLUDED.queues,
       version = EXCLUDED.version,
       -- A row that had expired is a new incarnation under an old name (a
       -- restart with a fixed --holder): it starts again.
       started_at = CASE WHEN r.expires_at <= EXCLUDED.heartbeat_at
                         THEN EXCLUDED.started_at ELSE r.started_at END
