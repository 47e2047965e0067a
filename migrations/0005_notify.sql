-- Wake-ups. NOTIFY only wakes listeners earlier; the daemon and clients also poll, so a
-- lost notification delays, never loses. Notifications are sent at COMMIT, so a listener
-- never sees a row that is not there yet.

-- Enqueue: wakes the early-start trigger of the queue. Per statement, not per row: a bulk
-- INSERT sends one notification per queue (the payload is the queue name).
CREATE FUNCTION matchmaker_notify_enqueue() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('matchmaker_enqueue', q.queue)
       FROM (SELECT DISTINCT queue FROM inserted) q;
    RETURN NULL;
END
$$;

CREATE TRIGGER queue_entries_notify_enqueue
    AFTER INSERT ON queue_entries
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION matchmaker_notify_enqueue();

-- Round commit: wakes clients or a gateway waiting for assignments. Payload: JSON with
-- queue, round_id, match_count, matched.
CREATE FUNCTION matchmaker_notify_round() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('matchmaker_round', json_build_object(
        'queue', NEW.queue, 'round_id', NEW.round_id,
        'match_count', NEW.match_count, 'matched', NEW.matched)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER rounds_notify_commit
    AFTER INSERT ON rounds
    FOR EACH ROW EXECUTE FUNCTION matchmaker_notify_round();
