-- A ready check no login can turn against another's players.
--
-- Who fails pays: each login's recent ready-check record (ready_records) counts the
-- seats of its players that declined or did not answer; a login past the queue's limit
-- has its players matched among themselves. A player whose match another login's
-- player failed is queued again with bounced_at set, and the next rounds place them
-- first.
--
-- accept_match and decline_match (and cancel's decline) write the player's answer into a
-- row of its own, ready_answers, and read the match without locking it; a refused call
-- takes no lock at all. The queue's leader reads the committed answers and resolves each
-- pending match at its deadline whatever a client's open transaction holds: an answer
-- still uncommitted then counts as no answer (the leader skips the answer rows a client
-- holds), and an answer written after the resolution is refused. A cancelled match
-- keeps the entries of its seats (cancelled_entries), so a late answer is told "was
-- cancelled" only for a player of the caller's that was in it, and without the reason
-- (which names other players).


-- ---- ready_answers: one row per answer ---------------------------------------------------
-- Written by the answer functions only; the leader copies a resolved match's answers into
-- match_players (ready) or matches.answers (cancelled) and deletes the rows no client
-- holds. No foreign keys: a key check would lock the match row.
CREATE TABLE ready_answers (
    match_id    bigint NOT NULL,
    entry_id    bigint NOT NULL,
    answer      text NOT NULL
        CONSTRAINT ready_answer_must_be_known CHECK (answer IN ('accepted', 'declined')),
    answered_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (match_id, entry_id)
);
COMMENT ON TABLE ready_answers IS
    'Answers to pending ready checks (accept_match, decline_match), until the leader '
    'resolves their match';

-- The seats of a cancelled match (its match_players rows are deleted).
ALTER TABLE matches ADD COLUMN cancelled_entries bigint[] NULL;
COMMENT ON COLUMN matches.cancelled_entries IS
    'A match cancelled by its ready check: the entries of its seats';

-- Answers of matches the leader has resolved may remain when a client held their row at
-- the resolution; the leader's next looks and retention delete them.
CREATE INDEX ready_answers_by_time ON ready_answers (answered_at);

-- ---- ready_records: each login's recent ready checks, per queue ------------------------
-- Decayed counts (half-life: the queue's ready_check.isolate_half_life), written by the
-- queue's leader when it resolves ready checks: seats its players held in resolved
-- matches, and the seats that failed (declined, or no answer in time). Player ids are
-- the login's to invent, so the record is the login's: a fresh id resets nothing.
CREATE TABLE ready_records (
    queue      text NOT NULL,
    owner      text NOT NULL,
    seats      double precision NOT NULL,
    failures   double precision NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (queue, owner)
);
COMMENT ON TABLE ready_records IS
    'Per queue and login: decayed counts of ready-check seats and of those that failed '
    '(declined or silent); written by the daemon';

-- Queued again after another login's player failed their match's ready check: the
-- rounds place them first.
ALTER TABLE queue_entries ADD COLUMN bounced_at timestamptz NULL;
COMMENT ON COLUMN queue_entries.bounced_at IS
    'When another login''s player failed the ready check of this entry''s match and it was '
    'queued again; the rounds treat it as past max_wait';

-- ---- matchmaker_answer_match: without locks ---------------------------------------------
-- As in 0009, with these changes: the match is read, not locked; the answer goes into
-- ready_answers, and is checked again against the match once written (a match the leader
-- resolved meanwhile refuses it, undoing the row); a cancelled match is named only to a
-- login whose player was in it, and without its reason.
CREATE OR REPLACE FUNCTION matchmaker_answer_match(player_id text, match_id bigint, answer text)
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
    SELECT x.* INTO m FROM matches x WHERE x.match_id = match_id;
    IF FOUND AND m.status = 'cancelled'
       AND EXISTS (SELECT 1 FROM queue_entries e
                    WHERE e.entry_id = ANY (m.cancelled_entries) AND e.player_id = player_id
                      AND (e.owner = session_user OR matchmaker_sees_all())) THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            format('was cancelled by its ready check; read player_status for player %s',
                   quote_literal(player_id)));
    END IF;
    -- This login's player: another login's player of the same id in the match is another
    -- player (player ids are per login).
    SELECT mp.entry_id INTO seat
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
    SELECT a.answer INTO given FROM ready_answers a
     WHERE a.match_id = m.match_id AND a.entry_id = seat;
    IF given = answer THEN
        RETURN 'already_' || answer;
    END IF;
    IF given = 'declined' THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            format('player %s has declined this match already', quote_literal(player_id)));
    END IF;
    -- A decline wins over an earlier accept; an accept never overwrites a decline (one
    -- racing this call lands first and keeps it).
    INSERT INTO ready_answers AS a (match_id, entry_id, answer)
    VALUES (m.match_id, seat, matchmaker_answer_match.answer)
    ON CONFLICT ON CONSTRAINT ready_answers_pkey DO UPDATE
       SET answer = EXCLUDED.answer, answered_at = now()
     WHERE a.answer = 'accepted' AND EXCLUDED.answer = 'declined';
    -- The leader may have resolved the match meanwhile (it never waits for this call):
    -- then this answer did not count, and says so (a refusal undoes its row).
    SELECT x.status INTO m.status FROM matches x WHERE x.match_id = m.match_id;
    IF m.status = 'ready' THEN
        IF answer = 'accepted' THEN
            RETURN 'already_accepted';
        END IF;
        PERFORM matchmaker_refuse('match_id', match_id::text,
            'is ready: every player accepted (too late to decline)');
    ELSIF m.status = 'cancelled' THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            format('was cancelled by its ready check; read player_status for player %s',
                   quote_literal(player_id)));
    END IF;
    -- Wakes the queue's leader, which resolves the match at once when this answer
    -- decides it (the enqueue channel: its worker listens there already).
    PERFORM matchmaker_notify('matchmaker_enqueue', m.queue);
    RETURN answer;
