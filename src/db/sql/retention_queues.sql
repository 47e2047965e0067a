-- The queues that have history: published, with a countdown, or with rounds.
SELECT queue FROM queues
UNION SELECT queue FROM queue_state
UNION SELECT DISTINCT queue FROM rounds
ORDER BY 1
