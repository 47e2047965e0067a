-- Ready servers per region, announced within the ttl (the database's clock).
-- $1 = ttl in seconds.
SELECT region, count(*) FROM servers
 WHERE status = 'ready' AND announced_at > now() - make_interval(secs => $1)
 GROUP BY region
