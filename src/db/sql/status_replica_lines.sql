-- Every daemon replica and the queues whose live lease it holds: the replicas section
-- of `matchmaker status`.
SELECT replica, live,
       -- NULL for a lease holder that never registered (no heartbeat to count from).
       floor(extract(epoch FROM now() - heartbeat_at))::bigint AS heartbeat_secs,
       cardinality(serves) AS serves, leads
  FROM replica_leadership
 ORDER BY replica
