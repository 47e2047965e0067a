-- Reject the queued entries of a retired queue, with the reason.
-- $1 = queue, $2 = reason.
UPDATE queue_entries SET status = 'rejected', reject_reason = $2, updated_at = now()
 WHERE queue = $1 AND status = 'queued'
