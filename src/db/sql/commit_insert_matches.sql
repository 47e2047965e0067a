-- Write matches in one statement: the matches, then their players, whose own values come
-- from their rows (skill, party, enqueue time). A match_players row is made from the
-- entry row this statement moves (only a row still queued), under a match id it
-- inserts: the links hold by construction, without a foreign key check per player.
-- Each player's row of recent_matches gets the new match id, the oldest beyond the
-- queue's depth dropped: an update in place (HOT: no indexed column changes), so a
-- player who has played before adds no index key; only a first match inserts one.
-- A match pending its ready check is in nobody's history until it is ready (a cancelled
-- match never is): ready_check_record_history writes it then. A fill (its session runs)
-- has no ready check.
-- $1 = the players' match ids, $2 = their entry ids, $3 = their teams, $4 = their
-- roles, $5 = round id, $6 = committed_at, $7 = the matches' ids, $8 = queue,
-- $9 = scores, $10 = factors, $11 = regions, $12 = hosts (JSON arrays), $13 = host
-- player ids, $14 = backup host player ids, $15 = the history depth (matches kept per
-- player), $16 = whether each match waits for its ready check, $17 = seconds to answer
-- it, $18 = the ids of the matches that wait, $19 = relay, $20 = the players' win
-- probabilities, $21 = the players' skills as the round played them, $22 = maps,
-- $23 = map_vetoed_by. The players' arrays hold one element a player, the matches' one
-- a match.
WITH new_matches AS (
    INSERT INTO matches (match_id, round_id, queue, created_at, score, factors,
                         region, hosts, host_player_id, backup_host_player_id,
                         relay, status, answer_by, map, map_vetoed_by)
    OVERRIDING SYSTEM VALUE
    SELECT u.id, $5, $8, $6, u.score, u.factors, u.region,
           ARRAY(SELECT jsonb_array_elements_text(u.hosts)), u.host, u.backup,
           u.relay,
           CASE WHEN u.pending THEN 'pending' ELSE 'ready' END,
           -- The database's clock, which accept_match compares against.
           CASE WHEN u.pending THEN now() + make_interval(secs => $17) END,
           u.map, u.map_vetoed_by
      FROM unnest($7::bigint[], $9::float8[], $10::jsonb[], $11::text[], $12::jsonb[],
                  $13::text[], $14::text[], $16::bool[], $19::boolean[], $22::text[],
                  $23::int[])
           AS u(id, score, factors, region, hosts, host, backup, pending, relay, map,
                map_vetoed_by)),
placed AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[],
                         $20::float8[], $21::float8[])
             AS u(match_id, entry_id, team, role, win_probability, skill)),
matched AS (
    UPDATE queue_entries e
       SET status = 'matched', round_id = $5, match_id = placed.match_id,
           team = placed.team, role = placed.role, updated_at = $6
      FROM placed
     WHERE e.entry_id = placed.entry_id AND e.status = 'queued'
 RETURNING e.*),
recorded AS (
    INSERT INTO match_players (match_id, entry_id, queue, player_id, party_id,
                               team, role, skill, enqueued_at, matched_at,
                               win_probability)
    SELECT m.match_id, m.entry_id, m.queue, m.player_id, m.party_id, m.team,
           -- The skill the round played the player at (a rated entry's
           -- rating as the snapshot read it).
           m.role, coalesce(placed.skill, m.skill), m.enqueued_at, $6,
           placed.win_probability
      FROM matched m
      JOIN placed USING (entry_id)
 RETURNING entry_id, match_id)
INSERT INTO recent_matches AS r (queue, owner, player_id, match_ids)
SELECT m.queue, m.owner, m.player_id, ARRAY[recorded.match_id]
  FROM recorded JOIN matched m USING (entry_id)
 WHERE $15 > 0 AND recorded.match_id <> ALL($18)
 ORDER BY m.queue, m.owner, m.player_id
    ON CONFLICT (queue, owner, player_id) DO UPDATE
       -- The last $15 of the old ids and the new one (match ids ascend).
       SET match_ids = (r.match_ids || EXCLUDED.match_ids)
                       [greatest(cardinality(r.match_ids) + 2 - $15, 1):]
