-- Per round of the window, its opponent pairs and how many of them had met in the
-- player's previous match (as opponents, or as teammates). Follows `window_rounds`.
,
placed AS (
    SELECT r.round_id, mp.queue, mp.match_id, mp.entry_id, mp.player_id, mp.team
      FROM window_rounds r
      JOIN matches m ON m.round_id = r.round_id
      JOIN match_players mp ON mp.match_id = m.match_id),
-- Each placed player's match before this one in the same queue (the Awesomenauts post's
-- opponent variation looks one match back), found once per player rather than once per
-- pair, through the player's entries (queue_entries_player_latest): a player has one
-- queued entry per queue at a time, so their entries in a queue are in the order of
-- their matches. It may lie before the window.
previous AS (
    SELECT p.*, pm.match_id AS prev_match, pm.team AS prev_team
      FROM placed p
      LEFT JOIN LATERAL (
            SELECT x.match_id, x.team FROM queue_entries x
             WHERE x.player_id = p.player_id AND x.entry_id < p.entry_id
               AND x.queue = p.queue AND x.status = 'matched'
             ORDER BY x.entry_id DESC
             LIMIT 1) pm ON true),
-- Every (player, opponent) pair of the round, and the team the opponent had in the
-- player's previous match (NULL: not in it).
pairs AS (
    SELECT pr.round_id, pr.prev_team, o.team AS opponent_prev_team
      FROM previous pr
      JOIN match_players b ON b.match_id = pr.match_id AND b.team <> pr.team
      LEFT JOIN match_players o
             ON o.match_id = pr.prev_match AND o.player_id = b.player_id)
SELECT round_id, count(*) AS opponent_pairs,
       count(*) FILTER (WHERE opponent_prev_team <> prev_team) AS opponents_again,
       count(*) FILTER (WHERE opponent_prev_team = prev_team) AS teammates_before
  FROM pairs
 GROUP BY round_id
 ORDER BY round_id
