-- The window's matches: their score and, on dedicated servers, their region.
SELECT m.match_id, m.round_id, m.score, m.region
  FROM window_rounds r
  JOIN matches m ON m.round_id = r.round_id
 ORDER BY m.match_id
