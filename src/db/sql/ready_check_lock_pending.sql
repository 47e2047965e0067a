-- The queue's pending matches, locked, each with whether its answer_by passed. SKIP
-- LOCKED: a match a client is answering right now waits for the next look.
-- $1 = queue.
SELECT match_id, answer_by <= now() FROM matches
 WHERE queue = $1 AND status = 'pending'
 ORDER BY match_id
 FOR UPDATE SKIP LOCKED
