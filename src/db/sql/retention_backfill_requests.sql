-- One batch ($3 rows at most) of the backfill requests of queue $1 that ended (any
-- status but open) before the cutoff $2, oldest first.
DELETE FROM backfill_requests WHERE request_id IN (
    SELECT b.request_id FROM backfill_requests b
     WHERE b.queue = $1 AND b.status <> 'open' AND b.updated_at < $2
     ORDER BY b.updated_at, b.request_id
     LIMIT $3
     FOR UPDATE SKIP LOCKED)
