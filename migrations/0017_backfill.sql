-- 0017: backfill of running sessions (issue 24, part 1; seed 002's "backfill proposal to a
-- session with minimum 1 player member").
--
-- A game server or backend whose session lost players asks the front door for players:
--
--   request_backfill(queue, session_id, members, open_slots, expires_in) -> request_id
--   cancel_backfill(request_id)                                          -> boolean
--   backfill_status                                                      (view)
--
-- members: the session's current members, a JSON array of objects with player_id, team
-- (from 0) and what the scorer reads, as enqueue_party takes them (skill, skill_sigma,
-- latencies, peer_pings, roles, side). open_slots: the free slots per team (one entry per
-- team). The session stays as it is: its members keep their teams; rounds fill the slots
-- with whole parties of the queue's pool, scoring the completed session with the queue's
-- own factors and weights (src/core/backfill.rs). A fill is written like a match: a
-- `matches` row (session_id and backfill_request_id set) with the new players only, so
-- player_status shows a filled player their session, and one NOTIFY with event
-- 'backfill' on the queue's channel (0014).
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

-- One open request per session: a second one would race the first for the same slots.
CREATE UNIQUE INDEX backfill_requests_open_session ON backfill_requests (queue, session_id)
    WHERE status = 'open';
-- The round's snapshot and the worker's "anything to backfill?" look-up.
CREATE INDEX backfill_requests_open ON backfill_requests (queue, created_at)
    WHERE status = 'open';
CREATE INDEX backfill_requests_owner ON backfill_requests (owner, request_id);

ALTER TABLE matches
    ADD COLUMN session_id text NULL,
    ADD COLUMN backfill_request_id bigint NULL;
COMMENT ON COLUMN matches.session_id IS
    'Backfills: the running session the match''s players join (NULL: a new match)';

-- A round that only fills backfill requests (the immediate backfill round).
ALTER TABLE rounds
    DROP CONSTRAINT trigger_must_be_known,
    ADD CONSTRAINT trigger_must_be_known
        CHECK (trigger IN ('schedule', 'pool_size', 'max_wait', 'manual', 'backfill'));

-- ---- The front door --------------------------------------------------------------------

-- Ask for players for a running session. Returns the request id. NOTIFY
-- matchmaker_enqueue (payload: the queue) wakes the queue's leader, which runs an immediate
-- backfill round when the queue's [backfill] config enables it.
CREATE FUNCTION request_backfill(queue text, session_id text, members jsonb,
                                 open_slots integer[],
                                 expires_in interval DEFAULT interval '60 seconds')
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    q queues := matchmaker_active_queue(queue);
    m jsonb;
    k text;
    want text;
    pid text;
    ids text[] := '{}';
    team integer;
    per_team integer[];
    n integer;
    id bigint;
BEGIN
    PERFORM matchmaker_check_id('session_id', session_id);

    -- The slots: one entry per team, each 0..team_size, at least one open.
    IF open_slots IS NULL OR cardinality(open_slots) <> q.teams
       OR array_position(open_slots, NULL) IS NOT NULL THEN
        PERFORM matchmaker_refuse('open_slots', quote_nullable(open_slots::text),
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
        PERFORM matchmaker_refuse('members', n || ' members',
            format('a session in queue %s has 1 to %s members when it asks for a backfill',
                   q.queue, q.teams * q.team_size - 1));
    END IF;
    per_team := array_fill(0, ARRAY[q.teams]);
    FOR m IN SELECT value FROM jsonb_array_elements(members) LOOP
        IF jsonb_typeof(m) <> 'object' THEN
            PERFORM matchmaker_refuse('members[]', m::text, 'must be a JSON object');
        END IF;
        FOR k IN SELECT jsonb_object_keys(m) LOOP
            IF k NOT IN ('player_id', 'team', 'skill', 'skill_sigma', 'latencies',
                         'peer_pings', 'roles', 'side') THEN
                PERFORM matchmaker_refuse('members[].' || k, m -> k #>> '{}',
                    'unknown field (player_id, team, skill, skill_sigma, latencies, peer_pings, roles, side)');
            END IF;
        END LOOP;
        FOR k IN SELECT unnest(ARRAY['player_id', 'team', 'skill', 'skill_sigma', 'side']) LOOP
            want := CASE WHEN k = 'player_id' THEN 'string' ELSE 'number' END;
            IF m ? k AND jsonb_typeof(m -> k) NOT IN (want, 'null') THEN
                PERFORM matchmaker_refuse('members[].' || k, (m -> k)::text, 'must be a ' || want);
            END IF;
            -- Before the cast to double precision (see enqueue_party).
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
        team := (m ->> 'team')::integer;
        per_team[team + 1] := per_team[team + 1] + 1;
    END LOOP;
    -- The completed session is a full match of the queue's format.
    FOR i IN 1 .. q.teams LOOP
        IF per_team[i] + open_slots[i] <> q.team_size THEN
            PERFORM matchmaker_refuse(format('open_slots[%s]', i - 1), open_slots[i]::text,
                format('team %s has %s members: members + open slots must be %s (team_size of queue %s)',
                       i - 1, per_team[i], q.team_size, q.queue));
        END IF;
    END LOOP;

    BEGIN
        INSERT INTO backfill_requests AS b (queue, session_id, members, open_slots,
                                            created_at, expires_at, updated_at)
        VALUES (q.queue, session_id, members, open_slots, now(), now() + expires_in, now())
        RETURNING b.request_id INTO id;
    EXCEPTION WHEN unique_violation THEN
        PERFORM matchmaker_refuse('session_id', quote_literal(session_id),
            format('already has an open backfill request in queue %s (cancel it first)',
                   q.queue));
    END;
    -- Wakes the queue's leader (the enqueue channel: its worker listens there already).
    PERFORM pg_notify('matchmaker_enqueue', q.queue);
    RETURN id;
END
$$;

-- Cancel an open request of the caller's. Returns false when there is none to cancel
-- (filled, expired, already cancelled, or not the caller's: another login's request is
-- not told apart from a missing one).
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

-- The caller's requests: an open one past its expiry reads as expired at once; a filled
-- one names the players who filled it, by team.
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

-- 0013's player_status, plus the session a backfilled player joins.
CREATE OR REPLACE VIEW player_status WITH (security_barrier) AS
SELECT DISTINCT ON (e.queue, e.player_id)
       e.queue,
       e.player_id,
       e.entry_id,
       CASE WHEN e.status = 'queued' AND e.expires_at <= now() THEN 'expired'
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
       m.session_id
  FROM queue_entries e
  LEFT JOIN queue_countdown c ON c.queue = e.queue AND e.status = 'queued'
  LEFT JOIN matches m ON m.match_id = e.match_id
 WHERE e.owner = session_user OR (SELECT matchmaker_sees_all())
 ORDER BY e.queue, e.player_id, e.entry_id DESC;

-- ---- Privileges ------------------------------------------------------------------------
REVOKE ALL ON backfill_requests, backfill_status FROM PUBLIC;
REVOKE ALL ON FUNCTION request_backfill(text, text, jsonb, integer[], interval),
                       cancel_backfill(bigint)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION request_backfill(text, text, jsonb, integer[], interval),
                          cancel_backfill(bigint)
    TO matchmaker_client;
GRANT SELECT ON backfill_status TO matchmaker_client, matchmaker_daemon, matchmaker_ops;
GRANT SELECT, INSERT, UPDATE ON backfill_requests TO matchmaker_daemon;
GRANT SELECT ON backfill_requests TO matchmaker_ops;
