-- Lock up to the number needed of ready servers of each region, the most recently heard
-- from first. SKIP LOCKED: a server login's call in flight holds its own row.
-- $1 = regions, $2 = how many each, $3 = ttl in seconds.
SELECT need.region, s.owner, s.server_id, s.address, s.ready_since
  FROM unnest($1::text[], $2::bigint[]) AS need(region, n)
 CROSS JOIN LATERAL (
       SELECT x.owner, x.server_id, x.address, x.ready_since
         FROM servers x
        WHERE x.region = need.region AND x.status = 'ready'
          AND x.announced_at > now() - make_interval(secs => $3)
        ORDER BY x.announced_at DESC, x.owner, x.server_id
        LIMIT need.n
          FOR UPDATE SKIP LOCKED) s
