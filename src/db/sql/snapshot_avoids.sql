-- The unexpired avoids of the players ($1 logins, $2 player ids), each player's newest
-- $3, newest first: (owner, player_id, avoided_player_id). One statement for the whole
-- pool (a hash join on the players, not a look-up per player).
WITH pooled AS (
    SELECT DISTINCT owner, player_id
      FROM unnest($1::text[], $2::text[]) AS p(owner, player_id)),
ranked AS (
    -- The avoided id breaks ties between avoids made at the same instant.
    SELECT a.owner, a.player_id, a.avoided_player_id,
           row_number() OVER (PARTITION BY a.owner, a.player_id
                              ORDER BY a.created_at DESC, a.avoided_player_id) AS n
      FROM avoids a JOIN pooled USING (owner, player_id)
     WHERE a.expires_at IS NULL OR a.expires_at > now())
SELECT owner, player_id, avoided_player_id FROM ranked
 WHERE n <= $3
 ORDER BY owner, player_id, n
