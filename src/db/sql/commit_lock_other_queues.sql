-- The candidate players' queued entries in other queues (same login and player id), each
-- with the pooled entry of its player and whether this commit now holds it (SKIP LOCKED:
-- a row another commit or a client call holds is not held).
-- $1 = the candidates' pooled entry ids, $2 = queue.
WITH pooled AS (
    SELECT entry_id, owner, player_id FROM queue_entries
     WHERE entry_id = ANY($1)),
elsewhere AS (
    SELECT o.entry_id, p.entry_id AS pooled FROM queue_entries o
      JOIN pooled p ON o.owner = p.owner AND o.player_id = p.player_id
     WHERE o.queue <> $2 AND o.status = 'queued'),
held AS (
    SELECT entry_id FROM queue_entries
     WHERE entry_id IN (SELECT entry_id FROM elsewhere) AND status = 'queued'
     ORDER BY entry_id
     FOR UPDATE SKIP LOCKED)
SELECT e.entry_id, e.pooled, h.entry_id IS NOT NULL AS held
  FROM elsewhere e LEFT JOIN held h USING (entry_id)
