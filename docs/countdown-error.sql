-- How far the countdown players were last shown was from the round that placed them,
-- per matched player, on any database a daemon runs on. Sample the countdown twice a
-- second while players come and go (psql's \watch; stop it with Ctrl-C or kill), then
-- run this file:
--
--   psql "$DATABASE_URL" -c 'CREATE TABLE IF NOT EXISTS countdown_samples AS
--       SELECT clock_timestamp() AS read_at, * FROM queue_countdown WITH NO DATA'
--   printf 'INSERT INTO countdown_samples SELECT clock_timestamp(), * FROM queue_countdown\n\\watch 0.5\n' \
--       | psql -q "$DATABASE_URL" >/dev/null &
--   ... the run ...
--   psql "$DATABASE_URL" -f docs/countdown-error.sql
--
-- The same measure as `matchmaker-lab peak` (population/src/shown_countdown.rs): the last
-- sample of the player's queue taken while they waited names the next moment a round can
-- run, the players it misses (counted from when the leader counted the pool) and the
-- latest moment it runs regardless; its round starts at that next moment once those
-- players arrived, or at the latest moment if that comes first. A running round is
-- theirs if they were in its pool. Players placed by an early start or a backfill round
-- are left out, and so are those whose countdown's condition was never met.
WITH placed AS (
    SELECT e.queue, e.enqueued_at, r.started_at
      FROM queue_entries e
      JOIN matches m ON m.match_id = e.match_id
      JOIN rounds r ON r.round_id = m.round_id
     WHERE r.trigger NOT IN ('pool_size', 'backfill')),
shown AS (
    SELECT p.*, s.read_at, s.next_round_at, s.waiting_for, s.players_missing,
           s.latest_round_at, s.round_started_at, s.pool_counted_at,
           CASE WHEN s.players_missing = 0 THEN coalesce(s.pool_counted_at, s.read_at)
                ELSE (SELECT a.enqueued_at FROM queue_entries a
                       WHERE a.queue = p.queue
                         AND a.enqueued_at > coalesce(s.pool_counted_at, s.read_at)
                       ORDER BY a.enqueued_at OFFSET s.players_missing - 1 LIMIT 1)
           END AS condition_met_at
      FROM placed p
      LEFT JOIN LATERAL (
          SELECT * FROM countdown_samples s
           WHERE s.queue = p.queue AND s.read_at >= p.enqueued_at
             AND s.read_at < p.started_at
           ORDER BY s.read_at DESC LIMIT 1) s ON true),
predicted AS (
    SELECT *,
           CASE WHEN waiting_for = 'round'
                THEN CASE WHEN enqueued_at <= round_started_at THEN round_started_at END
                -- least() skips a NULL: the latest moment alone when never met.
                ELSE least(CASE WHEN condition_met_at IS NOT NULL
                                THEN greatest(next_round_at, condition_met_at) END,
                           latest_round_at)
           END AS predicted_at
      FROM shown),
errors AS (
    SELECT queue, abs(extract(epoch FROM started_at - predicted_at)) AS error
      FROM predicted WHERE predicted_at IS NOT NULL)
SELECT coalesce(queue, 'all') AS queue,
       count(*) AS players_measured,
       round(percentile_disc(0.5) WITHIN GROUP (ORDER BY error)::numeric, 3) AS p50_s,
       round(percentile_disc(0.99) WITHIN GROUP (ORDER BY error)::numeric, 3) AS p99_s,
       round(max(error)::numeric, 3) AS max_s,
       count(*) FILTER (WHERE error > 1) AS over_1_s
  FROM errors
 GROUP BY ROLLUP (queue)
 ORDER BY queue;

-- And the players left out, by why.
SELECT count(*) FILTER (WHERE r.trigger IN ('pool_size', 'backfill')) AS early_start_or_backfill,
       count(*) FILTER (WHERE r.trigger NOT IN ('pool_size', 'backfill')
                          AND NOT EXISTS (
                              SELECT 1 FROM countdown_samples s
                               WHERE s.queue = e.queue AND s.read_at >= e.enqueued_at
                                 AND s.read_at < r.started_at)) AS never_sampled
  FROM queue_entries e
  JOIN matches m ON m.match_id = e.match_id
  JOIN rounds r ON r.round_id = m.round_id;
