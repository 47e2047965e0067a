-- The rounds of a report's window, the first common table of every report query ($1 the
-- queue or NULL for every queue, $2 from, $3 to): half-open, so consecutive reports
-- never count a round twice. `rounds_by_queue_latest` does not cover committed_at, but a
-- report reads a window's worth of rounds once, so a scan of `rounds` (one row per
-- round) is fine.
WITH window_rounds AS (
    SELECT * FROM rounds
     WHERE ($1::text IS NULL OR queue = $1)
       AND committed_at >= $2 AND committed_at < $3)
