-- Entries of the queue with an id above the mark, and the highest such id of any queue
-- (NULL: none).
-- $1 = queue, $2 = the mark (an entry id).
SELECT count(*) FILTER (WHERE queue = $1), max(entry_id) FROM queue_entries
 WHERE entry_id > $2
