-- cancel() and keep_alive() refuse a queue the database does not know.
--
-- Both take an optional queue to narrow the call to. A name that is no queue at all (a
-- typo, a queue of another deployment) matched no entry and returned 0, which reads as
-- "nothing was queued": the caller went on believing its players were cancelled or kept
-- alive. Now such a name is refused in class 22 like enqueue()'s, naming the queues there
-- are. A retired queue is still known: its entries can be cancelled while they wait to be
-- rejected.

-- The queue's row if the database knows it, active or retired; refuses any other name,
-- naming the active queues (matchmaker_active_queue's words).
CREATE FUNCTION matchmaker_known_queue(name text) RETURNS queues
LANGUAGE plpgsql AS $$
DECLARE
    q queues;
BEGIN
    SELECT * INTO q FROM queues WHERE queues.queue = name;
    IF NOT FOUND THEN
        PERFORM matchmaker_refuse('queue', quote_nullable(name),
            coalesce('unknown queue; queues: '
                     || (SELECT string_agg(queue, ', ' ORDER BY queue) FROM queues WHERE active),
                     'unknown queue; no queue is served yet (is the daemon running?)'));
    END IF;
    RETURN q;
END
$$;
REVOKE ALL ON FUNCTION matchmaker_known_queue(text) FROM PUBLIC;

-- Cancel a player's queued entries (in one queue, or in every queue when queue is NULL),
-- and the entries of their party with them: a party is never split. A player in a match
-- still waiting for its ready check declines it (decline_match): the leader cancels the
-- match, the player and their party end declined. Returns how many entries were
-- cancelled, plus the pending matches declined (0: nothing queued; a round may have
-- matched them already). Only the caller's own entries (daemon and ops: any). Refuses: a
-- bad player_id; a queue the database does not know.
CREATE OR REPLACE FUNCTION cancel(player_id text, queue text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    n integer;
    pending bigint;
BEGIN
    PERFORM matchmaker_check_id('player_id', player_id);
    IF queue IS NOT NULL THEN
        PERFORM matchmaker_known_queue(queue);
    END IF;
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
    FOR pending IN
        SELECT mp.match_id FROM match_players mp
          JOIN queue_entries e ON e.entry_id = mp.entry_id
          JOIN matches m ON m.match_id = mp.match_id
         WHERE mp.player_id = player_id AND e.status = 'matched' AND m.status = 'pending'
           AND m.answer_by > now() AND mp.answer IS DISTINCT FROM 'declined'
           AND (queue IS NULL OR e.queue = queue)
           AND (e.owner = session_user OR matchmaker_sees_all())
    LOOP
        BEGIN
            PERFORM matchmaker_answer_match(player_id, pending, 'declined');
            n := n + 1;
        -- Resolved meanwhile (ready, or past its time): nothing to decline.
        EXCEPTION WHEN invalid_parameter_value THEN NULL;
        END;
    END LOOP;
    RETURN n;
END
$$;

-- Refresh the tickets of these players (and of their parties) so they do not expire;
-- call it every ticket_ttl / 3 (queue_catalog.keep_alive_every) while they wait. Returns
-- how many entries were refreshed: fewer than expected means some left the queue (read
-- player_status to see why). Only the caller's own entries (daemon and ops: any).
-- Refuses: a NULL array, a NULL id, or more than 10000 ids; a queue the database does not
-- know.
CREATE OR REPLACE FUNCTION keep_alive(player_ids text[], queue text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    n integer;
BEGIN
    IF player_ids IS NULL OR cardinality(player_ids) > 10000 THEN
        PERFORM matchmaker_refuse('player_ids', cardinality(player_ids) || ' ids',
                                  'must be an array of at most 10000 player ids');
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(player_ids) x WHERE x IS NULL) THEN
        PERFORM matchmaker_refuse('player_ids', player_ids::text, 'must not contain NULL');
    END IF;
    IF queue IS NOT NULL THEN
        PERFORM matchmaker_known_queue(queue);
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
