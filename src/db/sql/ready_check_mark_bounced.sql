-- Players queued again because another login's player failed the ready check: bounced,
-- for the rounds to place first.
-- $1 = entry ids.
UPDATE queue_entries SET bounced_at = now()
 WHERE entry_id = ANY($1) AND status = 'queued'
