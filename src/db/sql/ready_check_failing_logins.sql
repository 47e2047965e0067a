-- The queue's logins whose ready checks failed at least $2 times (decayed) and at least
-- share $3 of their seats.
-- $1 = queue, $2 = failures, $3 = share, $4 = the half-life in seconds.
SELECT owner FROM ready_records
 WHERE queue = $1
   AND failures * power(0.5, extract(epoch FROM now() - updated_at) / $4) >= $2
   AND failures >= $3 * seats
 ORDER BY owner
