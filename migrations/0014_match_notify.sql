-- 0014: a notification per committed match and per countdown move, on a channel per queue,
-- so that a game backend holding one LISTEN connection tells each player at once, instead
-- of polling player_status or reading every match after each matchmaker_round wake-up.
--
--   channel  queue_channel(queue): 'matchmaker:' || queue (a long queue name: shortened,
--            with a hash; see below). A client calls queue_channel() and LISTENs on the
--            answer, in double quotes: LISTEN "matchmaker:ranked_3v3".
--   match    one per committed match, sent by the round's commit inside its transaction
--            (delivered only if it commits, after its rows are visible):
--            {"event":"match","queue":"q","round_id":7,"match_id":42,"part":1,"parts":1,
--             "players":[{"player_id":"alice","team":0,"party_id":"crew","role":"tank"},..]}
--            party_id and role appear only when the player has one. Teams count from 0,
--            as in player_status. event "backfill" (same layout, the whole roster) is for
--            players added to a match that already exists.
--   countdown  one per change of a queue's next round time or of what it waits for
--            (a round, a reload, the pool reaching min_pool, the max-wait fallback), sent
--            by whoever writes queue_state, in its transaction:
--            {"event":"countdown","queue":"q","next_round_at":"2026-01-01T12:00:00.000000Z",
--             "seconds_to_next_round":12,"waiting_for":"schedule","cause":"round",
--             "round_id":7,"trigger":"pool_size"}
--            next_round_at / seconds_to_next_round are null while the queue waits for
--            players; cause: round (round_id, trigger: what started it, e.g. pool_size for
--            an early start), config (a reload), pool (players arrived or left), start
--            (the queue's first countdown).
--
-- Size: PostgreSQL refuses a payload of 8000 bytes or more (with the default 8 kB block
-- size). A match whose payload would not fit is sent as several notifications, "part" 1
-- to "parts", each with the same header and some of the players; each part is complete
-- for the players it names (their match and team). The largest match the core allows (16
-- players) with the longest ids (64 four-byte characters) fits in two parts. If even one
-- player does not fit beside the header (a queue name of thousands of characters), the
-- match is sent as {"event":"match","round_id":..,"match_id":..,"part":1,"parts":1,
-- "players_omitted":true}: read match_details for that match.
--
-- Privileges: LISTEN needs none, so matchmaker_client may listen on any channel; any
-- connected role may also NOTIFY on any channel (PostgreSQL has no privilege for it).
-- So a payload is a fast hint that names only ids, and a backend confirms a match in
-- match_details (which shows only matches of its own players) before acting on it.

-- ---- Channel -----------------------------------------------------------------------------
-- A channel name is an identifier: at most 63 bytes. 'matchmaker:' (11 bytes) + a queue
-- name of up to 52 bytes is used as is; a longer name becomes its first 40 letters,
-- digits, '_' and '-' (ASCII: 40 bytes) + '~' + the first 11 hex digits of its md5, so two
-- long names that share a beginning still get different channels.
CREATE FUNCTION queue_channel(queue text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN octet_length(queue) <= 52 THEN 'matchmaker:' || queue
                ELSE 'matchmaker:' || left(regexp_replace(queue, '[^A-Za-z0-9_-]', '', 'g'), 40)
                     || '~' || left(md5(queue), 11) END
$$;
COMMENT ON FUNCTION queue_channel(text) IS
    'The NOTIFY channel of a queue''s match and countdown notifications (LISTEN "<it>")';

-- ---- Match notifications ------------------------------------------------------------------
-- One notification (or several parts) per match of match_ids, built from the rows as
-- they are now in the calling transaction; returns how many notifications were sent.
-- Called by the round's commit (src/db/commit.rs) after its matches are written, so the
-- notifications leave at COMMIT or never. Not a trigger: the commit writes a round's
-- matches in one statement, isolates a failing row by savepoints, and knows which matches
-- stand; a backfill names the matches it extended.
CREATE FUNCTION matchmaker_notify_matches(match_ids bigint[], event text DEFAULT 'match')
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    -- PostgreSQL's NOTIFY_PAYLOAD_MAX_LENGTH: BLCKSZ - NAMEDATALEN - 128, exclusive.
    max_bytes constant integer := current_setting('block_size')::integer - 64 - 128 - 1;
    m record;
    head text;
    budget integer;
    piece text;
    parts text[];
    current text;
    fits boolean;
    sent integer := 0;
BEGIN
    IF event IS NULL OR event NOT IN ('match', 'backfill') THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('event = %s: must be match or backfill', quote_nullable(event));
    END IF;
    FOR m IN
        SELECT x.match_id, x.round_id, x.queue,
               -- One JSON object per player, written out by hand: compact (json_build_object
               -- puts spaces around every colon) and with the keys in a fixed order.
               array_agg(format('{"player_id":%s,"team":%s%s%s}',
                                to_json(mp.player_id), mp.team,
                                ',"party_id":' || to_json(mp.party_id),
                                ',"role":' || to_json(mp.role))
                         ORDER BY mp.team, mp.player_id) AS players
          FROM matches x
          JOIN match_players mp ON mp.match_id = x.match_id
         WHERE x.match_id = ANY (match_ids)
         GROUP BY x.match_id
         ORDER BY x.match_id
    LOOP
        head := format('{"event":%s,"queue":%s,"round_id":%s,"match_id":%s',
                       to_json(event), to_json(m.queue), m.round_id, m.match_id);
        -- What a part adds around its players, with part numbers as long as they can be.
        budget := max_bytes - octet_length(head)
                  - octet_length(',"part":,"parts":,"players":[]}')
                  - 2 * length(cardinality(m.players)::text);
        parts := '{}';
        current := NULL;
        fits := true;
        FOREACH piece IN ARRAY m.players LOOP
            IF octet_length(piece) > budget THEN
                fits := false;
                EXIT;
            END IF;
            IF current IS NULL THEN
                current := piece;
            ELSIF octet_length(current) + 1 + octet_length(piece) <= budget THEN
                current := current || ',' || piece;
            ELSE
                parts := parts || current;
                current := piece;
            END IF;
        END LOOP;
        IF NOT fits THEN
            PERFORM pg_notify(queue_channel(m.queue), format(
                '{"event":%s,"round_id":%s,"match_id":%s,"part":1,"parts":1,"players_omitted":true}',
                to_json(event), m.round_id, m.match_id));
            sent := sent + 1;
            CONTINUE;
        END IF;
        parts := parts || coalesce(current, '');
        FOR i IN 1 .. cardinality(parts) LOOP
            PERFORM pg_notify(queue_channel(m.queue), format(
                '%s,"part":%s,"parts":%s,"players":[%s]}',
                head, i, cardinality(parts), parts[i]));
            sent := sent + 1;
        END LOOP;
    END LOOP;
    RETURN sent;
END
$$;
COMMENT ON FUNCTION matchmaker_notify_matches(bigint[], text) IS
    'NOTIFY each match''s players on its queue''s channel (split in parts under the payload '
    'limit); the daemon calls it inside the commit that writes the matches';

-- ---- Countdown notifications --------------------------------------------------------------
CREATE FUNCTION matchmaker_notify_countdown() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    cause text;
    round_trigger text;
BEGIN
    cause := CASE
        WHEN TG_OP = 'INSERT' THEN 'start'
        WHEN NEW.last_round_id IS DISTINCT FROM OLD.last_round_id THEN 'round'
        WHEN NEW.config_hash IS DISTINCT FROM OLD.config_hash THEN 'config'
        ELSE 'pool' END;
    IF NEW.last_round_id IS NOT NULL AND cause IN ('start', 'round') THEN
        SELECT r.trigger INTO round_trigger FROM rounds r WHERE r.round_id = NEW.last_round_id;
    END IF;
    PERFORM pg_notify(queue_channel(NEW.queue), format(
        '{"event":"countdown","queue":%s,"next_round_at":%s,"seconds_to_next_round":%s,'
        '"waiting_for":%s,"cause":%s%s}',
        to_json(NEW.queue),
        coalesce(to_json(to_char(NEW.next_round_at AT TIME ZONE 'UTC',
                                 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text, 'null'),
        -- (greatest() skips a NULL: without the CASE a queue waiting for players would
        -- read 0 seconds.)
        CASE WHEN NEW.next_round_at IS NULL THEN 'null'
             ELSE ceil(greatest(0, extract(epoch FROM NEW.next_round_at - now())))::text END,
        to_json(NEW.waiting_for), to_json(cause),
        CASE WHEN cause = 'round'
             THEN format(',"round_id":%s,"trigger":%s', NEW.last_round_id,
                         coalesce(to_json(round_trigger)::text, 'null')) END));
    RETURN NULL;
END
$$;

-- The leader rewrites its queue_state row whenever the pool size changes; only a change
-- of the countdown itself is worth a notification.
CREATE TRIGGER queue_state_notify_countdown_insert
    AFTER INSERT ON queue_state
    FOR EACH ROW EXECUTE FUNCTION matchmaker_notify_countdown();
CREATE TRIGGER queue_state_notify_countdown_update
    AFTER UPDATE ON queue_state
    FOR EACH ROW
    WHEN (OLD.next_round_at IS DISTINCT FROM NEW.next_round_at
          OR OLD.waiting_for IS DISTINCT FROM NEW.waiting_for)
    EXECUTE FUNCTION matchmaker_notify_countdown();

-- ---- Privileges ---------------------------------------------------------------------------
REVOKE ALL ON FUNCTION queue_channel(text), matchmaker_notify_matches(bigint[], text),
                       matchmaker_notify_countdown()
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queue_channel(text)
    TO matchmaker_client, matchmaker_daemon, matchmaker_ops;
-- The trigger runs as the writer of queue_state (the daemon): it calls queue_channel.
GRANT EXECUTE ON FUNCTION matchmaker_notify_matches(bigint[], text) TO matchmaker_daemon;
