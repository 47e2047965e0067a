-- Backfill: players for a running session that lost some. A game server asks with
-- request_backfill(); the queue's leader runs a backfill round at once when the queue's
-- [backfill] config enables it, and ordinary rounds fill open requests too, with whole
-- parties of the queue's pool (0003). A fill is written as a match (0005) holding the new
-- players only, its session_id and backfill_request_id set.


-- ---- backfill_requests: running sessions that lost players ------------------------------
-- A game server or backend asks for players with request_backfill() (AccelByte's
-- "backfill proposal to a session with minimum 1 player member"). The session stays as it
-- is: its members keep their teams; rounds fill the open slots with whole parties of the
-- queue's pool, scoring the completed session with the queue's own factors and weights. A
-- fill is written like a match (matches.session_id and backfill_request_id set) holding
-- the new players only, so player_status shows a filled player their session.
--
-- Statuses: open (waiting), filled (match_id names the fill), expired (nothing filled it
-- before expires_at; reason says why the last round could not), cancelled.
CREATE TABLE backfill_requests (
    request_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue           text NOT NULL,
    session_id      text NOT NULL,
    -- As validated by request_backfill: [{player_id, team, skill, ...}, ...].
    members         jsonb NOT NULL,
    -- Free slots per team (index = team, from 0).
    open_slots      integer[] NOT NULL,
    status          text NOT NULL DEFAULT 'open'
        CONSTRAINT backfill_status_known
        CHECK (status IN ('open', 'filled', 'expired', 'cancelled')),
    reason          text NULL,
    -- The login role that asked; a client sees and cancels its own requests only.
    -- Session and member ids are in its namespace, as player ids in queue_entries.
    owner           text NOT NULL DEFAULT session_user,
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    -- The last round that tried it and why it could not fill it then (the expired
    -- request's reason repeats it).
    attempted_at    timestamptz NULL,
    unfilled_reason text NULL,
    -- The fill. No foreign keys: retention prunes old matches and rounds by age.
    match_id        bigint NULL,
    round_id        bigint NULL,
    CONSTRAINT ended_backfill_has_reason CHECK (status = 'open' OR reason IS NOT NULL),
    CONSTRAINT filled_backfill_has_match CHECK (status <> 'filled' OR match_id IS NOT NULL)
);
COMMENT ON TABLE backfill_requests IS
    'Backfill requests of running sessions (request_backfill); written by the daemon and '
    'the front-door functions only';

-- ---- Indexes ----------------------------------------------------------------------------
-- One open request per session: a second one would race the first for the same slots.
-- A session id belongs to the login that asked, as player ids do.
CREATE UNIQUE INDEX backfill_requests_open_session
    ON backfill_requests (queue, owner, session_id) WHERE status = 'open';
-- The round's snapshot and the worker's "anything to backfill?" look-up.
CREATE INDEX backfill_requests_open ON backfill_requests (queue, created_at)
    WHERE status = 'open';
CREATE INDEX backfill_requests_owner ON backfill_requests (owner, request_id);
-- Retention: the next ended requests of a queue, oldest first (open ones are never
-- pruned).
CREATE INDEX backfill_requests_ended ON backfill_requests (queue, updated_at, request_id)
    WHERE status <> 'open';

-- Ask for players for a running session; returns the request id. members: the session's
-- current members, a JSON array of objects with player_id, team (from 0) and what the
-- scorer and the queue's filters read, as enqueue_party takes them (skill, skill_sigma,
-- latencies, peer_pings, roles, side, attributes). open_slots: the free slots per team
-- (one entry per team). expires_in: how long the request stays open. NOTIFY
-- matchmaker_enqueue (payload: the queue) wakes the queue's leader, which runs an
-- immediate backfill round when the queue's [backfill] config enables it.
-- Refuses: an unknown or retired queue; a bad session_id; open_slots that are not one
-- number per team, each 0..team_size, at least one open; expires_in outside 1 second to 1
-- hour; members that are not an array of 1..(a full match - 1) objects; an unknown field
-- or a field of the wrong type; a member that breaks an input rule; a player twice; a
-- team outside the queue's teams; members + open slots of a team that do not make
-- team_size; a login with limits.max_backfill_requests_per_login open requests in the
-- queue; a session that already has an open request in the queue. A session id belongs
-- to the login that asked, as player ids do: another login's session "s1" is another
-- session.
-- Game servers call it (matchmaker_server), not clients: a fill hands players to the
-- session named, so the role that may ask is the one that runs sessions.
CREATE FUNCTION request_backfill(queue text, session_id text, members jsonb,
                                 open_slots integer[],
                                 expires_in interval DEFAULT interval '60 seconds')
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    q queues := matchmaker_active_queue(queue);
    m jsonb;
    pid text;
    ids text[] := '{}';
    team integer;
    per_team integer[];
    n integer;
    id bigint;
