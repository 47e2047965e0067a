-- 0019: a party id belongs to the login that enqueued it. Before, "already queued" and the
-- party's try-lock looked at every login's parties: one game backend could block another's
-- party id (and learn that it is queued) by enqueueing a party with the same id first. Now
-- two logins may each queue a party "crew" in one queue; the daemon tells parties apart by
-- party_key (one per enqueue_party call) as it always has, and a login still cannot queue
-- two parties with one id in one queue. The body is 0016's otherwise.

-- The "already queued" checks of a login's own parties.
CREATE INDEX queue_entries_queued_owner_party ON queue_entries (queue, owner, party_id)
    WHERE status = 'queued' AND party_id IS NOT NULL;
DROP INDEX queue_entries_queued_party_id;

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

    -- This login's party already queued is refused before the lock below (see 0016).
    IF EXISTS (SELECT 1 FROM queue_entries e
                WHERE e.queue = q.queue AND e.owner = session_user
                  AND e.party_id = party_id AND e.status = 'queued') THEN
        PERFORM matchmaker_refuse('party_id', quote_literal(party_id),
            format('is already queued in queue %s (cancel it first)', q.queue));
    END IF;
    -- One party_id per login and queue at a time. A try-lock, not a wait: a concurrent
    -- call for the same party gets a refusal, never a stall. The key holds the login, so
    -- another login's calls (or advisory locks) never collide with this one's by design.
    IF NOT pg_try_advisory_xact_lock(
            hashtextextended(q.queue || E'\x1f' || session_user || E'\x1f' || party_id, 0)) THEN
        PERFORM matchmaker_refuse('party_id', quote_literal(party_id),
            format('is being enqueued in queue %s by another call right now', q.queue));
    END IF;
    IF EXISTS (SELECT 1 FROM queue_entries e
                WHERE e.queue = q.queue AND e.owner = session_user
                  AND e.party_id = party_id AND e.status = 'queued') THEN
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
