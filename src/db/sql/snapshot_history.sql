-- The recent matches of a round's pooled players in queue $1 ($2 their logins, $4 their
-- player ids as the logins gave them), the last $3 of each: one row per past player,
-- with the login of its entry, in match, team, player order.
WITH recent AS (
    -- Each pooled player's last N matches in this queue: one row per player, oldest id
    -- first, read through the primary key of recent_matches (OFFSET 0: one index lookup
    -- per pooled player; a scan of the whole table, one row per player ever seen, would
    -- grow with the history).
    SELECT DISTINCT h.match_id
      FROM unnest($2::text[], $4::text[]) AS p(owner, player_id)
     CROSS JOIN LATERAL (
           SELECT r.match_ids FROM recent_matches r
            WHERE r.queue = $1 AND r.owner = p.owner
              AND r.player_id = p.player_id
           OFFSET 0) r
     CROSS JOIN LATERAL unnest(
           r.match_ids[greatest(cardinality(r.match_ids) - $3 + 1, 1):])
           AS h(match_id))
-- The login of each past player, through its entry (kept with its match), and the
-- match's map.
SELECT mp.match_id, mp.matched_at, mp.team, e.owner, mp.player_id, m.map
  FROM recent JOIN match_players mp USING (match_id)
  JOIN queue_entries e ON e.entry_id = mp.entry_id
  JOIN matches m ON m.match_id = mp.match_id
 ORDER BY mp.match_id, mp.team, mp.player_id, e.owner
