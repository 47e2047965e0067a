-- The client contract. Clients (game clients, a game backend) call the functions below and
-- read the client views; they hold no privilege on any table. Only the daemon writes
-- tables. This is Open Match's frontend rule (the server owns tickets) in PostgreSQL's own
-- terms: SECURITY DEFINER functions with a pinned search_path, roles, row locks.
--
--   enqueue(queue, player_id, skill, ...)   one solo player -> entry_id
--   enqueue_party(queue, party_id, members) a whole party in one call -> (player_id, entry_id)
--   cancel(player_id, queue)                a player's queued entries, and their party's
--   keep_alive(player_ids, queue)           refresh tickets before they expire
--   player_status, match_details, queue_countdown, queue_catalog   (views)
--
-- Every refusal is an error whose message names the field, the value and the rule, with
-- SQLSTATE 22023 (invalid_parameter_value), so a client can tell "your request is wrong"
-- from "the server is down".

-- ---- Roles ---------------------------------------------------------------------------
-- Roles belong to the cluster, not the database: a second database on the same server (or
-- a concurrent migration of one) finds them there already. Studios make their login roles
-- members: CREATE ROLE game_backend LOGIN PASSWORD '...' IN ROLE matchmaker_client;
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['matchmaker_client', 'matchmaker_daemon', 'matchmaker_ops'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION
                -- Another database's migration created it in the meantime.
                WHEN duplicate_object OR unique_violation THEN NULL;
                WHEN insufficient_privilege THEN
                    RAISE EXCEPTION 'the migration must create role %, and the migrating role may not', r
                        USING HINT = 'run `matchmaker migrate` as a role with CREATEROLE once, '
                                     'or create the roles matchmaker_client, matchmaker_daemon '
                                     'and matchmaker_ops (NOLOGIN) beforehand';
            END;
        END IF;
    END LOOP;
END
$$;

-- COMMENT ON ROLE needs CREATEROLE too: a migrating role without it, running after the
-- roles were created beforehand, leaves their comments to whoever created them.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT * FROM (VALUES
        ('matchmaker_client',
         'game clients and backends: EXECUTE on the client functions, SELECT on the client views'),
        ('matchmaker_daemon', 'matchmaker run: reads and writes the matchmaker tables'),
        ('matchmaker_ops', 'operators: read everything, write nothing')) AS t(role, text)
    LOOP
        BEGIN
            EXECUTE format('COMMENT ON ROLE %I IS %L', c.role, c.text);
        EXCEPTION WHEN insufficient_privilege THEN NULL;
        END;
    END LOOP;
END
$$;

-- ---- Queues the database knows ---------------------------------------------------------
-- Published by each queue's leader when it takes the lease and when its config changes; a
-- queue dropped from the config is retired (active = false) and its queued entries get
-- the reason. enqueue() refuses a queue that is not active here.
CREATE TABLE queues (
    queue          text PRIMARY KEY,
    active         boolean NOT NULL,
    teams          integer NOT NULL,
    team_size      integer NOT NULL,
    network        text NOT NULL,
    -- Roles a player may name (empty: a queue without roles).
    roles          text[] NOT NULL,
    -- Regions a latency map may name (empty: any name).
    regions        text[] NOT NULL,
    max_party_size integer NOT NULL,
    -- A ticket not kept alive for this long expires.
    ticket_ttl     interval NOT NULL,
    max_wait       interval NOT NULL,
    config_hash    text NOT NULL,
    published_by   text NOT NULL,
    published_at   timestamptz NOT NULL,
    retired_at     timestamptz NULL,
    retired_reason text NULL,
    CONSTRAINT retired_queue_has_reason CHECK (active OR retired_reason IS NOT NULL)
);
COMMENT ON TABLE queues IS
    'The queues the daemon serves, with their format and entry limits (written by the daemon)';

-- ---- Tickets ---------------------------------------------------------------------------
-- expires_at: the ticket lifetime (refreshed by keep_alive); the default only serves rows
--   written directly by the daemon's own tools (bulk loads, tests).
-- owner: the login role that enqueued; a client sees and cancels its own entries only.
-- party_key, party_size: one enqueue_party call; membership is fixed by it, and a party
--   is matched only when all party_size members are still queued (never split).
CREATE SEQUENCE queue_entries_party_key_seq;
ALTER TABLE queue_entries
    ADD COLUMN expires_at timestamptz NOT NULL DEFAULT (now() + interval '10 minutes'),
    ADD COLUMN owner text NOT NULL DEFAULT session_user,
    ADD COLUMN party_key bigint NULL,
    ADD COLUMN party_size integer NULL;

-- expired: no keep-alive within the queue's ticket_ttl; withdrawn: the player (or a party
-- member) was matched in another queue (match_id names that match). Like rejected rows,
-- both carry a reason a person can read; so do cancelled rows from cancel().
ALTER TABLE queue_entries
    DROP CONSTRAINT status_must_be_known,
    ADD CONSTRAINT status_must_be_known
        CHECK (status IN ('queued', 'matched', 'cancelled', 'rejected', 'expired', 'withdrawn')),
    ADD CONSTRAINT ended_entry_has_reason
        CHECK (status NOT IN ('expired', 'withdrawn') OR reject_reason IS NOT NULL);