BEGIN
    PERFORM matchmaker_check_id('session_id', session_id);

    -- The slots: one entry per team, each 0..team_size, at least one open.
    -- One dimension from index 1, checked apart first: array_position() raises on more,
    -- and open_slots[i] reads NULL past other bounds.
    IF open_slots IS NULL OR coalesce(array_ndims(open_slots), 1) <> 1
       OR coalesce(array_lower(open_slots, 1), 1) <> 1 THEN
        PERFORM matchmaker_refuse('open_slots', open_slots::text,
            format('must be an array of %s numbers, the free slots of each team of queue %s',
                   q.teams, q.queue));
    END IF;
    IF cardinality(open_slots) <> q.teams OR array_position(open_slots, NULL) IS NOT NULL THEN
        PERFORM matchmaker_refuse('open_slots', open_slots::text,
            format('must be an array of %s numbers, the free slots of each team of queue %s',
                   q.teams, q.queue));
    END IF;
    FOR i IN 1 .. q.teams LOOP
        IF open_slots[i] < 0 OR open_slots[i] > q.team_size THEN
            PERFORM matchmaker_refuse(format('open_slots[%s]', i - 1), open_slots[i]::text,
                format('must be between 0 and %s (team_size)', q.team_size));
        END IF;
    END LOOP;
    IF (SELECT sum(x) FROM unnest(open_slots) x) = 0 THEN
        PERFORM matchmaker_refuse('open_slots', open_slots::text,
                                  'has no open slot (nothing to backfill)');
    END IF;

    IF expires_in IS NULL OR expires_in < interval '1 second'
       OR expires_in > interval '1 hour' THEN
        PERFORM matchmaker_refuse('expires_in', quote_nullable(expires_in::text),
                                  'must be between 1 second and 1 hour');
    END IF;

    -- The members: like enqueue_party's, plus their team.
    IF members IS NULL OR jsonb_typeof(members) <> 'array' THEN
        PERFORM matchmaker_refuse('members', members::text,
                                  'must be a JSON array of the session''s current members');
    END IF;
    n := jsonb_array_length(members);
    IF n < 1 OR n > q.teams * q.team_size - 1 THEN
        PERFORM matchmaker_refuse('members', n || CASE WHEN n = 1 THEN ' member' ELSE ' members' END,
            format('a session in queue %s has 1 to %s members when it asks for a backfill',
                   q.queue, q.teams * q.team_size - 1));
    END IF;
    per_team := array_fill(0, ARRAY[q.teams]);
    FOR m IN SELECT value FROM jsonb_array_elements(members) LOOP
        PERFORM matchmaker_check_member_json(
            q, m, ARRAY['player_id', 'team', 'skill', 'skill_sigma', 'latencies',
                        'peer_pings', 'roles', 'side', 'attributes']);
        pid := m ->> 'player_id';
        IF pid = ANY (ids) THEN
            PERFORM matchmaker_refuse('members[].player_id', quote_literal(pid),
                                      'appears twice in the session');
        END IF;
        ids := ids || pid;
        IF NOT (m ? 'team') OR jsonb_typeof(m -> 'team') <> 'number'
           OR (m -> 'team')::numeric <> trunc((m -> 'team')::numeric)
           OR (m -> 'team')::numeric < 0 OR (m -> 'team')::numeric >= q.teams THEN
            PERFORM matchmaker_refuse('members[].team', coalesce((m -> 'team')::text, 'NULL'),
                format('must be a team index from 0 to %s (queue %s has %s teams)',
                       q.teams - 1, q.queue, q.teams));
        END IF;
        -- Through numeric: a whole number may be written 1.0, which integer's input refuses.
        team := (m -> 'team')::numeric::integer;
        per_team[team + 1] := per_team[team + 1] + 1;
    END LOOP;
    -- The completed session is a full match of the queue's format.
    FOR i IN 1 .. q.teams LOOP
        IF per_team[i] + open_slots[i] <> q.team_size THEN
            PERFORM matchmaker_refuse(format('open_slots[%s]', i - 1), open_slots[i]::text,
                format('team %s has %s member%s: members + open slots must be %s (team_size of queue %s)',
                       i - 1, per_team[i], CASE WHEN per_team[i] = 1 THEN '' ELSE 's' END,
                       q.team_size, q.queue));
        END IF;
    END LOOP;

    -- The login's open requests (limits.max_backfill_requests_per_login).
    IF NOT matchmaker_sees_all()
       AND (SELECT count(*) FROM (SELECT 1 FROM backfill_requests b
                                   WHERE b.queue = q.queue AND b.status = 'open'
                                     AND b.owner = session_user
                                   LIMIT q.max_backfill_per_login) s)
           >= q.max_backfill_per_login THEN
        PERFORM matchmaker_refuse('session_id', quote_literal(session_id),
            format('this login has %s open backfill requests in queue %s, its quota (limits.max_backfill_requests_per_login); cancel one or wait for one to end',
                   q.max_backfill_per_login, q.queue));
    END IF;

    BEGIN
        INSERT INTO backfill_requests AS b (queue, session_id, members, open_slots,
                                            created_at, expires_at, updated_at)
        VALUES (q.queue, session_id,
                (SELECT jsonb_agg(matchmaker_canonical_member(x) ORDER BY t.ord)
                   FROM jsonb_array_elements(members) WITH ORDINALITY AS t(x, ord)),
                open_slots, now(), now() + expires_in, now())
        RETURNING b.request_id INTO id;
    EXCEPTION WHEN unique_violation THEN
        PERFORM matchmaker_refuse('session_id', quote_literal(session_id),
            format('already has an open backfill request in queue %s (cancel it first)',
                   q.queue));
    END;
    -- Wakes the queue's leader (the enqueue channel: its worker listens there already).
    PERFORM matchmaker_notify('matchmaker_enqueue', q.queue);
    RETURN id;
