-- Game servers: the supply a dedicated-server match is placed on.
--
-- A game server (its login a member of matchmaker_server) announces itself free to host
-- one match with server_ready() and withdraws with server_gone(). In a queue with
-- [queues.NAME.servers] required = true, each round reads how many servers of each region
-- are ready (announced within the queue's ttl), forms no more matches in a region than it
-- can place there (moving a match to another region where its players' pings allow, or
-- leaving its players queued, reason no_server), and its commit allocates one ready server
-- to each match it writes, in the same transaction: a server hosts one match at a time,
-- and a match is written with its server or not at all. The server's login hears the
-- allocation with the roster on its queue channel (0002), as players' logins hear their
-- match; a match cancelled by its ready check gives its server back.
--
-- The server API:
--   server_ready(server_id, region, address, ended_match)  -> 'ready' or 'allocated'
--   server_gone(server_id)                                 -> whether it was known
-- Operators read the supply in server_fleet.


-- ---- servers: the game servers that announced themselves --------------------------------
-- Server ids belong to the login that sends them, as player ids do: (owner, server_id)
-- names a server. A withdrawn server's row is deleted; a crashed server's row stays and
-- simply ages out of the ttl.
CREATE TABLE servers (
    owner        text NOT NULL DEFAULT session_user,
    server_id    text NOT NULL,
    region       text NOT NULL,
    -- Where players connect (host:port, or whatever the game's clients read).
    address      text NOT NULL,
    -- ready: free to host one match; allocated: hosting match_id until it announces
    -- itself ready again, naming that match.
    status       text NOT NULL
        CONSTRAINT server_status_must_be_known CHECK (status IN ('ready', 'allocated')),
    -- The last server_ready(): a ready server older than a queue's ttl is not used.
    announced_at timestamptz NOT NULL,
    -- When it last became free: the time to its next allocation is how long supply sat idle.
    ready_since  timestamptz NOT NULL,
    match_id     bigint NULL,
    allocated_at timestamptz NULL,
    PRIMARY KEY (owner, server_id),
    CONSTRAINT allocated_server_has_a_match
        CHECK ((status = 'allocated') = (match_id IS NOT NULL))
);
COMMENT ON TABLE servers IS
    'Game servers announced by server logins (server_ready / server_gone); allocated by the '
    'daemon''s round commits';
-- The round's supply and the commit's allocation: the ready servers of a region.
CREATE INDEX servers_ready ON servers (region, announced_at DESC) WHERE status = 'ready';
-- One server per match: the last line behind the commit.
CREATE UNIQUE INDEX servers_one_per_match ON servers (match_id) WHERE match_id IS NOT NULL;

-- The match's server, as the commit allocated it (kept after the server is gone).
ALTER TABLE matches
    ADD COLUMN server_owner    text NULL,
    ADD COLUMN server_id       text NULL,
    ADD COLUMN server_address  text NULL,
    -- When the server had become free: created_at - server_ready_at is how long it waited.
    ADD COLUMN server_ready_at timestamptz NULL,
    ADD CONSTRAINT match_server_is_whole
        CHECK ((server_id IS NULL) = (server_owner IS NULL)
               AND (server_id IS NULL) = (server_address IS NULL));
COMMENT ON COLUMN matches.server_id IS
    'The game server allocated to the match ([queues.NAME.servers] required), with '
    'server_owner (its login) and server_address';

-- What a round of a queue that requires servers saw: ready servers per region, so that
-- replay places the matches as the round did.
ALTER TABLE round_snapshots ADD COLUMN servers jsonb NULL;
COMMENT ON COLUMN round_snapshots.servers IS
    'Queues that require servers: the ready servers per region the round saw '
    '({"eu-west": 3}); NULL otherwise';
-- Matches the round formed but could not place for want of a server (their players stay
-- queued, left over as no_server).
ALTER TABLE rounds ADD COLUMN no_server_matches integer NOT NULL DEFAULT 0;

-- The ttl of a queue that requires servers ([queues.NAME.servers]), published by its
-- leader: server_fleet judges a server silent by the shortest.
ALTER TABLE queues ADD COLUMN server_ttl interval NULL;
COMMENT ON COLUMN queues.server_ttl IS
    'A queue that requires servers: a ready server announced longer ago than this is not used';

-- Most servers one login may have announced: a fleet is thousands, not millions.
CREATE FUNCTION matchmaker_max_servers_per_login() RETURNS integer
LANGUAGE sql IMMUTABLE AS 'SELECT 10000';

-- ---- server_ready: a server is free to host one match -----------------------------------
-- Called when the server starts, again periodically within the queues' ttl (a crashed
-- server stops being used once its last announcement is older), and when its match ends,
-- naming that match (ended_match): the same server, free again. A server that is
-- allocated stays allocated until it names its match: a periodic announcement crossing
-- an allocation must not free a server that is about to host. Returns the server's
-- status after the call: 'ready', or 'allocated' (its match has not been named as ended).
-- Refuses: a bad server_id or address; a region that no active queue lists; a
-- login's server past matchmaker_max_servers_per_login().
CREATE FUNCTION server_ready(server_id text, region text, address text,
                             ended_match bigint DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    s servers;
BEGIN
    PERFORM matchmaker_check_id('server_id', server_id);
    PERFORM matchmaker_check_id('region', region);
    IF address IS NULL OR address = '' OR length(address) > 255
       OR address ~ '[[:cntrl:]]' THEN
        PERFORM matchmaker_refuse('address', quote_nullable(address),
                                  'is required: 1-255 characters, no control characters');
    END IF;
    IF NOT EXISTS (SELECT 1 FROM queues q
                    WHERE q.active AND q.network = 'dedicated' AND region = ANY (q.regions)) THEN
        PERFORM matchmaker_refuse('region', quote_literal(region),
            format('is not a region of any active dedicated-server queue (%s)',
                   coalesce((SELECT string_agg(DISTINCT r, ', ' ORDER BY r)
                               FROM queues q, unnest(q.regions) r
                              WHERE q.active AND q.network = 'dedicated'), 'none')));
    END IF;

    SELECT x.* INTO s FROM servers x
     WHERE x.owner = session_user AND x.server_id = server_id
       FOR UPDATE;
    IF NOT FOUND THEN
        IF (SELECT count(*) FROM servers x WHERE x.owner = session_user)
           >= matchmaker_max_servers_per_login() THEN
            PERFORM matchmaker_refuse('server_id', quote_literal(server_id),
                format('this login already has %s servers (withdraw some with server_gone)',
                       matchmaker_max_servers_per_login()));
        END IF;
        INSERT INTO servers (owner, server_id, region, address, status, announced_at,
                             ready_since)
        VALUES (session_user, server_id, region, address, 'ready', now(), now())
        -- A concurrent first announcement of the same server: one row either way.
        ON CONFLICT ON CONSTRAINT servers_pkey DO UPDATE
           SET announced_at = now(), region = EXCLUDED.region, address = EXCLUDED.address
         WHERE servers.status = 'ready';
        RETURN 'ready';
    END IF;
    IF s.status = 'allocated' AND ended_match IS DISTINCT FROM s.match_id THEN
        -- Still hosting: heard from, nothing else changes.
        UPDATE servers x SET announced_at = now()
         WHERE x.owner = s.owner AND x.server_id = s.server_id;
        RETURN 'allocated';
    END IF;
    UPDATE servers x
       SET status = 'ready', match_id = NULL, allocated_at = NULL,
           region = region, address = address, announced_at = now(),
           ready_since = CASE WHEN s.status = 'allocated' THEN now() ELSE x.ready_since END
     WHERE x.owner = s.owner AND x.server_id = s.server_id;
    RETURN 'ready';
END
$$;

-- ---- server_gone: withdraw a server -----------------------------------------------------
-- The server shuts down (or its fleet scales in). Its row goes; a match it was hosting
-- keeps its server's id and address. Returns whether this login had announced the server.
CREATE FUNCTION server_gone(server_id text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
BEGIN
    PERFORM matchmaker_check_id('server_id', server_id);
    DELETE FROM servers x WHERE x.owner = session_user AND x.server_id = server_id;
    RETURN FOUND;
END
$$;

-- ---- Notifications: the server hears its allocation -------------------------------------
-- matchmaker_notify_matches of 0005, with the match's server: its login is told as the
-- players' logins are, and every notification of a placed match names the server
-- ("server_id", "server_address" after match_id).
CREATE OR REPLACE FUNCTION matchmaker_notify_matches_in_parts(match_ids bigint[], event text DEFAULT 'match')
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
    login text;
    payload text;
BEGIN
    IF event IS NULL OR event NOT IN ('match', 'backfill', 'ready_check', 'ready') THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('event = %s: must be match, backfill, ready_check or ready',
                             quote_nullable(event));
    END IF;
    FOR m IN
        SELECT x.match_id, x.round_id, x.queue, x.relay, x.answer_by,
               x.server_id, x.server_address,
               -- Who is told: the logins of the match's players, the one that asked for
               -- the backfill it fills, and its server's.
               ARRAY(SELECT DISTINCT o FROM unnest(array_agg(e.owner)
                                                   || b.owner || x.server_owner) AS o
                      WHERE o IS NOT NULL ORDER BY o) AS logins,
               array_agg(format('{"player_id":%s,"team":%s%s%s}',
                                to_json(mp.player_id), mp.team,
                                ',"party_id":' || to_json(mp.party_id),
                                ',"role":' || to_json(mp.role))
                         ORDER BY mp.team, mp.player_id) AS players
          FROM matches x
          JOIN match_players mp ON mp.match_id = x.match_id
          JOIN queue_entries e ON e.entry_id = mp.entry_id
          LEFT JOIN backfill_requests b ON b.request_id = x.backfill_request_id
         WHERE x.match_id = ANY (match_ids)
         GROUP BY x.match_id, b.owner
         ORDER BY x.match_id
    LOOP
        head := format('{"event":%s,"queue":%s,"round_id":%s,"match_id":%s%s%s%s',
                       to_json(event), to_json(m.queue), m.round_id, m.match_id,
                       ',"server_id":' || to_json(m.server_id)
                           || ',"server_address":' || to_json(m.server_address),
                       CASE WHEN event = 'ready_check' THEN format(',"answer_by":%s', to_json(
                           to_char(m.answer_by AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')))
                       END,
                       CASE WHEN m.relay THEN ',"relay":true' ELSE '' END);
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
            parts := ARRAY[NULL::text];
        ELSE
            parts := parts || coalesce(current, '');
        END IF;
        FOREACH login IN ARRAY m.logins LOOP
            FOR i IN 1 .. cardinality(parts) LOOP
                payload := CASE WHEN fits
                    THEN format('%s,"part":%s,"parts":%s,"players":[%s]}',
                                head, i, cardinality(parts), parts[i])
                    ELSE format('{"event":%s,"round_id":%s,"match_id":%s,"part":1,"parts":1,'
                                '"players_omitted":true}', to_json(event), m.round_id, m.match_id)
                    END;
                IF matchmaker_notify(matchmaker_login_channel(login, m.queue), payload) THEN
                    sent := sent + 1;
                END IF;
            END LOOP;
        END LOOP;
    END LOOP;
    RETURN sent;
END
$$;

CREATE OR REPLACE FUNCTION matchmaker_notify_matches(match_ids bigint[], event text DEFAULT 'match')
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    -- PostgreSQL's NOTIFY_PAYLOAD_MAX_LENGTH: BLCKSZ - NAMEDATALEN - 128, exclusive.
    max_bytes constant integer := current_setting('block_size')::integer - 64 - 128 - 1;
    sent integer;
    long bigint[];
BEGIN
    IF event IS NULL OR event NOT IN ('match', 'backfill', 'ready_check', 'ready') THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('event = %s: must be match, backfill, ready_check or ready',
                             quote_nullable(event));
    END IF;
    WITH payloads AS MATERIALIZED (
        SELECT x.match_id, x.queue,
               -- Who is told: the logins of the match's players, the one that asked for
               -- the backfill it fills, and its server's.
               ARRAY(SELECT DISTINCT o FROM unnest(array_agg(e.owner) || b.owner
                                                   || x.server_owner) AS o
                      WHERE o IS NOT NULL ORDER BY o) AS logins,
               format('{"event":%s,"queue":%s,"round_id":%s,"match_id":%s%s%s%s,"part":1,"parts":1,"players":[',
                      to_json(event), to_json(x.queue), x.round_id, x.match_id,
                      ',"server_id":' || to_json(x.server_id)
                          || ',"server_address":' || to_json(x.server_address),
                      CASE WHEN event = 'ready_check' THEN format(',"answer_by":%s', to_json(
                          to_char(x.answer_by AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')))
                      END,
                      CASE WHEN x.relay THEN ',"relay":true' ELSE '' END)
               || string_agg(format('{"player_id":%s,"team":%s%s%s}',
                                    to_json(mp.player_id), mp.team,
                                    ',"party_id":' || to_json(mp.party_id),
                                    ',"role":' || to_json(mp.role)),
                             ',' ORDER BY mp.team, mp.player_id)
               || ']}' AS payload
          FROM matches x
          JOIN match_players mp ON mp.match_id = x.match_id
          JOIN queue_entries e ON e.entry_id = mp.entry_id
          LEFT JOIN backfill_requests b ON b.request_id = x.backfill_request_id
         WHERE x.match_id = ANY (match_ids)
         GROUP BY x.match_id, b.owner)
    , told AS (
        SELECT p.match_id, p.queue, l.login, p.payload
          FROM payloads p, unnest(p.logins) AS l(login)
         WHERE octet_length(p.payload) <= max_bytes),
    channels AS MATERIALIZED (
        SELECT d.login, d.queue, matchmaker_login_channel(d.login, d.queue) AS channel
          FROM (SELECT DISTINCT login, queue FROM told) d)
    SELECT
        (SELECT count(*)
           FROM (SELECT pg_notify(c.channel, t.payload)
                   FROM told t JOIN channels c USING (login, queue)
                  WHERE (SELECT matchmaker_notify_open())
                  ORDER BY t.match_id, t.login) AS s),
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

-- ---- report_result: a placed match is its server's to report --------------------------
-- As in 0011, except that a server login reports only the matches placed on its own
-- servers (and, as before, any match placed on none).
CREATE OR REPLACE FUNCTION report_result(match_id bigint, team_ranks integer[],
                              left_early text[] DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    server constant boolean := pg_has_role(session_user, 'matchmaker_server', 'USAGE');
    m matches;
    teams integer;
    leavers bigint[] := '{}';
    given text;
    hits bigint[];
    accepted match_results;
    agrees boolean;
BEGIN
    IF match_id IS NULL THEN
        PERFORM matchmaker_refuse('match_id', 'NULL', 'is required');
    END IF;
    SELECT x.* INTO m FROM matches x WHERE x.match_id = match_id;
    IF NOT FOUND
       OR (NOT server AND NOT EXISTS (
               SELECT 1 FROM match_players mp
                 JOIN queue_entries e ON e.entry_id = mp.entry_id
                WHERE mp.match_id = m.match_id AND e.owner = session_user))
       -- A match placed on a game server is that server's login's to report.
       OR (server AND m.server_owner IS DISTINCT FROM session_user
           AND m.server_owner IS NOT NULL) THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            CASE WHEN server THEN 'no such match'
                 ELSE 'no match of this login''s players' END);
    END IF;
    IF m.status = 'pending' THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            'is waiting for its ready check: report its result once it is played');
    END IF;
    IF m.status = 'cancelled' THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            'was cancelled by its ready check: it was never played');
    END IF;
    IF m.session_id IS NOT NULL THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            format('is a backfill of session %s, not a match of its own', m.session_id));
    END IF;

    teams := (SELECT count(DISTINCT mp.team) FROM match_players mp
               WHERE mp.match_id = m.match_id);
    IF team_ranks IS NULL OR coalesce(array_ndims(team_ranks), 1) <> 1
       OR cardinality(team_ranks) <> teams
       OR array_position(team_ranks, NULL) IS NOT NULL THEN
        PERFORM matchmaker_refuse('team_ranks', coalesce(team_ranks::text, 'NULL'),
            format('match %s has %s teams: one rank per team, in ascending team order '
                   '(1 best, equal ranks a draw)', m.match_id, teams));
    END IF;
    IF (SELECT min(r) FROM unnest(team_ranks) r) <> 1
       OR (SELECT max(r) FROM unnest(team_ranks) r) > teams THEN
        PERFORM matchmaker_refuse('team_ranks', team_ranks::text,
            format('ranks are 1 (best) to %s, and some team is 1', teams));
    END IF;

    IF coalesce(array_ndims(left_early), 1) <> 1 THEN
        PERFORM matchmaker_refuse('left_early', left_early::text,
                                  'must be a one-dimensional array of player ids');
    END IF;
    FOREACH given IN ARRAY coalesce(left_early, '{}') LOOP
        PERFORM matchmaker_check_id('left_early', given);
        hits := ARRAY(SELECT mp.entry_id FROM match_players mp
                         JOIN queue_entries e ON e.entry_id = mp.entry_id
                        WHERE mp.match_id = m.match_id AND mp.player_id = given
                          AND (server OR e.owner = session_user));
        IF cardinality(hits) = 0 THEN
            PERFORM matchmaker_refuse('left_early', quote_literal(given),
                CASE WHEN server THEN format('is not a player of match %s', m.match_id)
                     ELSE format('is not a player of this login in match %s', m.match_id) END);
        ELSIF cardinality(hits) > 1 THEN
            PERFORM matchmaker_refuse('left_early', quote_literal(given),
                format('names %s players of match %s (of different logins)',
                       cardinality(hits), m.match_id));
        ELSIF hits[1] = ANY (leavers) THEN
            PERFORM matchmaker_refuse('left_early', quote_literal(given), 'is named twice');
        END IF;
        leavers := leavers || hits[1];
    END LOOP;

    -- The first report is the result; ON CONFLICT: a report racing this one waits for it,
    -- then compares.
    INSERT INTO match_results AS r (match_id, queue, team_ranks, left_early,
                                    left_early_entries, reported_by, rating_pool)
    SELECT m.match_id, m.queue, team_ranks, coalesce(left_early, '{}'), leavers,
           session_user, q.rating_pool
      FROM (SELECT 1) one LEFT JOIN queues q ON q.queue = m.queue
    ON CONFLICT ON CONSTRAINT match_results_pkey DO NOTHING
    RETURNING r.* INTO accepted;
    IF FOUND THEN
        INSERT INTO result_reports (match_id, reported_by, team_ranks, left_early, agrees)
        VALUES (m.match_id, session_user, team_ranks, coalesce(left_early, '{}'), true);
        RETURN 'recorded';
    END IF;

    SELECT r.* INTO accepted FROM match_results r WHERE r.match_id = m.match_id;
    agrees := accepted.team_ranks = team_ranks
              AND (SELECT coalesce(array_agg(x ORDER BY x), '{}') FROM unnest(leavers) x)
                = (SELECT coalesce(array_agg(x ORDER BY x), '{}')
                     FROM unnest(accepted.left_early_entries) x);
    INSERT INTO result_reports (match_id, reported_by, team_ranks, left_early, agrees)
    VALUES (m.match_id, session_user, team_ranks, coalesce(left_early, '{}'), agrees)
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            format('this login already reported its result (at %s)',
                   (SELECT to_char(x.reported_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                      FROM result_reports x
                     WHERE x.match_id = m.match_id AND x.reported_by = session_user)));
    END IF;
    IF NOT agrees THEN
        UPDATE match_results r SET disputed = true WHERE r.match_id = m.match_id;
        RETURN 'disputed';
    END IF;
    RETURN 'confirmed';
END
$$;

-- ---- match_details: where the match is played -------------------------------------------
-- match_details of 0011 with the match's server; a server login sees the matches its
-- servers host.
CREATE OR REPLACE VIEW match_details WITH (security_barrier) AS
SELECT mp.match_id,
       m.round_id,
       m.queue,
       m.created_at,
       mp.player_id,
       mp.party_id,
       mp.team,
       mp.role,
       mp.skill,
       extract(epoch FROM mp.matched_at - mp.enqueued_at)::double precision
           AS waited_seconds,
       ARRAY(SELECT o.player_id FROM match_players o
              WHERE o.match_id = mp.match_id AND o.team = mp.team
                AND o.entry_id <> mp.entry_id
              ORDER BY o.player_id) AS teammates,
       ARRAY(SELECT o.player_id FROM match_players o
              WHERE o.match_id = mp.match_id AND o.team <> mp.team
              ORDER BY o.team, o.player_id) AS opponents,
       m.region,
       m.hosts,
       m.score AS match_score,
       m.factors,
       m.host_player_id,
       m.backup_host_player_id,
       m.relay,
       mp.win_probability,
       res.team_ranks[(SELECT count(DISTINCT o.team) FROM match_players o
                        WHERE o.match_id = mp.match_id AND o.team <= mp.team)]
           AS team_rank,
       mp.entry_id = ANY (res.left_early_entries) AS left_early,
       m.server_id,
       m.server_address
  FROM match_players mp
  JOIN matches m ON m.match_id = mp.match_id
  LEFT JOIN match_results res ON res.match_id = mp.match_id
 WHERE (SELECT matchmaker_sees_all())
    OR m.server_owner = session_user
    OR EXISTS (SELECT 1 FROM match_players mine
                 JOIN queue_entries e ON e.entry_id = mine.entry_id
                WHERE mine.match_id = mp.match_id AND e.owner = session_user);

-- ---- For operators: the supply ------------------------------------------------------------
-- One line per region and login: servers ready, ready but silent for longer than the
-- shortest ttl of the active queues that require servers (a crashed server, or a fleet
-- adapter that stopped announcing: not used until it announces again), and allocated.
CREATE VIEW server_fleet AS
WITH ttl AS (
    SELECT coalesce(min(server_ttl), interval '30 seconds') AS ttl
      FROM queues WHERE active AND server_ttl IS NOT NULL)
SELECT s.region,
       s.owner,
       count(*) FILTER (WHERE s.status = 'ready'
                          AND s.announced_at > now() - ttl.ttl) AS ready,
       count(*) FILTER (WHERE s.status = 'ready'
                          AND s.announced_at <= now() - ttl.ttl) AS silent,
       count(*) FILTER (WHERE s.status = 'allocated') AS allocated,
       max(s.announced_at) AS last_announced_at
  FROM servers s CROSS JOIN ttl
 GROUP BY s.region, s.owner;
COMMENT ON VIEW server_fleet IS
    'Game servers per region and login: ready, silent (ready, not heard from within the '
    'shortest server ttl of the queues), allocated';

-- A server login reads its own servers.
CREATE VIEW my_servers WITH (security_barrier) AS
SELECT s.server_id, s.region, s.address, s.status, s.match_id, s.announced_at,
       s.ready_since, s.allocated_at
  FROM servers s
 WHERE s.owner = session_user;
COMMENT ON VIEW my_servers IS 'This login''s game servers and what each hosts';

-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON servers, server_fleet, my_servers FROM PUBLIC;
REVOKE ALL ON FUNCTION
    server_ready(text, text, text, bigint),
    server_gone(text),
    matchmaker_max_servers_per_login()
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION server_ready(text, text, text, bigint), server_gone(text)
    TO matchmaker_server;
GRANT SELECT ON my_servers TO matchmaker_server, matchmaker_daemon, matchmaker_ops;
GRANT SELECT, INSERT, UPDATE, DELETE ON servers TO matchmaker_daemon;
GRANT SELECT ON servers, server_fleet TO matchmaker_daemon, matchmaker_ops;
GRANT SELECT ON match_details TO matchmaker_server;