COMMENT ON COLUMN queue_entries.reject_reason IS
    'why the entry left the queue without a match (rejected, expired, withdrawn, cancelled)';

-- The daemon's expiry sweep.
CREATE INDEX queue_entries_queued_expiry ON queue_entries (queue, expires_at)
    WHERE status = 'queued';
-- One player in several queues: the commit that matches a player finds and withdraws
-- their queued entries elsewhere (the player index above also holds every past entry).
CREATE INDEX queue_entries_queued_player ON queue_entries (player_id) WHERE status = 'queued';
-- Party look-ups: enqueue_party's "already queued" check, cancel's party, the sweep.
CREATE INDEX queue_entries_party ON queue_entries (party_key) WHERE party_key IS NOT NULL;
CREATE INDEX queue_entries_queued_party_id ON queue_entries (queue, party_id)
    WHERE status = 'queued' AND party_id IS NOT NULL;

-- ---- Who sees what ---------------------------------------------------------------------
-- Operators and the daemon see every entry; a client login sees the entries it enqueued.
CREATE FUNCTION matchmaker_sees_all() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT pg_has_role(session_user, 'matchmaker_daemon', 'USAGE')
        OR pg_has_role(session_user, 'matchmaker_ops', 'USAGE')
$$;

-- ---- Input rules -----------------------------------------------------------------------
-- The limits keep any single row as cheap to a round as a normal player:
--   ids (player, party, region, role, peer): 1-64 characters, no control characters;
--   skill: finite, |skill| <= 1e6; skill_sigma: finite, 0..1e6; side: 0..1;
--   latencies: at most 32 regions (known regions only, when the queue lists them),
--   peer_pings: at most 100 players; every ping 0..10000 ms;
--   roles: at most 16, known to the queue, no repeats; parties: 2..max_party_size members.
CREATE FUNCTION matchmaker_refuse(field text, value text, rule text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'invalid_parameter_value',
        MESSAGE = format('%s = %s: %s', field,
                         coalesce(CASE WHEN length(value) > 80
                                       THEN left(value, 77) || '...' ELSE value END, 'NULL'),
                         rule);
END
$$;

CREATE FUNCTION matchmaker_check_id(field text, value text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF value IS NULL OR value = '' THEN
        PERFORM matchmaker_refuse(field, quote_nullable(value), 'is required (1-64 characters)');
    ELSIF length(value) > 64 THEN
        PERFORM matchmaker_refuse(field, quote_literal(value), 'is longer than 64 characters');
    ELSIF value ~ '[[:cntrl:]]' THEN
        PERFORM matchmaker_refuse(field, quote_literal(value), 'contains control characters');
    END IF;
END
$$;

-- A JSON object of names to milliseconds: at most max_entries, names valid ids (and among
-- known, when known is not empty), values numbers in [0, 10000].
CREATE FUNCTION matchmaker_check_ms_map(field text, m jsonb, max_entries integer,
                                        known text[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    e record;
    n integer := 0;
BEGIN
    IF m IS NULL OR jsonb_typeof(m) <> 'object' THEN
        PERFORM matchmaker_refuse(field, m::text, 'must be a JSON object of names to milliseconds');
    END IF;
    FOR e IN SELECT key, value FROM jsonb_each(m) LOOP
        n := n + 1;
        IF n > max_entries THEN
            PERFORM matchmaker_refuse(field, m::text, format('has more than %s entries', max_entries));
        END IF;
        PERFORM matchmaker_check_id(field || ' key', e.key);
        IF cardinality(known) > 0 AND NOT e.key = ANY (known) THEN
            PERFORM matchmaker_refuse(field, quote_literal(e.key),
                format('unknown region; this queue''s regions: %s', array_to_string(known, ', ')));
        END IF;
        IF jsonb_typeof(e.value) <> 'number' THEN
            PERFORM matchmaker_refuse(field || '.' || e.key, e.value::text, 'must be a number of ms');
        END IF;
        IF e.value::numeric < 0 OR e.value::numeric > 10000 THEN
            PERFORM matchmaker_refuse(field || '.' || e.key, e.value::text,
                                      'must be between 0 and 10000 ms');
        END IF;
    END LOOP;
END
$$;

-- One member's fields against the queue's rules.
CREATE FUNCTION matchmaker_check_member(q queues, player_id text, skill double precision,
                                        skill_sigma double precision, latencies jsonb,
                                        peer_pings jsonb, roles text[],
                                        side double precision) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    r text;
BEGIN
    PERFORM matchmaker_check_id('player_id', player_id);
    -- NaN compares above Infinity in PostgreSQL: these bounds refuse it too.
    IF skill IS NULL OR NOT (skill >= -1e6 AND skill <= 1e6) THEN
        PERFORM matchmaker_refuse('skill', skill::text, 'must be a finite number in [-1000000, 1000000]');
    END IF;
    IF skill_sigma IS NOT NULL AND NOT (skill_sigma >= 0 AND skill_sigma <= 1e6) THEN
        PERFORM matchmaker_refuse('skill_sigma', skill_sigma::text, 'must be a number in [0, 1000000]');
    END IF;
    IF side IS NOT NULL AND NOT (side >= 0 AND side <= 1) THEN
        PERFORM matchmaker_refuse('side', side::text, 'must be in [0, 1] (0: first team, 1: second)');
    END IF;
    PERFORM matchmaker_check_ms_map('latencies', latencies, 32, q.regions);
    PERFORM matchmaker_check_ms_map('peer_pings', peer_pings, 100, '{}');
    IF roles IS NULL THEN
        PERFORM matchmaker_refuse('roles', 'NULL', 'must be an array (empty: any role)');
    END IF;
    IF cardinality(roles) > 16 THEN
        PERFORM matchmaker_refuse('roles', roles::text, 'has more than 16 roles');
    END IF;
    FOREACH r IN ARRAY roles LOOP
        IF r IS NULL OR NOT r = ANY (q.roles) THEN
            PERFORM matchmaker_refuse('roles', quote_nullable(r),
                CASE WHEN cardinality(q.roles) = 0 THEN 'this queue has no roles'
                     ELSE format('unknown role; this queue''s roles: %s',
                                 array_to_string(q.roles, ', ')) END);
        END IF;
    END LOOP;
    IF cardinality(roles) <> (SELECT count(DISTINCT x) FROM unnest(roles) x) THEN
        PERFORM matchmaker_refuse('roles', roles::text, 'names a role twice');
    END IF;
END
$$;

-- The common case of matchmaker_check_member in one expression, for enqueue()'s speed:
-- true only when every rule above holds (a sufficient condition: false or NULL means "run
-- matchmaker_check_member", which accepts or names the first rule broken). It never
-- raises: its JSON path queries are silent. About a quarter of enqueue()'s cost otherwise
-- goes to the rule-by-rule checks (a statement per map entry).
CREATE FUNCTION matchmaker_member_ok(q queues, player_id text, skill double precision,
                                     skill_sigma double precision, latencies jsonb,
                                     peer_pings jsonb, roles text[],
                                     side double precision) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN coalesce(
        length(player_id) BETWEEN 1 AND 64 AND player_id !~ '[[:cntrl:]]'
        AND skill >= -1e6 AND skill <= 1e6
        AND (skill_sigma IS NULL OR (skill_sigma >= 0 AND skill_sigma <= 1e6))
        AND (side IS NULL OR (side >= 0 AND side <= 1))
        -- Each map: an object of at most N entries whose names are 1-64 characters
        -- without control characters (a name of 65 or more characters has 65 that are not
        -- a newline, or a control character) and whose values are numbers in [0, 10000].
        AND jsonb_typeof(latencies) = 'object' AND jsonb_typeof(peer_pings) = 'object'
        AND (latencies = '{}' OR (
             jsonb_array_length(jsonb_path_query_array(latencies, '$.*')) <= 32
             AND NOT jsonb_path_exists(latencies,
                 'strict $.keyvalue() ? (@.value.type() != "number" || @.value < 0
                                         || @.value > 10000 || @.key == ""
                                         || @.key like_regex "^.{65}"
                                         || @.key like_regex "[[:cntrl:]]")', '{}', true)
             AND (cardinality(q.regions) = 0
                  OR NOT jsonb_path_exists(latencies, 'strict $.keyvalue() ? (!(@.key == $k[*]))',
                                           jsonb_build_object('k', q.regions), true))))
        AND (peer_pings = '{}' OR (
             jsonb_array_length(jsonb_path_query_array(peer_pings, '$.*')) <= 100
             AND NOT jsonb_path_exists(peer_pings,
                 'strict $.keyvalue() ? (@.value.type() != "number" || @.value < 0
                                         || @.value > 10000 || @.key == ""
                                         || @.key like_regex "^.{65}"
                                         || @.key like_regex "[[:cntrl:]]")', '{}', true)))
        -- A NULL role is in no array (<@ never matches NULL).
        AND cardinality(roles) <= 16 AND roles <@ q.roles
        AND CASE WHEN cardinality(roles) < 2 THEN true
                 ELSE cardinality(roles) = (SELECT count(DISTINCT x) FROM unnest(roles) x) END,
        false);
END
$$;

-- The active queue, locked against retirement until the enqueue commits (FOR KEY SHARE:
-- the daemon's retire takes FOR UPDATE; its publish does not conflict).
CREATE FUNCTION matchmaker_active_queue(name text) RETURNS queues
LANGUAGE plpgsql AS $$
DECLARE
    q queues;
BEGIN
    SELECT * INTO q FROM queues WHERE queues.queue = name FOR KEY SHARE;
    IF NOT FOUND OR NOT q.active THEN
        PERFORM matchmaker_refuse('queue', quote_nullable(name),
            coalesce('unknown queue; queues: '
                     || (SELECT string_agg(queue, ', ' ORDER BY queue) FROM queues WHERE active),
                     'unknown queue; no queue is served yet (is the daemon running?)'));
    END IF;
    RETURN q;
END
$$;

-- ---- The front door --------------------------------------------------------------------

-- Enqueue one solo player; returns the entry id. The server sets the times, the status and
-- the owner. A player may be queued in several queues at once; they are matched at most
-- once (the commit that matches them withdraws their other entries).
CREATE FUNCTION enqueue(queue text, player_id text, skill double precision,
                        latencies jsonb DEFAULT '{}', peer_pings jsonb DEFAULT '{}',
                        roles text[] DEFAULT '{}', side double precision DEFAULT NULL,
                        skill_sigma double precision DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    q queues;
    id bigint;
BEGIN
    -- matchmaker_active_queue() inlined for an active queue (the same row lock); the
    -- function raises the refusal otherwise. A nested call costs a tenth of an enqueue.
    SELECT * INTO q FROM queues WHERE queues.queue = queue FOR KEY SHARE;
    IF NOT FOUND OR NOT q.active THEN
        q := matchmaker_active_queue(queue);
    END IF;
    IF NOT matchmaker_member_ok(q, player_id, skill, skill_sigma, latencies, peer_pings,
                                roles, side) THEN
        PERFORM matchmaker_check_member(q, player_id, skill, skill_sigma, latencies,
                                        peer_pings, roles, side);
    END IF;
    BEGIN
        INSERT INTO queue_entries AS e (queue, player_id, skill, skill_sigma, latencies,
                                        peer_pings, roles, side, enqueued_at, expires_at)
        VALUES (q.queue, player_id, skill, skill_sigma, latencies, peer_pings, roles, side,
                now(), now() + q.ticket_ttl)
        RETURNING e.entry_id INTO id;
    EXCEPTION WHEN unique_violation THEN
        PERFORM matchmaker_refuse('player_id', quote_literal(player_id),
            format('is already queued in queue %s (cancel it first)', q.queue));
    END;
    RETURN id;
END
$$;

-- Enqueue a whole party in one call: members is a JSON array of objects with player_id,
-- skill and optionally latencies, peer_pings, roles, side, skill_sigma. Membership is
-- fixed here: nobody joins later, and a party_id already queued in this queue is refused.
CREATE FUNCTION enqueue_party(queue text, party_id text, members jsonb)
RETURNS TABLE (player_id text, entry_id bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    q queues := matchmaker_active_queue(queue);
    m jsonb;
    k text;
    n integer;
    key bigint;
    ids text[] := '{}';
    pid text;
    want text;
BEGIN
    PERFORM matchmaker_check_id('party_id', party_id);
    IF members IS NULL OR jsonb_typeof(members) <> 'array' THEN
        PERFORM matchmaker_refuse('members', members::text, 'must be a JSON array of members');
    END IF;
    n := jsonb_array_length(members);
    IF n < 2 OR n > q.max_party_size THEN
        PERFORM matchmaker_refuse('members', n || ' members',
            format('a party in queue %s has 2 to %s members (enqueue a solo player with enqueue)',
                   q.queue, q.max_party_size));
    END IF;
    FOR m IN SELECT value FROM jsonb_array_elements(members) LOOP
        IF jsonb_typeof(m) <> 'object' THEN
            PERFORM matchmaker_refuse('members[]', m::text, 'must be a JSON object');
        END IF;
        FOR k IN SELECT jsonb_object_keys(m) LOOP
            IF k NOT IN ('player_id', 'skill', 'skill_sigma', 'latencies', 'peer_pings',
                         'roles', 'side') THEN
                PERFORM matchmaker_refuse('members[].' || k, m -> k #>> '{}',
                    'unknown field (player_id, skill, skill_sigma, latencies, peer_pings, roles, side)');
            END IF;
        END LOOP;
        FOR k IN SELECT unnest(ARRAY['player_id', 'skill', 'skill_sigma', 'side']) LOOP
            want := CASE WHEN k = 'player_id' THEN 'string' ELSE 'number' END;
            IF m ? k AND jsonb_typeof(m -> k) NOT IN (want, 'null') THEN
                PERFORM matchmaker_refuse('members[].' || k, (m -> k)::text, 'must be a ' || want);
            END IF;
            -- Before the cast to double precision, which would fail unexplained on 1e400
            -- (overflow) and on 1e-400 (underflow to 0).
            IF jsonb_typeof(m -> k) = 'number' AND abs((m -> k)::numeric) > 1e6 THEN
                PERFORM matchmaker_refuse('members[].' || k, (m -> k)::text,
                                          'must be in [-1000000, 1000000]');
            ELSIF jsonb_typeof(m -> k) = 'number' AND (m -> k)::numeric <> 0
                  AND abs((m -> k)::numeric) < 1e-300 THEN
                PERFORM matchmaker_refuse('members[].' || k, (m -> k)::text,
                                          'is too close to 0 for a double precision number (use 0)');
            END IF;
        END LOOP;
        IF m ? 'roles' AND jsonb_typeof(m -> 'roles') <> 'array' THEN
            PERFORM matchmaker_refuse('members[].roles', (m -> 'roles')::text,
                                      'must be a JSON array of role names');
        END IF;
        pid := m ->> 'player_id';
        PERFORM matchmaker_check_member(
            q, pid, (m ->> 'skill')::double precision, (m ->> 'skill_sigma')::double precision,
            coalesce(m -> 'latencies', '{}'), coalesce(m -> 'peer_pings', '{}'),
            coalesce(ARRAY(SELECT jsonb_array_elements_text(m -> 'roles')), '{}'),
            (m ->> 'side')::double precision);
        IF pid = ANY (ids) THEN
            PERFORM matchmaker_refuse('members[].player_id', quote_literal(pid),
                                      'appears twice in the party');
        END IF;
        ids := ids || pid;
    END LOOP;

    -- One party_id per queue at a time. A try-lock, not a wait: a concurrent call for the
    -- same party (or a client holding that advisory lock) gets a refusal, never a stall.
    IF NOT pg_try_advisory_xact_lock(hashtextextended(q.queue || E'\x1f' || party_id, 0)) THEN
        PERFORM matchmaker_refuse('party_id', quote_literal(party_id),
            format('is being enqueued in queue %s by another call right now', q.queue));
    END IF;
    IF EXISTS (SELECT 1 FROM queue_entries e
                WHERE e.queue = q.queue AND e.party_id = party_id AND e.status = 'queued') THEN
        PERFORM matchmaker_refuse('party_id', quote_literal(party_id),
            format('is already queued in queue %s (cancel it first)', q.queue));
    END IF;

    key := nextval('queue_entries_party_key_seq');
    BEGIN
        RETURN QUERY
        INSERT INTO queue_entries AS e (queue, player_id, party_id, party_key, party_size,
                                        skill, skill_sigma, latencies, peer_pings, roles,
                                        side, enqueued_at, expires_at)
        SELECT q.queue, x ->> 'player_id', party_id, key, n,
               (x ->> 'skill')::double precision, (x ->> 'skill_sigma')::double precision,
               coalesce(x -> 'latencies', '{}'), coalesce(x -> 'peer_pings', '{}'),
               coalesce(ARRAY(SELECT jsonb_array_elements_text(x -> 'roles')), '{}'),
               (x ->> 'side')::double precision, now(), now() + q.ticket_ttl
          FROM jsonb_array_elements(members) AS t(x)
        RETURNING e.player_id, e.entry_id;
    EXCEPTION WHEN unique_violation THEN
        PERFORM matchmaker_refuse('members[].player_id',
            (SELECT string_agg(quote_literal(e.player_id), ', ') FROM queue_entries e
              WHERE e.queue = q.queue AND e.status = 'queued' AND e.player_id = ANY (ids)),
            format('is already queued in queue %s (cancel it first)', q.queue));
    END;
END
$$;

-- Cancel a player's queued entries (in one queue, or in every queue when queue is NULL),
-- and the entries of their party with them: a party is never split. Returns how many
-- entries were cancelled (0: nothing queued; a round may have matched them already).
CREATE FUNCTION cancel(player_id text, queue text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    n integer;
BEGIN
    PERFORM matchmaker_check_id('player_id', player_id);
    WITH own AS (
        SELECT e.entry_id, e.party_key FROM queue_entries e
         WHERE e.player_id = player_id AND e.status = 'queued'
           AND (queue IS NULL OR e.queue = queue)
           AND (e.owner = session_user OR matchmaker_sees_all())),
    target AS (
        SELECT own.entry_id FROM own
        UNION
        SELECT e.entry_id FROM queue_entries e JOIN own ON e.party_key = own.party_key
         WHERE e.status = 'queued')
    UPDATE queue_entries e
       SET status = 'cancelled', updated_at = now(),
           reject_reason = CASE WHEN e.player_id = player_id THEN 'cancelled by the client'
                                ELSE format('party member %s cancelled', player_id) END
      FROM target
     WHERE e.entry_id = target.entry_id AND e.status = 'queued';
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- Refresh the tickets of these players (and of their parties) so they do not expire;
-- call it every ticket_ttl / 3 (queue_catalog.keep_alive_every) while they wait. Returns
-- how many entries were refreshed: fewer than expected means some left the queue (read
-- player_status to see why).
CREATE FUNCTION keep_alive(player_ids text[], queue text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    n integer;
BEGIN
    IF player_ids IS NULL OR cardinality(player_ids) > 10000 THEN
        PERFORM matchmaker_refuse('player_ids', cardinality(player_ids)::text,
                                  'must be an array of at most 10000 player ids');
    END IF;
    WITH own AS (
        SELECT e.entry_id, e.party_key FROM queue_entries e
         WHERE e.player_id = ANY (player_ids) AND e.status = 'queued'
           AND (queue IS NULL OR e.queue = queue)
           AND (e.owner = session_user OR matchmaker_sees_all())),
    target AS (
        SELECT own.entry_id FROM own
        UNION
        SELECT e.entry_id FROM queue_entries e JOIN own ON e.party_key = own.party_key
         WHERE e.status = 'queued')
    UPDATE queue_entries e
       SET expires_at = now() + q.ticket_ttl
      FROM target, queues q
     WHERE e.entry_id = target.entry_id AND q.queue = e.queue AND e.status = 'queued'
       -- An entry already past its expiry stays expired: the daemon marks it so.
       AND e.expires_at > now();
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- ---- Client views ----------------------------------------------------------------------
-- Each filters to the caller's own entries unless the caller is the daemon or ops.
-- security_barrier: a client's own condition on a view runs only on the rows the view's
-- filter let through. Without it the planner may run a cheap function of the client's
-- (CREATE FUNCTION pg_temp.f ... needs no privilege beyond TEMP) on every row of the
-- table first, and the function sees, or raises with, other clients' players.

-- A player's latest entry per queue: the countdown while queued, the assignment once
-- matched, the reason otherwise. Same columns as before, plus reason / expires_at /
-- party_id; a queued entry past its expiry reads as expired at once.
CREATE OR REPLACE VIEW player_status WITH (security_barrier) AS
SELECT DISTINCT ON (e.queue, e.player_id)
       e.queue,
       e.player_id,
       e.entry_id,
       CASE WHEN e.status = 'queued' AND e.expires_at <= now() THEN 'expired'
            ELSE e.status END AS status,
       e.enqueued_at,
       CASE WHEN e.status = 'queued' THEN c.seconds_to_next_round END
           AS seconds_to_next_round,
       CASE WHEN e.status = 'queued' THEN c.next_round_at END AS next_round_at,
       CASE WHEN e.status = 'queued' THEN c.waiting_for END AS waiting_for,
       CASE WHEN e.status = 'queued' THEN c.players_missing_for_early_start END
           AS players_missing_for_early_start,
       (e.status = 'queued' AND c.target_pool IS NOT NULL) AS may_start_early,
       e.match_id,
       e.team,
       e.role,
       m.region,
       m.hosts,
       e.reject_reason,
       CASE WHEN e.status = 'queued' AND e.expires_at <= now()
            THEN 'expired: no keep_alive within the queue''s ticket_ttl'
            ELSE e.reject_reason END AS reason,
       e.expires_at,
       e.party_id
  FROM queue_entries e
  LEFT JOIN queue_countdown c ON c.queue = e.queue AND e.status = 'queued'
  LEFT JOIN matches m ON m.match_id = e.match_id
 WHERE e.owner = session_user OR (SELECT matchmaker_sees_all())
 ORDER BY e.queue, e.player_id, e.entry_id DESC;

-- One line per matched player, for matches that hold at least one of the caller's
-- players (their teammates and opponents included).
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
                AND o.player_id <> mp.player_id
              ORDER BY o.player_id) AS teammates,
       ARRAY(SELECT o.player_id FROM match_players o
              WHERE o.match_id = mp.match_id AND o.team <> mp.team
              ORDER BY o.team, o.player_id) AS opponents,
       m.region,
       m.hosts,
       m.score AS match_score,
       m.factors
  FROM match_players mp
  JOIN matches m ON m.match_id = mp.match_id
 WHERE (SELECT matchmaker_sees_all())
    OR EXISTS (SELECT 1 FROM match_players mine
                 JOIN queue_entries e ON e.entry_id = mine.entry_id
                WHERE mine.match_id = mp.match_id AND e.owner = session_user);

-- The queues a client may enqueue into, their format, limits and countdown.
CREATE VIEW queue_catalog WITH (security_barrier) AS
SELECT q.queue,
       q.teams,
       q.team_size,
       q.network,
       q.roles,
       q.regions,
       q.max_party_size,
       q.ticket_ttl,
       -- How often a client should call keep_alive for its waiting players.
       q.ticket_ttl / 3 AS keep_alive_every,
       q.max_wait,
       c.next_round_at,
       c.seconds_to_next_round,
       c.waiting_for,
       c.pool_size,
       c.target_pool,
       c.players_missing_for_early_start
  FROM queues q
  LEFT JOIN queue_countdown c ON c.queue = q.queue
 WHERE q.active;

-- ---- Round notification ------------------------------------------------------------------
-- The commit writes a round's counts after its matches (a row that fails is isolated
-- first), so the notification is sent at COMMIT from the row as it is then: a deferred
-- constraint trigger that reads the final row, not the row as first inserted.
CREATE OR REPLACE FUNCTION matchmaker_notify_round() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('matchmaker_round', json_build_object(
        'queue', r.queue, 'round_id', r.round_id,
        'match_count', r.match_count, 'matched', r.matched)::text)
       FROM rounds r
      WHERE r.round_id = NEW.round_id;
    RETURN NULL;
END
$$;

DROP TRIGGER rounds_notify_commit ON rounds;
CREATE CONSTRAINT TRIGGER rounds_notify_commit
    AFTER INSERT ON rounds
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION matchmaker_notify_round();

-- ---- Privileges ------------------------------------------------------------------------
-- Nothing for PUBLIC: functions are executable by PUBLIC by default, and PostgreSQL before
-- 15 lets PUBLIC create objects in schema public (which a SECURITY DEFINER function's
-- search_path would then see). PostgreSQL 15 and later already revoke CREATE by default.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE ALL ON queue_entries, rounds, matches, match_players, queue_state, leases, queues,
              player_status, match_details, queue_countdown, queue_catalog, round_summaries
    FROM PUBLIC;
REVOKE ALL ON FUNCTION
    enqueue(text, text, double precision, jsonb, jsonb, text[], double precision,
            double precision),
    enqueue_party(text, text, jsonb),
    cancel(text, text),
    keep_alive(text[], text),
    matchmaker_sees_all(),
    matchmaker_refuse(text, text, text),
    matchmaker_check_id(text, text),
    matchmaker_check_ms_map(text, jsonb, integer, text[]),
    matchmaker_check_member(queues, text, double precision, double precision, jsonb, jsonb,
                            text[], double precision),
    matchmaker_member_ok(queues, text, double precision, double precision, jsonb, jsonb,
                         text[], double precision),
    matchmaker_active_queue(text),
    matchmaker_notify_enqueue(),
    matchmaker_notify_round()
    FROM PUBLIC;

GRANT USAGE ON SCHEMA public TO matchmaker_client, matchmaker_daemon, matchmaker_ops;

GRANT EXECUTE ON FUNCTION
    enqueue(text, text, double precision, jsonb, jsonb, text[], double precision,
            double precision),
    enqueue_party(text, text, jsonb),
    cancel(text, text),
    keep_alive(text[], text)
    TO matchmaker_client;
-- Functions in a view run with the privileges of the view's reader.
GRANT EXECUTE ON FUNCTION matchmaker_sees_all()
    TO matchmaker_client, matchmaker_daemon, matchmaker_ops;
GRANT SELECT ON player_status, match_details, queue_countdown, queue_catalog
    TO matchmaker_client;

GRANT SELECT, INSERT, UPDATE ON queue_entries, rounds, matches, match_players, queue_state,
                                leases, queues
    TO matchmaker_daemon;
GRANT SELECT ON player_status, match_details, queue_countdown, queue_catalog,
                round_summaries
    TO matchmaker_daemon;
GRANT USAGE, SELECT ON SEQUENCE queue_entries_entry_id_seq, rounds_round_id_seq,
                              matches_match_id_seq
    TO matchmaker_daemon;
-- `matchmaker run --no-migrate` checks the schema version before it starts.
-- (sqlx's table: present whenever the migrations run through `matchmaker migrate`.)
DO $$
BEGIN
    IF to_regclass('_sqlx_migrations') IS NOT NULL THEN
        GRANT SELECT ON _sqlx_migrations TO matchmaker_daemon, matchmaker_ops;
    END IF;
END
$$;

GRANT SELECT ON queue_entries, rounds, matches, match_players, queue_state, leases, queues,
                player_status, match_details, queue_countdown, queue_catalog,
                round_summaries
    TO matchmaker_ops;
