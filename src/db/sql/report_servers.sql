-- Per queue whose matches of the window ($1 the queue or NULL, $2 from, $3 to) were placed
-- on game servers: how many, how many matches waited for a server (formed by a round but
-- not placed; their players stayed queued), how many servers hosted, and how long a server
-- sat free before its allocation (p50 / p90, seconds).
WITH placed AS (
    SELECT m.queue, m.server_owner, m.server_id,
           extract(epoch FROM m.created_at - m.server_ready_at)::float8 AS idle_s
      FROM matches m
     WHERE m.created_at >= $2 AND m.created_at < $3 AND m.server_id IS NOT NULL
       AND m.session_id IS NULL
       AND ($1::text IS NULL OR m.queue = $1)),
waited AS (
    SELECT r.queue, sum(r.no_server_matches)::bigint AS matches
      FROM rounds r
     WHERE r.committed_at >= $2 AND r.committed_at < $3
       AND ($1::text IS NULL OR r.queue = $1)
     GROUP BY r.queue)
SELECT p.queue,
       count(*) AS placed,
       coalesce(max(w.matches), 0)::bigint AS waited_for_server,
       count(DISTINCT (p.server_owner, p.server_id)) AS servers,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY p.idle_s) AS idle_p50_s,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY p.idle_s) AS idle_p90_s
  FROM placed p
  LEFT JOIN waited w ON w.queue = p.queue
 GROUP BY p.queue
 ORDER BY p.queue
