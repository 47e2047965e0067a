-- Delete the replicas expired long ago.
-- $1 = now (NULL: the database's clock), $2 = how long ago, in seconds.
DELETE FROM replicas
 WHERE expires_at < coalesce($1, now()) - make_interval(secs => $2)
