-- The matchmaker's schema, 1.0, by concern. Each migration holds one concern's tables,
-- indexes, functions, views, notification triggers and grants, and builds on the ones
-- before it:
--   0001 roles and input rules   who may do what; the rules every client input is held to
--   0002 notifications           NOTIFY that never fails a commit; each login's channels
--   0003 queues and tickets      the queues, their entries, enqueue, cancel, keep_alive
--   0004 leases and replicas     which daemon runs each queue's rounds
--   0005 rounds and matches      what each round did, its matches and their players
--   0006 countdown               when the next round runs: what a waiting player reads
--   0007 backfill                running sessions that lost players
--   0008 avoids and quotas       players kept apart; what one client login may use
--   0009 ready check             players accept a match before it is final
--
-- Three kinds of users, four roles (created below):
--   clients    game clients or a game backend (matchmaker_client): call the client
--              functions and read the client views (below); they hold no
--              privilege on any table. This is Open Match's frontend rule (the server
--              owns tickets) in PostgreSQL's own terms: SECURITY DEFINER functions with a
--              pinned search_path, roles, row locks. Game servers (matchmaker_server) are
--              the clients that ask for backfill for the sessions they run (0007).
--   the daemon `matchmaker run` (matchmaker_daemon): the only writer of the tables. It
--              publishes the queues, runs each queue's rounds under a lease, commits
--              matches, expires tickets and prunes old history.
--   operators  (matchmaker_ops): read everything, write nothing.
--
-- The client API, by the migration that holds it:
--   0002 queue_channel(queue)                     the queue's NOTIFY channel
--   0003 enqueue(queue, player_id, skill, ...)    one solo player -> entry_id
--   0003 enqueue_party(queue, party_id, members)  a whole party -> (player_id, entry_id)
--   0003 cancel(player_id, queue)                 a player's entries and their party's
--   0003 keep_alive(player_ids, queue)            refresh tickets before they expire
--   0007 request_backfill(queue, session_id, members, open_slots, expires_in) -> request_id
--   0007 cancel_backfill(request_id)              -> boolean
--   0008 avoid(player_id, avoided_player_id, duration) -> the player's avoids kept
--   0008 unavoid(player_id, avoided_player_id)    -> boolean
--   0009 accept_match(player_id, match_id)        accept a pending match -> text
--   0009 decline_match(player_id, match_id)       decline it (it is cancelled) -> text
-- and the views match_details (0005), player_status, queue_countdown, queue_catalog
-- (0006), backfill_status (0007), avoid_list (0008).
--
-- Each runs as its owner (SECURITY DEFINER) with a pinned search_path, so clients need no
-- privilege on any table. Refusals: SQLSTATE 22023, a message naming the field, the value
-- and the rule (the input rules, below); a text that is not a value of a parameter's type
-- is PostgreSQL's own error of class 22.
--
-- Every time in the views is computed against now() of the reading transaction.
--
-- The client views filter to the caller's own entries unless the caller is the daemon or
-- ops. security_barrier: a client's own condition on a view runs only on the rows the
-- view's filter let through. Without it the planner may run a cheap function of the
-- client's (CREATE FUNCTION pg_temp.f ... needs no privilege beyond TEMP) on every row of
-- the table first, and the function sees, or raises with, other clients' players.
--
-- Released migrations are never edited: a change to this schema is a new migration.


-- =========================================================================================
-- Roles
-- =========================================================================================

-- Roles belong to the cluster, not the database: a second database on the same server (or
-- a concurrent migration of one) finds them there already. Studios make their login roles
-- members: CREATE ROLE game_backend LOGIN PASSWORD '...' IN ROLE matchmaker_client;
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['matchmaker_client', 'matchmaker_daemon', 'matchmaker_ops',
                             'matchmaker_server'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION
                -- Another database's migration created it in the meantime.
                WHEN duplicate_object OR unique_violation THEN NULL;
                WHEN insufficient_privilege THEN
                    RAISE EXCEPTION 'the migration must create role %, and the migrating role may not', r
                        USING HINT = 'run `matchmaker migrate` as a role with CREATEROLE once, '
                                     'or create the roles matchmaker_client, matchmaker_daemon, '
                                     'matchmaker_ops and matchmaker_server (NOLOGIN) beforehand';
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
        ('matchmaker_ops', 'operators: read everything, write nothing'),
        ('matchmaker_server',
         'game servers: request and cancel backfill for their sessions, read backfill_status'))
        AS t(role, text)
    LOOP
        BEGIN
            EXECUTE format('COMMENT ON ROLE %I IS %L', c.role, c.text);
        EXCEPTION WHEN insufficient_privilege THEN NULL;
        END;
    END LOOP;
