-- Every queue the database knows: published, or with rounds (a walk of
-- rounds_by_queue_latest, one index probe per queue, not a scan of the history).
WITH RECURSIVE walk AS (
    (SELECT queue FROM rounds ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT r.queue FROM rounds r WHERE r.queue > walk.queue
             ORDER BY r.queue LIMIT 1)
      FROM walk WHERE walk.queue IS NOT NULL)
SELECT queue FROM walk WHERE queue IS NOT NULL
UNION
SELECT queue FROM queues
ORDER BY queue
