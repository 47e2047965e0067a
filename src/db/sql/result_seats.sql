-- The players of the results $1: each seat's team, the login and player id its rating is
-- kept under, and whether the result says the player left early.
SELECT mp.match_id, mp.entry_id, mp.team, e.owner, e.player_id,
       mp.entry_id = ANY (r.left_early_entries) AS left_early
  FROM match_players mp
  JOIN queue_entries e ON e.entry_id = mp.entry_id
  JOIN match_results r ON r.match_id = mp.match_id
 WHERE mp.match_id = ANY ($1)
 ORDER BY mp.match_id, mp.team, mp.entry_id
