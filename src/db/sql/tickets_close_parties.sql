-- Close the queued entries of queue $1 whose party lost a member: the first member gone
-- (by entry id) names the reason. Matched or withdrawn members mean the party plays
-- elsewhere: the rest is withdrawn; otherwise the rest shares the member's fate.
WITH broken AS (
    SELECT e.entry_id, gone.player_id, gone.status, gone.queue, gone.match_id
      FROM queue_entries e
     CROSS JOIN LATERAL (
           SELECT m.player_id, m.status, m.queue, m.match_id
             FROM (SELECT g.entry_id, g.player_id, g.status, g.queue, g.match_id
                     FROM queue_entries g
                    WHERE g.party_key = e.party_key AND g.status <> 'queued'
                   -- The fence (OFFSET 0) finds the party's few rows through
                   -- queue_entries_party, then sorts them. Without it the planner walked
                   -- the primary key in entry_id order for the first match, a scan of
                   -- the whole table per queued party member (70 ms each at 55,000
                   -- rows): a tidy of 29 s that held a round back as long.
                   OFFSET 0) m
            ORDER BY m.entry_id LIMIT 1) gone
     WHERE e.queue = $1 AND e.status = 'queued' AND e.party_key IS NOT NULL
       FOR UPDATE OF e SKIP LOCKED)
UPDATE queue_entries e
   SET status = CASE WHEN b.status IN ('matched', 'withdrawn') THEN 'withdrawn'
                     ELSE b.status END,
       match_id = CASE WHEN b.status IN ('matched', 'withdrawn') THEN b.match_id END,
       updated_at = now(),
       reject_reason = CASE
           WHEN b.status IN ('matched', 'withdrawn')
               THEN format('party member %s was matched in queue %s (match %s)',
                           b.player_id, b.queue, b.match_id)
           ELSE format('party member %s is %s', b.player_id, b.status) END
  FROM broken b
 WHERE e.entry_id = b.entry_id
