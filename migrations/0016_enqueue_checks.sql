-- A cheaper fast path for enqueue()'s input rules (the client contract's target: enqueue()
-- within 10% of a raw INSERT). Same rules, same refusals.
--
-- `$.keyvalue()` built a {key, value, id} object per map entry and ran two like_regex tests
-- on each key: about 40 us of the 50 us the fast path took for a 10-region map (PostgreSQL
-- 15, a PL/pgSQL loop over the inlined expression). The same rules now take about 15 us:
--   - the values with `strict $.*` alone (the walk the table's own CHECK makes);
--   - an empty key with the `?` operator;
--   - the keys' length and control characters on the map's text form, where keys are the
--     only strings (values are numbers). jsonb's text form escapes control characters and
--     quotes with a backslash, so a map whose text has no backslash and no control
--     character (DEL is one, and is not escaped) has plain keys, and a key of 65 or more
--     characters shows as a quote followed by 65 characters that are not quotes;
--   - known regions as `latencies - regions = '{}'` (every key is a region).
-- A map with a backslash in its text (a key with a quote, a backslash or an escaped control
-- character) fails the fast path and goes to the rule-by-rule checks, which accept it or
-- name the rule it breaks: the fast path may refuse more, never accept more.
-- tests/it/db_member_fast_path.rs holds it to the rule-by-rule checks at every edge.
--
-- enqueue() reads the queue's row inside its INSERT (INSERT ... SELECT FROM queues WHERE
-- the queue is active and the fast path holds): one statement where there were two, about
-- 10 us less per call. When no row goes in, the slow route finds out why (unknown or
-- retired queue, the first rule broken) and raises it, or inserts the player the fast path
-- was too strict for.
--
-- The roles' "no repeats" count drops NULL roles before jsonb_object(), which raises on a
-- NULL key: the planner folds the call for a constant array (a custom plan of a prepared
-- statement), whatever the AND around it, and a client sent "null value not allowed for
-- object key" instead of the refusal. A NULL role fails the count, and the checks name it.
--
-- Tried and left out: ON CONFLICT DO NOTHING in place of the exception block (a
-- subtransaction per call) measured the same, and without a conflict target (PL/pgSQL
-- reads the target's columns as the function's parameters) every unique index becomes an
-- arbiter.

CREATE OR REPLACE FUNCTION matchmaker_member_ok(q queues, player_id text, skill double precision,
                                               skill_sigma double precision, latencies jsonb,
                                               peer_pings jsonb, roles text[],
                                               side double precision) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        length(player_id) BETWEEN 1 AND 64 AND player_id !~ '[[:cntrl:]]'
        AND skill >= -1e6 AND skill <= 1e6
        AND (skill_sigma IS NULL OR (skill_sigma >= 0 AND skill_sigma <= 1e6))
        AND (side IS NULL OR (side >= 0 AND side <= 1))
        AND jsonb_typeof(latencies) = 'object' AND jsonb_typeof(peer_pings) = 'object'
        AND (latencies = '{}' OR (
             jsonb_array_length(jsonb_path_query_array(latencies, '$.*')) <= 32
             AND NOT jsonb_path_exists(latencies,
                 'strict $.* ? (@.type() != "number" || @ < 0 || @ > 10000)')
             AND NOT latencies ? ''
             AND latencies::text !~ '[\\[:cntrl:]]|"[^"]{65}'
             AND (cardinality(q.regions) = 0 OR latencies - q.regions = '{}')))
        AND (peer_pings = '{}' OR (
             jsonb_array_length(jsonb_path_query_array(peer_pings, '$.*')) <= 100
             AND NOT jsonb_path_exists(peer_pings,
                 'strict $.* ? (@.type() != "number" || @ < 0 || @ > 10000)')
             AND NOT peer_pings ? ''
             AND peer_pings::text !~ '[\\[:cntrl:]]|"[^"]{65}'))
        -- A NULL role is in no array (<@ never matches NULL).
        AND cardinality(roles) <= 16 AND roles <@ q.roles
        AND (cardinality(roles) < 2
             OR cardinality(roles)
                = jsonb_array_length(jsonb_path_query_array(
                      jsonb_object(array_remove(roles, NULL), array_remove(roles, NULL)),
                      '$.*'))),
        false)
$$;

CREATE OR REPLACE FUNCTION enqueue(queue text, player_id text, skill double precision,
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
    BEGIN
        -- The fast route: an active queue and a player the inlined fast path accepts.
        INSERT INTO queue_entries AS e (queue, player_id, skill, skill_sigma, latencies,
                                        peer_pings, roles, side, enqueued_at, expires_at)
        SELECT aq.queue, player_id, skill, skill_sigma, latencies, peer_pings, roles, side,
               now(), now() + aq.ticket_ttl
          FROM queues aq
         WHERE aq.queue = queue AND aq.active
           AND matchmaker_member_ok(aq, player_id, skill, skill_sigma, latencies, peer_pings,
                                    roles, side)
        RETURNING e.entry_id INTO id;
        IF id IS NULL THEN
            -- The slow route: raises the refusal (unknown or retired queue, the first rule
            -- broken), or returns when the fast path was stricter than the rules.
            q := matchmaker_active_queue(queue);
            PERFORM matchmaker_check_member(q, player_id, skill, skill_sigma, latencies,
                                            peer_pings, roles, side);
            INSERT INTO queue_entries AS e (queue, player_id, skill, skill_sigma, latencies,
                                            peer_pings, roles, side, enqueued_at, expires_at)
            VALUES (q.queue, player_id, skill, skill_sigma, latencies, peer_pings, roles, side,
                    now(), now() + q.ticket_ttl)
            RETURNING e.entry_id INTO id;
        END IF;
    EXCEPTION WHEN unique_violation THEN
        PERFORM matchmaker_refuse('player_id', quote_literal(player_id),
            format('is already queued in queue %s (cancel it first)', queue));
    END;
    RETURN id;
END
$$;

-- enqueue_party(): "already queued" is checked before the party's try-lock as well as
-- under it. Two calls in a row for a party already queued (from one login or two) could
-- see the second refused with "being enqueued by another call right now": the first
-- call's refusal reaches the client just before its transaction releases the lock. The
-- body is 0009's otherwise.
CREATE OR REPLACE FUNCTION enqueue_party(queue text, party_id text, members jsonb)
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

    -- A party already queued is refused before the lock below: a client that repeats a
    -- refused call at once must hear "already queued" again, not "being enqueued by
    -- another call" from the lock of its own first call (PostgreSQL reports an error to
    -- the client a moment before the failed transaction releases its locks).
    IF EXISTS (SELECT 1 FROM queue_entries e
                WHERE e.queue = q.queue AND e.party_id = party_id AND e.status = 'queued') THEN
        PERFORM matchmaker_refuse('party_id', quote_literal(party_id),
            format('is already queued in queue %s (cancel it first)', q.queue));
    END IF;
    -- One party_id per queue at a time. A try-lock, not a wait: a concurrent call for the
    -- same party (or a client holding that advisory lock) gets a refusal, never a stall.
    -- The check above runs again under the lock, for a call that committed meanwhile.
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
