-- Every player the window's rounds placed, with their wait and what they enqueued with.
SELECT mp.match_id, mp.player_id, mp.team, mp.skill,
       extract(epoch FROM mp.matched_at - mp.enqueued_at)::float8 AS wait_s,
       -- The latencies and peer pings the player enqueued with: the solver's input for
       -- the match's ping.
       e.latencies, e.peer_pings
  FROM window_rounds r
  JOIN matches m ON m.round_id = r.round_id
  JOIN match_players mp ON mp.match_id = m.match_id
  JOIN queue_entries e ON e.entry_id = mp.entry_id
 ORDER BY mp.match_id, mp.team, mp.player_id
