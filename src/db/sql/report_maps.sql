-- Per queue and map of the window's matches ($1 the queue or NULL, $2 from, $3 to), queues
-- with maps only: the matches played on it, those on which a floor step had relaxed a
-- player's veto (every other match kept every veto of its players), and its seats, of
-- which those whose player's previous match of the window in the queue was on the same
-- map.
WITH seats AS (
    SELECT m.queue, m.map, m.match_id, m.map_vetoed_by,
           lag(m.map) OVER (PARTITION BY m.queue, e.owner, mp.player_id
                            ORDER BY m.match_id) AS previous_map
      FROM matches m
      JOIN match_players mp ON mp.match_id = m.match_id
      JOIN queue_entries e ON e.entry_id = mp.entry_id
     WHERE m.created_at >= $2 AND m.created_at < $3 AND m.map IS NOT NULL
       AND ($1::text IS NULL OR m.queue = $1))
SELECT queue, map,
       count(DISTINCT match_id) AS matches,
       count(DISTINCT match_id) FILTER (WHERE map_vetoed_by > 0) AS vetoes_relaxed,
       count(*) AS seats,
       count(*) FILTER (WHERE previous_map = map) AS replayed
  FROM seats
 GROUP BY queue, map
 ORDER BY queue, map