END
$$;

-- Cancel an open request of the caller's. Returns false when there is none to cancel
-- (filled, expired, already cancelled, or not the caller's: another login's request is
-- not told apart from a missing one). Refuses: a NULL request_id.
CREATE FUNCTION cancel_backfill(request_id bigint)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    n integer;
BEGIN
    IF request_id IS NULL THEN
        PERFORM matchmaker_refuse('request_id', 'NULL', 'is required');
    END IF;
    UPDATE backfill_requests b
       SET status = 'cancelled', reason = 'cancelled by the client', updated_at = now()
     WHERE b.request_id = request_id AND b.status = 'open'
       AND (b.owner = session_user OR matchmaker_sees_all());
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n > 0;
END
$$;

-- The caller's backfill requests: an open one past its expiry reads as expired at once; a
-- filled one names the players who filled it, by team.
CREATE VIEW backfill_status WITH (security_barrier) AS
SELECT b.request_id,
       b.queue,
       b.session_id,
       CASE WHEN b.status = 'open' AND b.expires_at <= now() THEN 'expired'
            ELSE b.status END AS status,
       CASE WHEN b.status = 'open' AND b.expires_at <= now()
            THEN 'expired: nothing filled it before expires_at'
                 || coalesce(' (last try: ' || b.unfilled_reason || ')', '')
            WHEN b.status = 'open' THEN b.unfilled_reason
            ELSE b.reason END AS reason,
       b.open_slots,
       b.created_at,
       b.expires_at,
       b.attempted_at,
       b.match_id,
       b.round_id,
       ARRAY(SELECT mp.player_id FROM match_players mp
              WHERE mp.match_id = b.match_id ORDER BY mp.team, mp.player_id) AS filled_by,
       (SELECT jsonb_agg(jsonb_build_object('player_id', mp.player_id, 'team', mp.team,
                                            'party_id', mp.party_id)
                         ORDER BY mp.team, mp.player_id)
          FROM match_players mp WHERE mp.match_id = b.match_id) AS filled_players
  FROM backfill_requests b
 WHERE b.owner = session_user OR (SELECT matchmaker_sees_all());

-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON backfill_requests, backfill_status FROM PUBLIC;
REVOKE ALL ON FUNCTION
    request_backfill(text, text, jsonb, integer[], interval),
    cancel_backfill(bigint)
    FROM PUBLIC;
-- Game servers ask for players for the sessions they run (queue_catalog: 0006).
GRANT EXECUTE ON FUNCTION
    request_backfill(text, text, jsonb, integer[], interval),
    cancel_backfill(bigint)
    TO matchmaker_server;
GRANT SELECT ON backfill_status TO matchmaker_server;
GRANT SELECT, INSERT, UPDATE, DELETE ON backfill_requests TO matchmaker_daemon;
GRANT SELECT ON backfill_status TO matchmaker_daemon;
GRANT SELECT ON backfill_requests, backfill_status TO matchmaker_ops;
