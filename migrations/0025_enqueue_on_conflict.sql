-- 0025: enqueue() refuses "already queued" through ON CONFLICT DO NOTHING, not an
-- exception block; it reads the queue's row first and inserts with VALUES.
--
-- Same rules, same refusals, same messages; only the route to them changes:
--   - An exception block is a subtransaction on every call, taken whether or not the
--     player is already queued. ON CONFLICT on the one-queued-row-per-player index checks
--     the same index the unique violation came from. A second call racing the first for
--     the same player waits for it and then inserts nothing, as the exception block caught
--     the violation after the same wait; either way the caller gets the readable refusal.
--   - With ON CONFLICT, INSERT ... SELECT FROM queues (0016's one statement) measured no
--     faster than a SELECT of the queue's row and an INSERT ... VALUES, so enqueue() does
--     the latter. The fast path (matchmaker_member_ok) and the slow route that names the
--     broken rule are 0016's.
--
-- Server time per call (a PL/pgSQL loop of 3,000 calls in one transaction, rolled back; an
-- 8-region latency map; nine alternating runs in one session, medians): raw INSERT 258 us,
-- 0016's enqueue() 341 us, this one 313 us. `matchmaker bench-db` prints the same
-- measurement for enqueue() and the raw INSERT, after their rates under load.
--
-- `#variable_conflict use_column`: ON CONFLICT names its target's columns, which share
-- names with enqueue()'s parameters; the parameters are read as enqueue.<name>.

CREATE OR REPLACE FUNCTION enqueue(queue text, player_id text, skill double precision,
                                   latencies jsonb DEFAULT '{}', peer_pings jsonb DEFAULT '{}',
                                   roles text[] DEFAULT '{}', side double precision DEFAULT NULL,
                                   skill_sigma double precision DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_column
DECLARE
    q queues;
    id bigint;
BEGIN
    SELECT * INTO q FROM queues WHERE queues.queue = enqueue.queue AND queues.active;
    IF NOT FOUND
       OR NOT matchmaker_member_ok(q, enqueue.player_id, enqueue.skill, enqueue.skill_sigma,
                                   enqueue.latencies, enqueue.peer_pings, enqueue.roles,
                                   enqueue.side) THEN
        -- The slow route: raises the refusal (unknown or retired queue, the first rule
        -- broken), or returns when the fast path was stricter than the rules.
        q := matchmaker_active_queue(enqueue.queue);
        PERFORM matchmaker_check_member(q, enqueue.player_id, enqueue.skill,
                                        enqueue.skill_sigma, enqueue.latencies,
                                        enqueue.peer_pings, enqueue.roles, enqueue.side);
    END IF;
    INSERT INTO queue_entries AS e (queue, player_id, skill, skill_sigma, latencies,
                                    peer_pings, roles, side, enqueued_at, expires_at)
    VALUES (q.queue, enqueue.player_id, enqueue.skill, enqueue.skill_sigma, enqueue.latencies,
            enqueue.peer_pings, enqueue.roles, enqueue.side, now(), now() + q.ticket_ttl)
    ON CONFLICT (queue, player_id) WHERE status = 'queued' DO NOTHING
    RETURNING e.entry_id INTO id;
    IF id IS NULL THEN
        PERFORM matchmaker_refuse('player_id', quote_literal(enqueue.player_id),
            format('is already queued in queue %s (cancel it first)', q.queue));
    END IF;
    RETURN id;
END
$$;
