-- Delete the ready check answers of pruned matches. SKIP LOCKED: an answer a client's
-- open transaction holds stays for a later batch.
-- $1 = match ids.
DELETE FROM ready_answers
 WHERE (match_id, entry_id) IN (
       SELECT match_id, entry_id FROM ready_answers
        WHERE match_id = ANY($1) FOR UPDATE SKIP LOCKED)
