-- Seconds until the queue's lease expires (negative: expired).
-- $1 = queue, $2 = now (NULL: the database's clock).
SELECT extract(epoch FROM expires_at - coalesce($2, now()))::float8
  FROM leases WHERE queue = $1