END
$$;

-- ---- Nothing for PUBLIC -----------------------------------------------------------------
-- Functions are executable by PUBLIC by default, and PostgreSQL before 15 lets PUBLIC
-- create objects in schema public (which a SECURITY DEFINER function's search_path would
-- then see). PostgreSQL 15 and later already revoke CREATE by default.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
-- Every migration revokes its own tables, views and functions from PUBLIC, then grants
-- each role what it needs.
GRANT USAGE ON SCHEMA public
    TO matchmaker_client, matchmaker_daemon, matchmaker_ops, matchmaker_server;

-- ---- Large objects: closed to clients and servers ---------------------------------------
-- Any role may create large objects by default (lo_create, lo_import, lo_from_bytea...),
-- and nothing bounds their size: a client login could fill the disk. The matchmaker uses
-- none. Revoked from PUBLIC, through which alone the client and server roles hold them.
-- The functions belong to the bootstrap superuser: a migrating role that is not a
-- superuser cannot revoke them, and the deploy step does (docs/operations.md, "Bounding
-- client logins").
DO $$
DECLARE
    f regprocedure;
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE NOTICE 'large objects stay open to PUBLIC: only a superuser may revoke them '
                     '(docs/operations.md, "Bounding client logins")';
        RETURN;
    END IF;
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = 'pg_catalog'::regnamespace
                AND (p.proname LIKE 'lo\_%' OR p.proname IN ('loread', 'lowrite'))
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
END
$$;

-- `matchmaker run --no-migrate` and the read-only commands check the schema version
-- before they start. (sqlx's table: present whenever the migrations run through
-- `matchmaker migrate`.)
DO $$
BEGIN
    IF to_regclass('_sqlx_migrations') IS NOT NULL THEN
        GRANT SELECT ON _sqlx_migrations TO matchmaker_daemon, matchmaker_ops;
    END IF;
END
$$;


-- =========================================================================================
-- Internal helpers
-- =========================================================================================
-- None of these is executable by clients directly (each migration revokes its helpers from
-- PUBLIC); the client functions run them as their owner.

-- Operators and the daemon see every entry; a client login sees the entries it enqueued.
-- Called by the client views, with the privileges of the view's reader.
CREATE FUNCTION matchmaker_sees_all() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT pg_has_role(session_user, 'matchmaker_daemon', 'USAGE')
        OR pg_has_role(session_user, 'matchmaker_ops', 'USAGE')
$$;

-- ---- Input rules ------------------------------------------------------------------------
-- Every refusal is an error whose message names the field, the value and the rule, with
-- SQLSTATE 22023 (invalid_parameter_value). A client tells "your request is wrong" from
-- "the server is down" by the class alone: every refusal of a client function is in class
-- 22 (a text PostgreSQL cannot read as the parameter's type keeps its own 22P02, ...), so
-- no check may let another error through (a cast, an array subscript, a unique index).
-- The limits keep any single row as cheap to a round as a normal player:
--   ids (player, party, session, region, role, peer): 1-64 characters, no control
--     characters;
--   skill: finite, |skill| <= 1e6; skill_sigma: finite, 0..1e6; side: 0..1;
--   latencies: at most 32 regions (known regions only, when the queue lists them: a
--     dedicated-server queue always does),
--   peer_pings: at most 100 players; every ping 0..10000 ms;
--   roles: at most 16, known to the queue, no repeats; parties: 2..max_party_size members;
--   attributes: at most 16 names, each a value or a list of at most 16 values; names and
--     values 1-64 characters, no control characters.
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

-- ---- Canonical numbers -----------------------------------------------------------------
-- jsonb keeps a number as it was written, scale included: 0e-16383 is a few bytes stored
-- and 16,385 characters printed, and every round prints the rows it reads (the snapshot,
-- the backfill requests, the replay record). So the client functions store what they
-- checked in canonical form: milliseconds rounded to the microsecond, skills and sides to
-- 6 decimals, team indices as integers, trailing zeros dropped. No stored row prints longer
-- than a normal player's.

-- A checked map of names to milliseconds (matchmaker_check_ms_map), canonical.
CREATE FUNCTION matchmaker_canonical_ms_map(m jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN m = '{}' THEN m
                ELSE (SELECT jsonb_object_agg(key, trim_scale(round(value::numeric, 3)))
                        FROM jsonb_each(m)) END
$$;

-- A checked member of enqueue_party or request_backfill (matchmaker_check_member_json),
-- canonical: the fields it has, numbers rounded, JSON nulls dropped.
CREATE FUNCTION matchmaker_canonical_member(m jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'player_id', m -> 'player_id',
        'team', to_jsonb((m ->> 'team')::numeric::integer),
        'skill', to_jsonb(trim_scale(round((m ->> 'skill')::numeric, 6))),
        'skill_sigma', to_jsonb(trim_scale(round((m ->> 'skill_sigma')::numeric, 6))),
        'side', to_jsonb(trim_scale(round((m ->> 'side')::numeric, 6))),
        'latencies', matchmaker_canonical_ms_map(m -> 'latencies'),
        'peer_pings', matchmaker_canonical_ms_map(m -> 'peer_pings'),
        'roles', m -> 'roles',
        'attributes', m -> 'attributes'))
$$;

-- A JSON object of attribute names to a string or an array of strings (the input rules'
-- limits). A string is checked as an id is: 1-64 characters, no control characters.
CREATE FUNCTION matchmaker_check_attributes(field text, a jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    e record;
    v jsonb;
    n integer := 0;
BEGIN
    IF a IS NULL OR jsonb_typeof(a) <> 'object' THEN
        PERFORM matchmaker_refuse(field, a::text,
            'must be a JSON object of names to a string or a list of strings');
    END IF;
    FOR e IN SELECT key, value FROM jsonb_each(a) LOOP
        n := n + 1;
        IF n > 16 THEN
            PERFORM matchmaker_refuse(field, a::text, 'has more than 16 attributes');
        END IF;
        PERFORM matchmaker_check_id(field || ' key', e.key);
        IF jsonb_typeof(e.value) = 'string' THEN
            PERFORM matchmaker_check_id(field || '.' || e.key, e.value #>> '{}');
        ELSIF jsonb_typeof(e.value) = 'array' THEN
            IF jsonb_array_length(e.value) > 16 THEN
                PERFORM matchmaker_refuse(field || '.' || e.key, e.value::text,
                                          'has more than 16 values');
            END IF;
            FOR v IN SELECT value FROM jsonb_array_elements(e.value) LOOP
                IF jsonb_typeof(v) <> 'string' THEN
                    PERFORM matchmaker_refuse(field || '.' || e.key, e.value::text,
                                              'must be a string or a list of strings');
                END IF;
                PERFORM matchmaker_check_id(field || '.' || e.key, v #>> '{}');
            END LOOP;
        ELSE
            PERFORM matchmaker_refuse(field || '.' || e.key, e.value::text,
                                      'must be a string or a list of strings');
        END IF;
    END LOOP;
END
$$;

-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON FUNCTION
    matchmaker_sees_all(),
    matchmaker_refuse(text, text, text),
    matchmaker_check_id(text, text),
    matchmaker_check_ms_map(text, jsonb, integer, text[]),
    matchmaker_check_attributes(text, jsonb),
    matchmaker_canonical_ms_map(jsonb),
    matchmaker_canonical_member(jsonb)
    FROM PUBLIC;

-- Functions in a view run with the privileges of the view's reader.
GRANT EXECUTE ON FUNCTION matchmaker_sees_all()
    TO matchmaker_client, matchmaker_daemon, matchmaker_ops, matchmaker_server;
