-- 0021: backfill requests (0017) are pruned with the rest of the history: a request that
-- ended (filled, expired, cancelled) before the retention horizon is deleted by the
-- daemon's pruning (src/db/retention.rs, step 3) or `matchmaker prune`. Open requests
-- are never touched.

-- The next ended requests of a queue, oldest first.
CREATE INDEX backfill_requests_ended ON backfill_requests (queue, updated_at, request_id)
    WHERE status <> 'open';

GRANT DELETE ON backfill_requests TO matchmaker_daemon;
