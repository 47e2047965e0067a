-- Notifications: the channels that wake the daemon and tell clients, and the one way
-- every later concern sends on them, matchmaker_notify(): an enqueue or a backfill request
-- wakes the queue's leader (0003, 0007), a committed round and its matches tell the
-- logins of their players (0005), a moving countdown tells the logins waiting in the
-- queue (0006), an answer to a ready check wakes the leader (0009).
--


-- NOTIFY only wakes listeners earlier; the daemon and clients also poll, so a lost
-- notification delays, never loses. Notifications are sent at COMMIT, so a listener never
-- sees a row that is not there yet. Every one goes through matchmaker_notify(), which
-- sends nothing while PostgreSQL's notification queue is past its limit (below): a full
-- queue fails every transaction that notifies, and enqueues and round commits must not
-- depend on it.
--
--   matchmaker_enqueue   payload: the queue. An enqueue (or a backfill request) wakes the
--                        queue's leader.
--   matchmaker_round     payload: {"queue", "round_id", "match_count", "matched"}. A round
--                        committed: wakes clients or a gateway waiting for assignments.
--   queue_channel(queue) per login and queue: the calling login's own channel, so that a
--                        game backend holding one LISTEN connection tells each of its
--                        players at once, instead of polling player_status. It carries
--                        only what concerns the login's players (and a game server's
--                        backfill requests): another login can neither work out its name
--                        nor read or send on it (channel_key).
--     match      one per committed match holding a player of the login, sent by the
--                round's commit inside its transaction (the whole roster, as
--                match_details shows it):
--                {"event":"match","queue":"q","round_id":7,"match_id":42,"part":1,"parts":1,
--                 "players":[{"player_id":"alice","team":0,"party_id":"crew","role":"tank"},..]}
--                "relay":true follows match_id when nobody in the match can host it (the
--                game backend routes it through its relay; absent otherwise).
--                party_id and role appear only when the player has one. Teams count from
--                0, as in player_status. event "backfill" (same layout, the whole roster)
--                is for players added to a match that already exists, sent to the
--                players' logins and to the login that asked for the backfill.
--     ready_check  a match of a queue with a ready check, pending: the "match" layout
--                plus "answer_by" (the time to accept_match by). Then, once:
--     ready      every player accepted (the "match" layout): the match is final;
--     cancelled  {"event":"cancelled","queue":"q","match_id":42,"reason":"...",
--                 "requeued":["alice",..],"declined":["bob",..]}: the login's players of
--                the match, queued again with their original enqueue time, or declined
--                ("players_omitted":true instead of both lists when they do not fit;
--                read player_status).
--     countdown  one per change of a queue's next round time or of what it waits for (a
--                round, a reload, the pool reaching min_pool, the max-wait fallback), sent
--                by whoever writes queue_state, in its transaction, to every login with
--                a player queued in the queue (a login with none reads queue_countdown):
--                {"event":"countdown","queue":"q","next_round_at":"2026-01-01T12:00:00.000000Z",
--                 "seconds_to_next_round":12,"waiting_for":"schedule","cause":"round",
--                 "players_missing":0,"latest_round_at":"2026-01-01T12:00:00.000000Z",
--                 "seconds_to_latest_round":12,"round_started_at":null,
--                 "round_id":7,"trigger":"pool_size"}
--                The fields mean what they mean in queue_countdown: seconds_to_next_round
--                is 0 once the tick has passed and the round waits for players_missing
--                more; next_round_at / seconds_to_next_round are null while a round runs
--                (waiting_for "round", since round_started_at); latest_round_at /
--                seconds_to_latest_round are null when unknown. cause: round (round_id,
--                trigger: what started it, e.g. pool_size for an early start), round_start
--                (a round started), config (a reload), pool (players arrived or left),
--                start (the queue's first countdown).
--
-- A match too large for one notification comes in parts (0005, matchmaker_notify_matches).
--
-- Privileges: LISTEN and NOTIFY take none: any login may listen or send on any channel
-- whose name it knows. A login's queue channels are named by a hash of a secret key
-- (channel_key), the login and the queue, so no other login knows them; the shared
-- channels (matchmaker_enqueue, matchmaker_round) carry no player. A payload is still a
-- fast hint that names only ids: a backend confirms a match in match_details before
-- acting on it.
--
-- The queue's limit: PostgreSQL's notification queue (8 GB) holds every notification
-- until each listening session has read it, so one session that listens and then stays
-- inside a transaction keeps it growing; full, it fails every COMMIT of a transaction
-- that notifies. matchmaker_notify() sends nothing once the queue is past
-- matchmaker.notify_queue_limit (a fraction, default 0.5; set it per database or role)
-- and the daemon reports the queue's usage (docs/operations.md, "Notifications").

-- ---- channel_key: what makes a login's notification channels its own -------------------
-- A login's channel for a queue is named by a hash of this key, the login and the queue
-- (matchmaker_login_channel): LISTEN takes no privilege, so a channel name another login
-- could work out would let it read this login's matches, or send it false ones. Random,
-- made by the migration; only the schema's owner reads it. Replacing it (UPDATE
-- channel_key SET key = ...) moves every login to new channels: clients ask
-- queue_channel() again when they reconnect.
CREATE TABLE channel_key (
    only_row boolean PRIMARY KEY DEFAULT true CONSTRAINT channel_key_has_one_row CHECK (only_row),
    key      text NOT NULL
);
-- gen_random_uuid() draws from PostgreSQL's strong random source: 244 random bits.
INSERT INTO channel_key (key) VALUES (gen_random_uuid()::text || gen_random_uuid()::text);
COMMENT ON TABLE channel_key IS
    'The secret in each login''s notification channel names (matchmaker_login_channel)';

