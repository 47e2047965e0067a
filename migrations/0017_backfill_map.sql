-- A backfill request names the map its session is played on.
--
-- In a queue with maps, a player who vetoed a map must not be sent into a running
-- session on it. request_backfill takes the session's map (`map`, optional, one of the
-- queue's maps); the round then fills the session only with parties none of whose
-- players vetoes that map, rates the fill's maps factor on that map, and writes it with
-- the fill. A request without a map is filled as before, vetoes unknown to it.

ALTER TABLE backfill_requests ADD COLUMN map text NULL;
COMMENT ON COLUMN backfill_requests.map IS
    'The map the session is played on (request_backfill''s map): nobody who vetoes it fills '
    'the session; NULL: the session did not say';

-- The checks and the insert of 0007 stay as they are, under a name of their own; the
-- client calls request_backfill, which checks the map, then sets it on the new request.
ALTER FUNCTION request_backfill(text, text, jsonb, integer[], interval)
    RENAME TO matchmaker_request_backfill_members;
REVOKE ALL ON FUNCTION
    matchmaker_request_backfill_members(text, text, jsonb, integer[], interval)
    FROM PUBLIC, matchmaker_server;

CREATE FUNCTION request_backfill(queue text, session_id text, members jsonb,
                                 open_slots integer[],
                                 expires_in interval DEFAULT interval '60 seconds',
                                 map text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    q queues := matchmaker_active_queue(queue);
    id bigint;
BEGIN
    IF map IS NOT NULL THEN
        IF cardinality(q.maps) = 0 THEN
            PERFORM matchmaker_refuse('map', quote_literal(map),
                                      format('queue %s has no maps', q.queue));
        ELSIF NOT map = ANY (q.maps) THEN
            PERFORM matchmaker_refuse('map', quote_literal(map),
                format('unknown map; queue %s''s maps: %s', q.queue,
                       array_to_string(q.maps, ', ')));
        END IF;
    END IF;
    id := matchmaker_request_backfill_members(queue, session_id, members, open_slots,
                                              expires_in);
    IF map IS NOT NULL THEN
        UPDATE backfill_requests b SET map = request_backfill.map WHERE b.request_id = id;
    END IF;
    RETURN id;
END
$$;

REVOKE ALL ON FUNCTION
    request_backfill(text, text, jsonb, integer[], interval, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    request_backfill(text, text, jsonb, integer[], interval, text)
    TO matchmaker_server;
