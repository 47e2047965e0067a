-- The pool of one round of queue $1: at most $2 queued, live entries, each login's
-- oldest in turn, a party whole; entries left over the same futile way for the last $3
-- rounds come after all the others. Run in the snapshot's REPEATABLE READ transaction.
-- An entry enqueued at its rating (rated) plays at the rating as it is now: results
-- applied since the enqueue count. bounced: queued again after another login's player
-- failed their match's ready check.
WITH horizon AS (
    -- The queue's $3-th latest round: an entry left over the same futile way since then
    -- has been so for that many rounds.
    SELECT (SELECT round_id FROM rounds WHERE queue = $1
             ORDER BY round_id DESC OFFSET $3 - 1 LIMIT 1) AS round_id),
queued AS (
    SELECT e.entry_id, e.party_key, e.party_id, e.enqueued_at,
           coalesce(e.left_over IN ('no_host', 'no_valid_match')
                    AND e.left_over_since <= h.round_id, false) AS sits_out,
           row_number() OVER (PARTITION BY e.owner
                              ORDER BY e.enqueued_at, e.entry_id) AS turn
      FROM queue_entries e, horizon h
     WHERE e.queue = $1 AND e.status = 'queued' AND e.expires_at > now()),
oldest AS (
    -- Each login's oldest in turn, oldest first within a turn: who waited longest gets
    -- into a capped round, and no login takes more than its share while others wait.
    -- Entries no round could take lately go last.
    SELECT entry_id, party_key, party_id
      FROM queued
     ORDER BY sits_out, turn, enqueued_at, entry_id
     LIMIT $2),
pool AS (
    -- JSON as text: the round parses each row apart, so a value that does not fit
    -- rejects that row only.
    SELECT entry_id, player_id, owner, party_id, skill, skill_sigma, rated,
           latencies::text AS latencies, peer_pings::text AS peer_pings,
           roles, side, enqueued_at, party_key, party_size,
           attributes::text AS attributes, bounced_at IS NOT NULL AS bounced
      FROM queue_entries
     WHERE queue = $1 AND status = 'queued' AND expires_at > now()
       AND (entry_id IN (SELECT entry_id FROM oldest)
            -- A party is never split across rounds by the size cap: its members beyond
            -- the cap come along (the round may exceed the cap by them). (A party is one
            -- enqueue_party call; rows written without one, by hand, go by their
            -- party_id.)
            OR party_key IN (SELECT party_key FROM oldest WHERE party_key IS NOT NULL)
            OR (party_key IS NULL
                AND party_id IN (SELECT party_id FROM oldest
                                  WHERE party_key IS NULL AND party_id IS NOT NULL)))
     -- SKIP LOCKED: a row locked right now is being cancelled by its client (or written
     -- by a stale leader's commit); it is not ours to take, and the snapshot never waits
     -- for a client. The lock itself ends with this short transaction: nothing stays
     -- locked while the solver runs.
     FOR UPDATE SKIP LOCKED),
rated AS (
    SELECT p.entry_id, c.rating, c.uncertainty
      FROM pool p
      JOIN rating_pools rp ON rp.pool = (SELECT rating_pool FROM queues WHERE queue = $1)
     CROSS JOIN LATERAL matchmaker_current_rating(rp, p.owner, p.player_id) c
     WHERE p.rated)
SELECT p.entry_id, p.player_id, p.owner, p.party_id,
       coalesce(r.rating, p.skill) AS skill,
       CASE WHEN r.entry_id IS NULL THEN p.skill_sigma ELSE r.uncertainty END AS skill_sigma,
       p.latencies, p.peer_pings, p.roles, p.side, p.enqueued_at, p.party_key, p.party_size,
       p.attributes, p.bounced
  FROM pool p
  LEFT JOIN rated r USING (entry_id)
 ORDER BY p.enqueued_at, p.entry_id
