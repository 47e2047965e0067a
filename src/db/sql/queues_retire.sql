-- Retire an active queue: enqueues into it are refused from now on.
-- $1 = queue, $2 = reason.
UPDATE queues SET active = false, retired_at = now(), retired_reason = $2
 WHERE queue = $1 AND active
