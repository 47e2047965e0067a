-- The countdown's pool size as the leader last counted it, instead of a count(*) over the
-- queue's queued rows on every status read: clients poll player_status often, and at
-- 10,000 queued players each count costs about a millisecond of server time. The leader
-- recounts at every look at the queue (on each enqueue NOTIFY, debounced, and at least
-- every daemon.poll_interval), so the figure lags by well under a second while players
-- arrive.
ALTER TABLE queue_state
    ADD COLUMN pool_size integer NOT NULL DEFAULT 0,
    ADD COLUMN pool_counted_at timestamptz NULL;

CREATE OR REPLACE VIEW queue_countdown AS
SELECT s.queue,
       s.next_round_at,
       s.waiting_for,
       ceil(greatest(0, extract(epoch FROM s.next_round_at - now())))::integer
           AS seconds_to_next_round,
       s.pool_size,
       s.target_pool,
       -- How many more players would start the round early (NULL: no early start).
       greatest(0, s.target_pool - s.pool_size) AS players_missing_for_early_start,
       s.min_pool,
       s.players_per_match,
       s.schedule,
       s.last_round_id,
       s.last_round_at,
       s.pool_counted_at
  FROM queue_state s;
