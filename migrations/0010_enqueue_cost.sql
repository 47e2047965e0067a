-- enqueue() at the cost of a plain INSERT, near enough (the client contract's target: within
-- 10% of the raw single-row INSERT clients ran before it). Two costs of migration 0009 go:
--
-- 1. The row lock on the queue (FOR KEY SHARE). With several clients enqueueing at once,
--    every enqueue wrote a lock on the same queues row (a multixact and a WAL record each).
--    Its one job, keeping a retiring queue from taking an entry between the retirement and
--    its sweep of queued entries, is done by the daemon's supervisor instead: every poll it
--    re-retires any queue that no config lists and that still has queued entries, so an
--    enqueue that raced the retirement is rejected with the same reason one poll later.
--
-- 2. The fast path of the input rules as a nested PL/pgSQL call. As a SQL function without
--    a subquery, matchmaker_member_ok is inlined into enqueue()'s own IF expression by the
--    planner: no second function call, no SPI statement per transaction. The rules are the
--    same; the roles' "no repeats" check counts the keys of jsonb_object(roles, roles)
--    (repeats collapse into one key) instead of a SELECT count(DISTINCT ...).
--    STABLE, not IMMUTABLE: jsonb_build_object is stable, and an IMMUTABLE SQL function
--    whose body is not would not be inlined.

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
        AND (cardinality(roles) < 2
             OR cardinality(roles)
                = jsonb_array_length(jsonb_path_query_array(jsonb_object(roles, roles), '$.*'))),
        false)
$$;

-- The queue's row without a lock: see (1) above.
CREATE OR REPLACE FUNCTION matchmaker_active_queue(name text) RETURNS queues
LANGUAGE plpgsql AS $$
DECLARE
    q queues;
BEGIN
    SELECT * INTO q FROM queues WHERE queues.queue = name;
    IF NOT FOUND OR NOT q.active THEN
        PERFORM matchmaker_refuse('queue', quote_nullable(name),
            coalesce('unknown queue; queues: '
                     || (SELECT string_agg(queue, ', ' ORDER BY queue) FROM queues WHERE active),
                     'unknown queue; no queue is served yet (is the daemon running?)'));
    END IF;
    RETURN q;
END
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
    -- matchmaker_active_queue() inlined for an active queue; the function raises the
    -- refusal otherwise.
    SELECT * INTO q FROM queues WHERE queues.queue = queue;
    IF NOT FOUND OR NOT q.active THEN
        q := matchmaker_active_queue(queue);
    END IF;
    -- The fast path is inlined here; the rule-by-rule checks run only when it fails, and
    -- name the first rule broken.
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
