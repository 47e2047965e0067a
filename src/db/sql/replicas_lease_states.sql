-- Every queue's lease, with the seconds until it expires (negative: expired).
-- $1 = now (NULL: the database's clock).
SELECT queue, holder, term,
       extract(epoch FROM expires_at - coalesce($1, now()))::float8 AS expires_in
  FROM leases
 ORDER BY queue