END
$$;

-- ---- cancel: declines a pending match as 0010's, reading ready_answers ------------------
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
           AND m.answer_by > now()
           AND NOT EXISTS (SELECT 1 FROM ready_answers a
                            WHERE a.match_id = mp.match_id AND a.entry_id = mp.entry_id
                              AND a.answer = 'declined')
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

-- ---- player_status: the answer from ready_answers ---------------------------------------
CREATE OR REPLACE VIEW player_status WITH (security_barrier) AS
SELECT DISTINCT ON (e.queue, e.owner, e.player_id)
       e.queue,
       e.player_id,
       e.entry_id,
       CASE WHEN e.status = 'queued' AND e.expires_at <= now() THEN 'expired'
            WHEN e.status = 'matched' AND m.status = 'pending' THEN 'pending'
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
            WHEN e.status = 'queued' THEN e.left_over_reason
            ELSE e.reject_reason END AS reason,
       e.expires_at,
       e.party_id,
       m.host_player_id,
       m.backup_host_player_id,
       CASE WHEN e.status = 'queued' THEN e.left_over END AS left_over,
       m.session_id,
       CASE WHEN e.status = 'queued' THEN c.players_missing END AS players_missing,
       CASE WHEN e.status = 'queued' THEN c.latest_round_at END AS latest_round_at,
       CASE WHEN e.status = 'queued' THEN c.seconds_to_latest_round END
           AS seconds_to_latest_round,
       CASE WHEN e.status = 'queued' THEN c.round_started_at END AS round_started_at,
       -- Matched into a match nobody in it can host: the game backend routes it through
       -- its relay (host_player_id and backup_host_player_id are NULL).
       coalesce(m.relay, false) AS relay,
       -- pending: the match waits for every player's accept_match until answer_by;
       -- answer is this player's (NULL: not yet).
       CASE WHEN m.status = 'pending' AND e.status = 'matched' THEN m.answer_by END AS answer_by,
       CASE WHEN m.status = 'pending' AND e.status = 'matched'
            THEN (SELECT a.answer FROM ready_answers a
                   WHERE a.match_id = e.match_id AND a.entry_id = e.entry_id) END AS answer,
       -- queued: the estimated wait left (matchmaker_estimate_wait).
       CASE WHEN e.status = 'queued' AND e.expires_at > now()
            THEN matchmaker_estimate_wait(c.wait_model, e.skill, e.latencies,
                                          coalesce(c.seconds_to_next_round, 0))
       END AS estimated_wait_s
  FROM queue_entries e
  LEFT JOIN queue_countdown c ON c.queue = e.queue AND e.status = 'queued'
  LEFT JOIN matches m ON m.match_id = e.match_id
 WHERE e.owner = session_user OR (SELECT matchmaker_sees_all())
 ORDER BY e.queue, e.owner, e.player_id, e.entry_id DESC;

-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON ready_answers, ready_records FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON ready_answers, ready_records TO matchmaker_daemon;
GRANT SELECT ON ready_answers, ready_records TO matchmaker_ops;
