-- Queues with something to retire that the running configs do not list: active published
-- queues, and queues only queued entries name.
-- $1 = the configured queues.
SELECT queue FROM queues WHERE active AND NOT queue = ANY ($1)
UNION
SELECT DISTINCT queue FROM queue_entries
 WHERE status = 'queued' AND NOT queue = ANY ($1)
ORDER BY 1
