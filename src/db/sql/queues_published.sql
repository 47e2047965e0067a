-- Every published queue, active or retired.
SELECT queue, active, config_hash, published_at, retired_reason FROM queues
 ORDER BY queue