-- ---- Sending ----------------------------------------------------------------------------
-- The limit as set, or 0.5 when unset or not a fraction: a bad setting must not fail
-- every notifying transaction.
CREATE FUNCTION matchmaker_notify_queue_limit() RETURNS double precision
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN v ~ '^\s*(0(\.[0-9]*)?|1(\.0*)?|\.[0-9]+)\s*$' THEN v::double precision
                ELSE 0.5 END
      FROM coalesce(current_setting('matchmaker.notify_queue_limit', true), '') AS v
$$;
COMMENT ON FUNCTION matchmaker_notify_queue_limit() IS
    'The notification queue usage past which matchmaker_notify() sends nothing '
    '(matchmaker.notify_queue_limit, default 0.5)';

-- Whether the notification queue is below its limit: notifications may be sent.
CREATE FUNCTION matchmaker_notify_open() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT pg_notification_queue_usage() < matchmaker_notify_queue_limit()
$$;
COMMENT ON FUNCTION matchmaker_notify_open() IS
    'Whether PostgreSQL''s notification queue is below matchmaker.notify_queue_limit';

-- pg_notify(channel, payload), unless the notification queue is past its limit; returns
-- whether it sent. Past the limit listeners get nothing and poll, as for any lost
-- notification, while enqueues and rounds commit.
CREATE FUNCTION matchmaker_notify(channel text, payload text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT matchmaker_notify_open() THEN
        RETURN false;
    END IF;
    PERFORM pg_notify(channel, payload);
    RETURN true;
END
$$;
COMMENT ON FUNCTION matchmaker_notify(text, text) IS
    'pg_notify() unless the notification queue is past matchmaker.notify_queue_limit';

-- A login's channel for a queue: 'matchmaker:' and 40 hex digits of the SHA-256 of the
-- key, the login (with its length, so that no two pairs of login and queue read alike)
-- and the queue. 51 bytes: within a channel name's 63.
CREATE FUNCTION matchmaker_login_channel(login text, queue text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT 'matchmaker:' || left(encode(sha256(convert_to(
               format('%s:%s:%s:%s', k.key, length(login), login, queue), 'UTF8')), 'hex'), 40)
      FROM channel_key k
$$;
COMMENT ON FUNCTION matchmaker_login_channel(text, text) IS
    'The notification channel of a login''s players in a queue (the daemon''s; clients '
    'call queue_channel)';

-- ---- A login's channel of a queue -----------------------------------------------------
-- A client calls queue_channel() and LISTENs on the answer, in double quotes:
-- LISTEN "matchmaker:3f2a...". The name is the calling login's own
-- (matchmaker_login_channel): each login asks for it, nobody builds it.
CREATE FUNCTION queue_channel(queue text) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF queue IS NULL OR queue = '' THEN
        PERFORM matchmaker_refuse('queue', quote_nullable(queue), 'is required (a queue''s name)');
    END IF;
    RETURN matchmaker_login_channel(session_user, queue);
END
$$;
COMMENT ON FUNCTION queue_channel(text) IS
    'The calling login''s NOTIFY channel for a queue''s match and countdown notifications '
    '(LISTEN "<it>")';

-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON channel_key FROM PUBLIC;
REVOKE ALL ON FUNCTION
    matchmaker_notify_queue_limit(),
    matchmaker_notify_open(),
    matchmaker_notify(text, text),
    matchmaker_login_channel(text, text),
    queue_channel(text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queue_channel(text)
    TO matchmaker_client, matchmaker_daemon, matchmaker_ops, matchmaker_server;
-- The triggers on queue_entries, rounds and queue_state run as their writer: the daemon,
-- or a client function's owner. channel_key stays the owner's: the daemon names a login's
-- channel through matchmaker_login_channel.
GRANT EXECUTE ON FUNCTION matchmaker_notify(text, text),
                          matchmaker_notify_open(),
                          matchmaker_notify_queue_limit(),
                          matchmaker_login_channel(text, text)
    TO matchmaker_daemon;
GRANT EXECUTE ON FUNCTION matchmaker_notify_queue_limit() TO matchmaker_ops;
