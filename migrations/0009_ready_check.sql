-- The ready check: in a queue with [queues.NAME.ready_check], a committed match is
-- pending until every player accepts it (accept_match) by answer_by. When one declines
-- (decline_match, or cancel) or does not answer, the queue's leader cancels the match:
-- the players who accepted are queued again with their original enqueue time, the others
-- end declined, and those who declined or did not answer wait out the queue's
-- decline_cooldown before they enqueue again. Its data lives with the tables it extends:
-- queues.ready_timeout and decline_cooldown, queue_entries' 'declined' status and
-- declined_until (0003); matches.status, answer_by and answers, match_players.answer
-- (0005). Clients read it in player_status (0006) and hear it on their queue channel
-- (0002: ready_check, ready, cancelled).


-- The leader's look for ready checks to resolve; small: only pending matches are in it.
CREATE INDEX matches_pending ON matches (queue, answer_by) WHERE status = 'pending';

-- The ready check's gate before an enqueue into a queue that has one: a player of this
-- login who declined a match (or did not answer) waits out the queue's decline_cooldown,
-- and a player whose match waits for answers answers it first (queued again meanwhile,
-- they would be matched twice). Reads the player's latest entry in the queue
-- (queue_entries_player_latest).
CREATE FUNCTION matchmaker_check_ready_gate(q queues, player_id text, field text)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
    e record;
BEGIN
    SELECT x.status, x.declined_until, x.match_id, m.status AS match_status, m.answer_by
      INTO e
      FROM queue_entries x
      LEFT JOIN matches m ON m.match_id = x.match_id
     WHERE x.player_id = player_id AND x.queue = q.queue AND x.owner = session_user
     ORDER BY x.entry_id DESC
     LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF e.status = 'declined' AND e.declined_until > now() THEN
        PERFORM matchmaker_refuse(field, quote_literal(player_id),
            format('declined match %s in queue %s; may enqueue again in %s s (decline_cooldown)',
                   e.match_id, q.queue,
                   ceil(extract(epoch FROM e.declined_until - now()))::integer));
    END IF;
    IF e.status = 'matched' AND e.match_status = 'pending' THEN
        PERFORM matchmaker_refuse(field, quote_literal(player_id),
            format('is in match %s of queue %s, waiting for the ready check until %s (accept_match or decline_match first)',
                   e.match_id, q.queue,
                   to_char(e.answer_by AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')));
    END IF;
END
$$;

-- accept_match / decline_match (and cancel's decline): record a player's answer to a
-- pending match. The match row is locked FOR SHARE: the leader resolves a match under
-- FOR UPDATE (skipping a locked one until its next look), so an answer either lands
-- before the resolution or sees the match resolved. Returns what the player's answer is
-- now: 'accepted', 'declined', 'already_accepted' or 'already_declined' (the same answer
-- twice changes nothing). A decline wins over an earlier accept; an accept after a
-- decline is refused. Refuses: a bad player_id; a NULL match_id; a match without this
-- login's player (another login's player reads the same: nothing leaks); a match
-- without a ready check; a match already ready (a decline) or cancelled; an answer after
-- answer_by.
CREATE FUNCTION matchmaker_answer_match(player_id text, match_id bigint, answer text)
RETURNS text
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    m matches;
    given text;
    seat bigint;
BEGIN
    PERFORM matchmaker_check_id('player_id', player_id);
    IF match_id IS NULL THEN
        PERFORM matchmaker_refuse('match_id', 'NULL', 'is required');
    END IF;
    SELECT x.* INTO m FROM matches x WHERE x.match_id = match_id FOR SHARE;
    -- A cancelled match has no match_players rows: its players are named in answers.
    IF FOUND AND m.status = 'cancelled' AND m.answers ? player_id
       AND EXISTS (SELECT 1 FROM queue_entries e
                    WHERE e.player_id = player_id AND e.queue = m.queue
                      AND (e.owner = session_user OR matchmaker_sees_all())) THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            format('was cancelled (%s); read player_status for player %s', m.cancel_reason,
                   quote_literal(player_id)));
    END IF;
    -- This login's player: another login's player of the same id in the match is another
    -- player (player ids are per login).
    SELECT mp.answer, mp.entry_id INTO given, seat
      FROM match_players mp
      JOIN queue_entries e ON e.entry_id = mp.entry_id
     WHERE mp.match_id = match_id AND mp.player_id = player_id
       AND (e.owner = session_user OR matchmaker_sees_all())
     ORDER BY (e.owner = session_user) DESC
     LIMIT 1;
    IF NOT FOUND OR m.match_id IS NULL THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            format('is not a match of player %s of this login', quote_literal(player_id)));
    END IF;
    IF m.answer_by IS NULL THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
                                  'has no ready check: the match is final');
    END IF;
    IF m.status = 'ready' THEN
        IF answer = 'accepted' THEN
            RETURN 'already_accepted';
        END IF;
        PERFORM matchmaker_refuse('match_id', match_id::text,
            'is ready: every player accepted (too late to decline)');
    END IF;
    IF m.answer_by <= now() THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            format('the time to answer ended at %s; the match is being cancelled',
                   to_char(m.answer_by AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')));
    END IF;
    IF given = answer THEN
        RETURN 'already_' || answer;
    END IF;
    IF given = 'declined' THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            format('player %s has declined this match already', quote_literal(player_id)));
    END IF;
    UPDATE match_players mp SET answer = matchmaker_answer_match.answer, answered_at = now()
     WHERE mp.match_id = match_id AND mp.entry_id = seat;
    -- Wakes the queue's leader, which resolves the match at once when this answer
    -- decides it (the enqueue channel: its worker listens there already).
    PERFORM matchmaker_notify('matchmaker_enqueue', m.queue);
    RETURN answer;
END
$$;

-- Answer a pending match's ready check for one of this login's players (a party member
-- answers for themself). Returns 'accepted', or 'already_accepted' when the player had
-- accepted already (nothing changes). When every player has accepted, the queue's leader
-- makes the match ready (player_status: matched). Refuses (class 22, nothing changes): a
-- match that is not one of this login's player's, has no ready check, was cancelled, or
-- whose answer_by has passed; a player who declined it already.
CREATE FUNCTION accept_match(player_id text, match_id bigint)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    RETURN matchmaker_answer_match(player_id, match_id, 'accepted');
END
$$;

-- Decline a pending match for one of this login's players (cancel() does the same). The
-- queue's leader cancels the match at once: the players who accepted, with their
-- parties, are queued again with their original enqueue time; the decliner and their
-- party end declined, and the decliner may not enqueue in the queue during its
-- decline_cooldown. Returns 'declined', or 'already_declined'. Refuses as accept_match,
-- and a match already ready.
CREATE FUNCTION decline_match(player_id text, match_id bigint)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    RETURN matchmaker_answer_match(player_id, match_id, 'declined');
END
$$;

-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON FUNCTION
    matchmaker_check_ready_gate(queues, text, text),
    matchmaker_answer_match(text, bigint, text),
    accept_match(text, bigint),
    decline_match(text, bigint)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    accept_match(text, bigint),
    decline_match(text, bigint)
    TO matchmaker_client;
