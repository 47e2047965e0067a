-- The player's five latest entries, newest first.
-- $1 = player id.
SELECT entry_id, queue, status, reject_reason AS reason, enqueued_at, updated_at
  FROM queue_entries WHERE player_id = $1
 ORDER BY entry_id DESC LIMIT 5
