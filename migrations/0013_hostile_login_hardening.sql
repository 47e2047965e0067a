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
-- (which names other players). The leader's wait model, which describes every login's
-- players, is no longer readable by clients in queue_countdown. A login's quota of queued
-- entries holds exactly under concurrent transactions, and a skill outside the queue's
-- declared range is refused.


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

-- ---- Skills within the queue's range -----------------------------------------------------
-- [queues.NAME.tickets] skill_range, published by the leader: an entry far off the scale
-- is refused, so it cannot ride the max-wait fallback into other players' matches.
ALTER TABLE queues ADD COLUMN skill_min double precision NULL,
                   ADD COLUMN skill_max double precision NULL;
COMMENT ON COLUMN queues.skill_min IS
    'tickets.skill_range: the lowest skill an entry may have (NULL: any)';

-- The member rules of 0011, and the range.
CREATE OR REPLACE FUNCTION matchmaker_check_member(q queues, player_id text, skill double precision,
                                        skill_sigma double precision, latencies jsonb,
                                        peer_pings jsonb, roles text[],
                                        side double precision) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    r text;
BEGIN
    PERFORM matchmaker_check_id('player_id', player_id);
    IF skill IS NULL AND q.rating_pool IS NULL THEN
        PERFORM matchmaker_refuse('skill', 'NULL',
            format('is required (queue %s has no built-in rating)', q.queue));
    END IF;
    -- NaN compares above Infinity in PostgreSQL: these bounds refuse it too.
    IF skill IS NOT NULL AND NOT (skill >= -1e6 AND skill <= 1e6) THEN
        PERFORM matchmaker_refuse('skill', skill::text, 'must be a finite number in [-1000000, 1000000]');
    END IF;
    IF skill IS NOT NULL AND (skill < q.skill_min OR skill > q.skill_max) THEN
        PERFORM matchmaker_refuse('skill', skill::text,
            format('is outside queue %s''s skills, %s to %s (tickets.skill_range)',
                   q.queue, q.skill_min, q.skill_max));
    END IF;
    IF skill_sigma IS NOT NULL AND NOT (skill_sigma >= 0 AND skill_sigma <= 1e6) THEN
        PERFORM matchmaker_refuse('skill_sigma', skill_sigma::text, 'must be a number in [0, 1000000]');
    END IF;
    IF side IS NOT NULL AND NOT (side >= 0 AND side <= 1) THEN
        PERFORM matchmaker_refuse('side', side::text, 'must be in [0, 1] (0: first team, 1: second)');
    END IF;
    PERFORM matchmaker_check_ms_map('latencies', latencies, 32, q.regions);
    PERFORM matchmaker_check_ms_map('peer_pings', peer_pings, 100, '{}');
    IF roles IS NULL THEN
        PERFORM matchmaker_refuse('roles', 'NULL', 'must be an array (empty: any role)');
    END IF;
    IF array_ndims(roles) > 1 THEN
        PERFORM matchmaker_refuse('roles', roles::text, 'must be a one-dimensional array');
    END IF;
    IF cardinality(roles) > 16 THEN
        PERFORM matchmaker_refuse('roles', roles::text, 'has more than 16 roles');
    END IF;
    FOREACH r IN ARRAY roles LOOP
        IF r IS NULL OR NOT r = ANY (q.roles) THEN
            PERFORM matchmaker_refuse('roles', quote_nullable(r),
                CASE WHEN cardinality(q.roles) = 0 THEN 'this queue has no roles'
                     ELSE format('unknown role; this queue''s roles: %s',
                                 array_to_string(q.roles, ', ')) END);
        END IF;
    END LOOP;
    IF cardinality(roles) <> (SELECT count(DISTINCT x) FROM unnest(roles) x) THEN
        PERFORM matchmaker_refuse('roles', roles::text, 'names a role twice');
    END IF;
END
$$;

-- enqueue()'s fast path of 0003, and the range.
CREATE OR REPLACE FUNCTION matchmaker_member_ok(q queues, player_id text, skill double precision,
                                     skill_sigma double precision, latencies jsonb,
                                     peer_pings jsonb, roles text[],
                                     side double precision) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        length(player_id) BETWEEN 1 AND 64 AND player_id !~ '[[:cntrl:]]'
        AND skill >= -1e6 AND skill <= 1e6
        AND (q.skill_min IS NULL OR skill >= q.skill_min)
        AND (q.skill_max IS NULL OR skill <= q.skill_max)
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
        AND coalesce(array_ndims(roles), 1) = 1
        AND (cardinality(roles) < 2
             OR cardinality(roles)
                = jsonb_array_length(jsonb_path_query_array(
                      jsonb_object(string_to_array(array_to_string(roles, E'\x1f'), E'\x1f'),
                                   string_to_array(array_to_string(roles, E'\x1f'), E'\x1f')),
                      '$.*'))),
        false)
