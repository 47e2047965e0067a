-- One batch ($1 rows at most) of enqueue buckets that have refilled, or whose queue is
-- retired or gone. `at` is the bucket's last take; after enqueue_burst / enqueue_rate
-- seconds it is full whatever it held (it never holds less than nothing).
DELETE FROM call_buckets WHERE (login, pid, queue) IN (
    SELECT b.login, b.pid, b.queue FROM call_buckets b
      LEFT JOIN queues q ON q.queue = b.queue AND q.active
     WHERE q.queue IS NULL
        OR b.at < now() - make_interval(secs => q.enqueue_burst / q.enqueue_rate)
     LIMIT $1
     FOR UPDATE OF b SKIP LOCKED)
