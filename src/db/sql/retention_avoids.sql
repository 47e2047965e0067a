-- One batch ($1 rows at most) of expired avoids, of every queue (avoids are per login,
-- not per queue), the longest expired first.
DELETE FROM avoids WHERE (owner, player_id, avoided_player_id) IN (
    SELECT a.owner, a.player_id, a.avoided_player_id FROM avoids a
     WHERE a.expires_at <= now()
     ORDER BY a.expires_at
     LIMIT $1
     FOR UPDATE SKIP LOCKED)