$$;

-- ---- matchmaker_check_quota: exact under concurrent transactions -----------------------
-- As in 0008, with the login's count taken under a transaction-scoped advisory lock of
-- the login and queue.
CREATE OR REPLACE FUNCTION matchmaker_check_quota(q queues, players integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    queued integer;
    waited text;
BEGIN
    IF matchmaker_sees_all() THEN
        RETURN;
    END IF;
    INSERT INTO call_buckets AS b (login, pid, queue, tokens, at)
    VALUES (session_user, pg_backend_pid(), q.queue, q.enqueue_burst - players,
            clock_timestamp())
    ON CONFLICT (login, pid, queue) DO UPDATE
       SET tokens = least(q.enqueue_burst, b.tokens + q.enqueue_rate
                          * extract(epoch FROM clock_timestamp() - b.at)) - players,
           at = clock_timestamp()
     WHERE least(q.enqueue_burst, b.tokens + q.enqueue_rate
                 * extract(epoch FROM clock_timestamp() - b.at)) >= players;
    IF NOT FOUND THEN
        PERFORM matchmaker_refuse('queue', quote_literal(q.queue),
            format('this connection enqueues more than %s players a second (limits.enqueue_rate); retry later',
                   q.enqueue_rate));
    END IF;
    -- One count at a time per login and queue, held to the end of the caller's
    -- transaction: concurrent calls of one login cannot each pass the count and overshoot
    -- it together. Only the login's own calls into the queue wait on it.
    -- A transaction of the login left open after an enqueue holds it: the call waits two
    -- seconds at most, then asks to retry (class 40: try again later).
    waited := current_setting('lock_timeout');
    PERFORM set_config('lock_timeout', '2s', true);
    BEGIN
        PERFORM pg_advisory_xact_lock(
            hashtextextended('matchmaker quota ' || q.queue || ' ' || session_user, 0));
    EXCEPTION WHEN lock_not_available THEN
        PERFORM set_config('lock_timeout', waited, true);
        RAISE EXCEPTION USING ERRCODE = 'serialization_failure',
            MESSAGE = format('queue = %s: another open transaction of this login is enqueueing '
                             'into this queue; retry once it commits (commit enqueues promptly)',
                             quote_literal(q.queue));
    END;
    PERFORM set_config('lock_timeout', waited, true);
    SELECT count(*) INTO queued
      FROM (SELECT 1 FROM queue_entries e
             WHERE e.queue = q.queue AND e.owner = session_user AND e.status = 'queued'
             LIMIT q.max_queued_per_login) s;
    IF queued + players > q.max_queued_per_login THEN
        PERFORM matchmaker_refuse('queue', quote_literal(q.queue),
            format('this login has %s of its %s queued entries (limits.max_queued_per_login); wait for matches or cancel some',
                   queued, q.max_queued_per_login));
    END IF;
END
$$;

-- ---- queue_countdown: the wait model is the server's ------------------------------------
-- As in 0006, except wait_model, which describes other logins' players (their skill
-- quantiles and regions): NULL for a client.
CREATE OR REPLACE VIEW queue_countdown AS
SELECT s.queue,
       s.next_round_at,
       s.waiting_for,
       -- (greatest() skips a NULL: without the CASE a running round would read 0 s.)
       CASE WHEN s.next_round_at IS NOT NULL
            THEN ceil(greatest(0, extract(epoch FROM s.next_round_at - now())))::integer
       END AS seconds_to_next_round,
       s.pool_size,
       s.target_pool,
       -- How many more players would start the round early (NULL: no early start).
       greatest(0, s.target_pool - s.pool_size) AS players_missing_for_early_start,
       s.min_pool,
       s.players_per_match,
       s.schedule,
       s.last_round_id,
       s.last_round_at,
       s.pool_counted_at,
       s.players_missing,
       s.latest_round_at,
       CASE WHEN s.latest_round_at IS NOT NULL
            THEN ceil(greatest(0, extract(epoch FROM s.latest_round_at - now())))::integer
       END AS seconds_to_latest_round,
       s.round_started_at,
       -- The leader's wait model: operators' (a client reads its own players' estimates in
       -- player_status and the median below).
       CASE WHEN (SELECT matchmaker_sees_all()) THEN s.wait_model END AS wait_model,
       s.median_wait_s
  FROM queue_state s;

-- ---- player_status: the answer from ready_answers ---------------------------------------
-- As in 0006, with the player's answer from ready_answers, and the estimate from the
-- leader's wait model in queue_state (queue_countdown hides it from clients).
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
            THEN matchmaker_estimate_wait((SELECT qs.wait_model FROM queue_state qs
                                            WHERE qs.queue = e.queue),
                                          e.skill, e.latencies,
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
