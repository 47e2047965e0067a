-- 0020: matchmaker_notify_matches() (0014) builds the notifications of a round's matches
-- in one statement instead of a PL/pgSQL loop over every match and player: at 10,000
-- players (about 1,600 matches) the loop cost the round's commit about 80 ms. Same
-- payloads, same channels, same return value. A match whose roster does not fit one
-- notification (ids near their 64-character limit in a 16-player match) still goes
-- through 0014's loop, now matchmaker_notify_matches_in_parts(). The notifications of
-- one call are sent in match_id order, those in parts after the others.

-- 0014's body, for the matches that need parts.
ALTER FUNCTION matchmaker_notify_matches(bigint[], text)
    RENAME TO matchmaker_notify_matches_in_parts;
COMMENT ON FUNCTION matchmaker_notify_matches_in_parts(bigint[], text) IS
    'matchmaker_notify_matches() for matches whose roster needs several notifications '
    '(0014''s loop: split in parts under the payload limit)';

CREATE FUNCTION matchmaker_notify_matches(match_ids bigint[], event text DEFAULT 'match')
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    -- PostgreSQL's NOTIFY_PAYLOAD_MAX_LENGTH: BLCKSZ - NAMEDATALEN - 128, exclusive.
    max_bytes constant integer := current_setting('block_size')::integer - 64 - 128 - 1;
    sent integer;
    long bigint[];
BEGIN
    IF event IS NULL OR event NOT IN ('match', 'backfill') THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('event = %s: must be match or backfill', quote_nullable(event));
    END IF;
    WITH payloads AS MATERIALIZED (
        SELECT x.match_id, x.queue,
               format('{"event":%s,"queue":%s,"round_id":%s,"match_id":%s,"part":1,"parts":1,"players":[',
                      to_json(event), to_json(x.queue), x.round_id, x.match_id)
               -- One JSON object per player, written out by hand as 0014 does: compact
               -- and with the keys in a fixed order.
               || string_agg(format('{"player_id":%s,"team":%s%s%s}',
                                    to_json(mp.player_id), mp.team,
                                    ',"party_id":' || to_json(mp.party_id),
                                    ',"role":' || to_json(mp.role)),
                             ',' ORDER BY mp.team, mp.player_id)
               || ']}' AS payload
          FROM matches x
          JOIN match_players mp ON mp.match_id = x.match_id
         WHERE x.match_id = ANY (match_ids)
         GROUP BY x.match_id)
    SELECT
        -- pg_notify() is volatile: called once per row, after the ORDER BY.
        (SELECT count(*)
           FROM (SELECT pg_notify(queue_channel(p.queue), p.payload)
                   FROM payloads p
                  WHERE octet_length(p.payload) <= max_bytes
                  ORDER BY p.match_id) AS s),
        (SELECT array_agg(p.match_id ORDER BY p.match_id)
           FROM payloads p
          WHERE octet_length(p.payload) > max_bytes)
      INTO sent, long;
    IF long IS NOT NULL THEN
        sent := sent + matchmaker_notify_matches_in_parts(long, event);
    END IF;
    RETURN sent;
END
$$;
COMMENT ON FUNCTION matchmaker_notify_matches(bigint[], text) IS
    'NOTIFY each match''s players on its queue''s channel (split in parts under the payload '
    'limit); the daemon calls it inside the commit that writes the matches';

-- As 0014: the daemon's alone (the renamed function keeps 0014's grants).
REVOKE ALL ON FUNCTION matchmaker_notify_matches(bigint[], text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION matchmaker_notify_matches(bigint[], text) TO matchmaker_daemon;
