-- Queues and tickets: the queues the daemon serves, and the entries (tickets) clients
-- put in them. A client enqueues a solo player or a whole party, keeps their tickets
-- alive while they wait, and may cancel them; the daemon's rounds (0005) match them, and
-- the daemon expires the tickets nobody keeps alive. A table is whole in the migration of
-- its concern: the columns of queues and queue_entries that later concerns read (limits
-- and avoids 0008, the ready check 0009) are here, each with its comment.


-- ---- queues: the queues the database knows ----------------------------------------------
-- Published by each queue's leader when it takes the lease and when its config changes; a
-- queue dropped from the config is retired (active = false) and its queued entries get
-- the reason. enqueue() refuses a queue that is not active here.
--
-- teams x team_size is the full format, and the largest. A flexible queue (AccelByte's
-- alliance rule) also forms smaller matches (a 5v5 queue with min_team_size 4: 5v4, 4v4);
-- clients read which in queue_catalog, and the daemon's audit holds every committed match
-- to them. formats is text, not an integer array: formats have different numbers of
-- teams, and PostgreSQL's arrays are rectangular. A match's format in the same words is
-- string_agg(size::text, 'v' ORDER BY size DESC) over its teams.
CREATE TABLE queues (
    queue          text PRIMARY KEY,
    active         boolean NOT NULL,
    teams          integer NOT NULL,
    team_size      integer NOT NULL,
    network        text NOT NULL,
    -- Roles a player may name (empty: a queue without roles).
    roles          text[] NOT NULL,
    -- Regions a latency map may name (empty: any name).
    regions        text[] NOT NULL,
    max_party_size integer NOT NULL,
    -- A ticket not kept alive for this long expires.
    ticket_ttl     interval NOT NULL,
    max_wait       interval NOT NULL,
    config_hash    text NOT NULL,
    published_by   text NOT NULL,
    published_at   timestamptz NOT NULL,
    retired_at     timestamptz NULL,
    retired_reason text NULL,
    min_teams      integer NOT NULL,
    min_team_size  integer NOT NULL,
    formats        text[] NOT NULL,
    -- Quotas of a client login ([queues.NAME.limits]); the daemon and operators are exempt.
    max_queued_per_login   integer NOT NULL DEFAULT 2000,
    max_backfill_per_login integer NOT NULL DEFAULT 20,
    -- Players a client connection may enqueue per second, and in a burst.
    enqueue_rate           double precision NOT NULL DEFAULT 200,
    enqueue_burst          double precision NOT NULL DEFAULT 1000,
    -- The attributes a match's players share ([queues.NAME.filters] same): the members of
    -- a party must agree on them.
    same_attributes text[] NOT NULL DEFAULT '{}',
    -- The newest avoids of a player the queue honours ([queues.NAME.avoids]
    -- max_per_player): avoid() keeps at most the largest of the active queues'.
    max_avoids     integer NOT NULL DEFAULT 10,
    -- Unexpired avoids one client login may hold ([queues.NAME.limits]): avoids belong to
    -- no queue, so avoid() takes the largest of the active queues'.
    max_avoids_per_login integer NOT NULL DEFAULT 100000,
    -- The ready check ([queues.NAME.ready_check]): how long players have to accept a
    -- match (NULL: matches are final when the round commits), and how long a player who
    -- declined or did not answer may not enqueue again (NULL: no cooldown).
    ready_timeout    interval NULL,
    decline_cooldown interval NULL,
    CONSTRAINT retired_queue_has_reason CHECK (active OR retired_reason IS NOT NULL),
    CONSTRAINT queue_team_range CHECK (min_teams BETWEEN 2 AND teams),
    CONSTRAINT queue_team_size_range CHECK (min_team_size BETWEEN 1 AND team_size),
    -- The full format comes first.
    CONSTRAINT queue_formats_start_full
        CHECK (formats[1] = array_to_string(array_fill(team_size, ARRAY[teams]), 'v')),
    -- A party plays on one team: never larger than the largest team.
    CONSTRAINT queue_party_fits_a_team CHECK (max_party_size <= team_size)
);
COMMENT ON TABLE queues IS
    'The queues the daemon serves, with their format and entry limits (written by the daemon)';
COMMENT ON COLUMN queues.min_teams IS
    'Fewest teams of a match (AccelByte''s alliance min_number); teams is the most.';
COMMENT ON COLUMN queues.min_team_size IS
    'Fewest players of a team (AccelByte''s alliance player_min_number); team_size is the most.';
COMMENT ON COLUMN queues.formats IS
    'Every format a match of this queue may have, full format first: team sizes largest '
    'first joined by ''v'' (''5v5'', ''5v4'', ''4v4'').';

-- ---- queue_entries: the tickets ---------------------------------------------------------
-- One row per player per enqueue, written by the client functions; the daemon moves rows
-- out of 'queued' and never deletes a queued row.
--
-- The constraints are the table's own last line behind the client functions' readable
-- refusals (the daemon's tools and tests write rows directly). Each is named as the rule
-- it enforces: PostgreSQL puts the name in the error.
CREATE SEQUENCE queue_entries_party_key_seq;

CREATE TABLE queue_entries (
    entry_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,

    -- The player's request.
    queue         text NOT NULL,
    player_id     text NOT NULL,
    party_id      text NULL,
    skill         double precision NOT NULL,
    skill_sigma   double precision NULL,
    latencies     jsonb NOT NULL DEFAULT '{}',
    peer_pings    jsonb NOT NULL DEFAULT '{}',
    roles         text[] NOT NULL DEFAULT '{}',
    side          double precision NULL,
    -- What the queue's filters read: {"build": "1.4.2", "language": ["en", "de"]}.
    attributes    jsonb NOT NULL DEFAULT '{}',
    enqueued_at   timestamptz NOT NULL DEFAULT now(),

    -- Written by the daemon (and by cancel(): status and reason).
    status        text NOT NULL DEFAULT 'queued',
    reject_reason text NULL,
    -- Copies the daemon writes, not foreign keys (see their comments).
    round_id      bigint NULL,
    match_id      bigint NULL,
    team          integer NULL,
    role          text NULL,
    updated_at    timestamptz NOT NULL DEFAULT now(),

    -- The ticket's lifetime, refreshed by keep_alive(); the default only serves rows
    -- written directly by the daemon's own tools (bulk loads, tests).
    expires_at    timestamptz NOT NULL DEFAULT (now() + interval '10 minutes'),
    -- The login role that enqueued; a client sees and cancels its own entries only.
    -- Player and party ids are in its namespace: (owner, player_id) names a player.
    owner         text NOT NULL DEFAULT session_user,
    -- One enqueue_party() call (from queue_entries_party_key_seq) and its size.
    -- Membership is fixed by the call, and a party is matched only when all party_size
    -- members are still queued (never split).
    party_key     bigint NULL,
    party_size    integer NULL,
    -- The first member of an enqueue_party() call: one row per queued party, so a
    -- unique index keeps one party_id per login and queue.
    party_lead    boolean NOT NULL DEFAULT false,
    -- Queued entries: how and why the last round that pooled them left them over,
    -- written by the round's commit so that a client polling player_status reads it from
    -- the entry's own row.
    left_over        text NULL,
    left_over_reason text NULL,
    -- The round since which left_over has had its present value: an entry left over as
    -- no_host or no_valid_match for limits.sit_out_after rounds waits behind the others
    -- when a round's pool is capped.
    left_over_since  bigint NULL,
    -- declined: a player who declined the ready check (or did not answer) may not
    -- enqueue in this queue again before this time (their party mates sent out with
    -- them have none).
    declined_until   timestamptz NULL,

    CONSTRAINT queue_must_not_be_empty CHECK (queue <> ''),
    CONSTRAINT player_id_must_not_be_empty CHECK (player_id <> ''),
    CONSTRAINT party_id_must_not_be_empty CHECK (party_id <> ''),
    -- PostgreSQL orders NaN above Infinity, so these bounds also refuse NaN.
    CONSTRAINT skill_must_be_finite CHECK (skill > '-Infinity' AND skill < 'Infinity'),
    CONSTRAINT skill_sigma_must_be_finite_and_non_negative
        CHECK (skill_sigma >= 0 AND skill_sigma < 'Infinity'),
    CONSTRAINT side_must_be_between_0_and_1 CHECK (side >= 0 AND side <= 1),
    -- A latency map: a JSON object of non-empty names to numbers of ms in [0, 1e9). JSON
    -- allows any magnitude (1e400), which no client can mean and which does not fit a
    -- double. Plain expressions, not a SQL function over jsonb_each, which would be
    -- planned again for every inserted row. `strict` keeps jsonpath from unwrapping
    -- arrays ({"eu": [1]} is refused).
    CONSTRAINT latencies_must_map_regions_to_non_negative_ms CHECK (
        jsonb_typeof(latencies) = 'object'
        AND NOT latencies ? ''
        AND NOT jsonb_path_exists(
            latencies, 'strict $.* ? (@.type() != "number" || @ < 0 || @ >= 1e9)')),
    CONSTRAINT peer_pings_must_map_players_to_non_negative_ms CHECK (
        jsonb_typeof(peer_pings) = 'object'
        AND NOT peer_pings ? ''
        AND NOT jsonb_path_exists(
            peer_pings, 'strict $.* ? (@.type() != "number" || @ < 0 || @ >= 1e9)')),
    CONSTRAINT roles_must_not_contain_empty_or_null
        CHECK ('' <> ALL (roles) AND array_position(roles, NULL) IS NULL),
    -- Attributes: a JSON object of non-empty names to strings or arrays of strings.
    CONSTRAINT attributes_must_map_names_to_strings CHECK (
        jsonb_typeof(attributes) = 'object'
        AND NOT attributes ? ''
        AND NOT jsonb_path_exists(
            attributes, 'strict $.* ? (@.type() != "string" && @.type() != "array")')
        AND NOT jsonb_path_exists(
            attributes, 'strict $.* ? (@.type() == "array")[*] ? (@.type() != "string")')),
    -- expired: no keep-alive within the queue's ticket_ttl; withdrawn: the player (or a
    -- party member) was matched in another queue (match_id names that match); declined:
    -- the player (or a party member) declined a ready check or did not answer in time
    -- (match_id names the cancelled match).
    CONSTRAINT status_must_be_known
        CHECK (status IN ('queued', 'matched', 'cancelled', 'rejected', 'expired', 'withdrawn',
                          'declined')),
    -- The daemon's own invariants: a matched row says where it went; a row that left
    -- without a match says why (so do cancelled rows from cancel()).
    CONSTRAINT matched_entry_has_match CHECK (status <> 'matched' OR match_id IS NOT NULL),
    CONSTRAINT rejected_entry_has_reason
        CHECK (status <> 'rejected' OR reject_reason IS NOT NULL),
    CONSTRAINT ended_entry_has_reason
        CHECK (status NOT IN ('expired', 'withdrawn', 'declined') OR reject_reason IS NOT NULL)
);
COMMENT ON TABLE queue_entries IS
    'One row per player per enqueue, written by the client functions (enqueue, '
    'enqueue_party); the daemon moves rows out of ''queued'' (matched, rejected, expired, '
    'withdrawn; cancel() cancels), and deletes rows that ended before the retention horizon '
    '([retention] horizon; never a queued row).';
COMMENT ON COLUMN queue_entries.latencies IS 'round-trip ms to each region / datacenter';
COMMENT ON COLUMN queue_entries.peer_pings IS 'measured round-trip ms to other players by id';
COMMENT ON COLUMN queue_entries.side IS 'side preference: 0 first team, 1 second team';
COMMENT ON COLUMN queue_entries.attributes IS
    'what the queue''s filters read: names to a string or a list of strings (build, '
    'platform, crossplay, languages)';
COMMENT ON COLUMN queue_entries.reject_reason IS
    'why the entry left the queue without a match (rejected, expired, withdrawn, cancelled)';
-- Not foreign keys: the link from a matched entry to its match is match_players, written
-- in the same statement as the entry's move to 'matched'; as keys these copies would cost
-- every matched row two more key checks in the round's commit. Only the daemon writes
-- them, and the audit (`matchmaker-lab soak`, the fault tests) holds every matched entry to
-- its match_players row.
COMMENT ON COLUMN queue_entries.round_id IS
    'matched or rejected: the round that did it. A copy the daemon writes, without a '
    'foreign key';
COMMENT ON COLUMN queue_entries.match_id IS
    'matched: the match (as match_players says); withdrawn: the match in another queue that '
    'won. A copy the daemon writes, without a foreign key';
COMMENT ON COLUMN queue_entries.left_over IS
    'Queued entries: how the last round that pooled them left them over (no_valid_match, '
    'no_host, outscored, not_found, party_sat_out, match_dropped, filtered, avoided, floor, '
    '...); NULL: not pooled yet.';

-- ---- Indexes of queue_entries -----------------------------------------------------------
-- A player waits at most once per queue: enqueueing again while queued is refused (this
-- index is enqueue()'s ON CONFLICT arbiter). Past rows (matched, cancelled, ...) do not
-- count. A player id belongs to the login that enqueued it: two logins may each queue
-- their own "alice", and neither index entry can block the other's.
CREATE UNIQUE INDEX queue_entries_one_queued_row_per_player
    ON queue_entries (queue, owner, player_id) WHERE status = 'queued';

-- The snapshot reads a queue's queued rows oldest first; small because only queued rows
-- are in it, however long the history grows.
CREATE INDEX queue_entries_queued_oldest_first
    ON queue_entries (queue, enqueued_at, entry_id) WHERE status = 'queued';

-- A client's status lookup: the latest entry of a player. Also a player's older matches
-- (ops queries, the report), through the entries' match_id.
CREATE INDEX queue_entries_player_latest ON queue_entries (player_id, entry_id DESC);

-- The daemon's expiry sweep.
CREATE INDEX queue_entries_queued_expiry ON queue_entries (queue, expires_at)
    WHERE status = 'queued';

-- One player in several queues: the commit that matches a player finds and withdraws
-- their queued entries elsewhere (the same login's player: both columns). Player id
-- first: keep_alive's and cancel's look-ups by player id use it too.
CREATE INDEX queue_entries_queued_player ON queue_entries (player_id, owner)
    WHERE status = 'queued';

-- A login's queued entries in a queue: its quota (matchmaker_check_quota).
CREATE INDEX queue_entries_queued_owner ON queue_entries (queue, owner) WHERE status = 'queued';

-- Party look-ups: cancel's and keep_alive's party, the sweep.
CREATE INDEX queue_entries_party ON queue_entries (party_key) WHERE party_key IS NOT NULL;

-- enqueue_party's "already queued" checks, of the calling login's own parties.
CREATE INDEX queue_entries_queued_owner_party ON queue_entries (queue, owner, party_id)
    WHERE status = 'queued' AND party_id IS NOT NULL;
-- One queued party_id per login and queue: enqueue_party()'s guard against a concurrent
-- call for the same party. Keyed by the login, so no other login can hold it.
CREATE UNIQUE INDEX queue_entries_one_queued_party_per_owner
    ON queue_entries (queue, owner, party_id) WHERE status = 'queued' AND party_lead;

-- Retention (the daemon's pruning, `matchmaker prune`) deletes old history in small
-- batches of short transactions; its indexes (this one, and those of rounds, matches,
-- backfill requests and avoids) keep each batch an index range scan however long the
-- history is.

-- Retention: entries that ended outside a match (cancelled, expired, rejected,
-- withdrawn), by the time they ended, per queue. Never a queued or a matched row (a
-- match's entries go with the match, found through match_players), so the round's commit
-- adds no key here for the players it matches.
CREATE INDEX queue_entries_ended_outside_matches
    ON queue_entries (queue, updated_at, entry_id)
    WHERE status NOT IN ('queued', 'matched');


-- =========================================================================================
-- Input rules of a member
-- =========================================================================================
-- The rules of 0001 applied to one player against the queue's own lists (its roles, its
-- regions): enqueue, enqueue_party and request_backfill (0007) hold every member to them.

-- One member's fields against the queue's rules, rule by rule: names the first rule
-- broken.
CREATE FUNCTION matchmaker_check_member(q queues, player_id text, skill double precision,
                                        skill_sigma double precision, latencies jsonb,
                                        peer_pings jsonb, roles text[],
                                        side double precision) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    r text;
BEGIN
    PERFORM matchmaker_check_id('player_id', player_id);
    -- NaN compares above Infinity in PostgreSQL: these bounds refuse it too.
    IF skill IS NULL OR NOT (skill >= -1e6 AND skill <= 1e6) THEN
        PERFORM matchmaker_refuse('skill', skill::text, 'must be a finite number in [-1000000, 1000000]');
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

-- One member of a JSON members array (enqueue_party, request_backfill): its shape (an
-- object of the listed fields, each of its JSON type, numbers a double precision can
-- hold), then matchmaker_check_member's rules. `fields` lists the fields the caller
-- takes, in the order the refusal names them.
CREATE FUNCTION matchmaker_check_member_json(q queues, m jsonb, fields text[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    k text;
    want text;
BEGIN
    IF jsonb_typeof(m) <> 'object' THEN
        PERFORM matchmaker_refuse('members[]', m::text, 'must be a JSON object');
    END IF;
    FOR k IN SELECT jsonb_object_keys(m) LOOP
        IF k <> ALL (fields) THEN
            PERFORM matchmaker_refuse('members[].' || k, m -> k #>> '{}',
                'unknown field (' || array_to_string(fields, ', ') || ')');
        END IF;
    END LOOP;
    FOR k IN SELECT f FROM unnest(fields) f
              WHERE f IN ('player_id', 'team', 'skill', 'skill_sigma', 'side') LOOP
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
    IF m ? 'attributes' THEN
        PERFORM matchmaker_check_attributes('members[].attributes', m -> 'attributes');
    END IF;
    PERFORM matchmaker_check_member(
        q, m ->> 'player_id', (m ->> 'skill')::double precision,
        (m ->> 'skill_sigma')::double precision,
        coalesce(m -> 'latencies', '{}'), coalesce(m -> 'peer_pings', '{}'),
        coalesce(ARRAY(SELECT jsonb_array_elements_text(m -> 'roles')), '{}'),
        (m ->> 'side')::double precision);
END
$$;

-- enqueue()'s fast path: matchmaker_check_member's rules in one expression, true only when
-- every rule holds. A sufficient condition: false means "run matchmaker_check_member",
-- which accepts or names the first rule broken, so the fast path may refuse more, never
-- accept more. It never raises (its JSON path queries are silent).
-- tests/it/db_member_fast_path.rs holds it to the rule-by-rule checks at every edge.
--
-- A SQL function without a subquery: the planner inlines it into enqueue()'s own
-- expression (no second function call). STABLE: a SQL function is inlined only when its
-- body is no more volatile than it is declared.
--
-- The maps are checked without a walk per entry:
--   - the values with `strict $.*` alone (the walk the table's own CHECK makes);
--   - an empty key with the `?` operator;
--   - the keys' length and control characters on the map's text form, where keys are the
--     only strings (values are numbers). jsonb's text form escapes control characters and
--     quotes with a backslash, so a map whose text has no backslash and no control
--     character (DEL is one, and is not escaped) has plain keys, and a key of 65 or more
--     characters shows as a quote followed by 65 characters that are not quotes. A map
--     with a backslash in its text goes to the rule-by-rule checks;
--   - known regions as `latencies - regions = '{}'` (every key is a region).
-- The roles' "no repeats" count gives jsonb_object() a flat array without NULLs (through
-- array_to_string, which skips NULLs and flattens): jsonb_object() raises on a NULL key
-- and on a multi-dimensional array, and the planner folds the call for a constant array
-- (a custom plan of a prepared statement) whatever the AND around it. A NULL role fails
-- the count, and the checks name it (a role holding the separator U+001F fails it too, and
-- the checks accept it).
CREATE FUNCTION matchmaker_member_ok(q queues, player_id text, skill double precision,
                                     skill_sigma double precision, latencies jsonb,
                                     peer_pings jsonb, roles text[],
                                     side double precision) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        length(player_id) BETWEEN 1 AND 64 AND player_id !~ '[[:cntrl:]]'
        AND skill >= -1e6 AND skill <= 1e6
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

-- The queue's row if it is active; refuses an unknown or retired queue, naming the active
-- ones. No row lock: with several clients enqueueing at once, every enqueue would write a
-- lock on the same queues row (a multixact and a WAL record each). An enqueue that races
-- the queue's retirement is rejected instead by the daemon's supervisor, which every poll
-- re-retires any queue that no config lists and that still has queued entries.
CREATE FUNCTION matchmaker_active_queue(name text) RETURNS queues
LANGUAGE plpgsql AS $$
DECLARE
    q queues;
BEGIN
    SELECT * INTO q FROM queues WHERE queues.queue = name;
    IF NOT FOUND OR NOT q.active THEN
        PERFORM matchmaker_refuse('queue', quote_nullable(name),
            coalesce('unknown queue; queues: '
                     || (SELECT string_agg(queue, ', ' ORDER BY queue) FROM queues WHERE active),
                     'unknown queue; no queue is served yet (is the daemon running?)'));
    END IF;
    RETURN q;
END
$$;


-- =========================================================================================
-- The client functions
-- =========================================================================================

-- Enqueue one solo player; returns the entry id. The server sets the times, the status and
-- the owner. attributes: what the queue's filters read ({"build": "1.4.2", "platform":
-- "pc", "crossplay": "off", "language": ["en", "de"]}; queue_catalog.same_attributes
-- names those a match's players share). A player may be queued in several queues at
-- once; they are matched at most once (the commit that matches them withdraws their
-- other entries).
-- Refuses: an unknown or retired queue; a field that breaks an input rule (the first one
-- broken); a player already queued in the queue by this login; a login over its quota
-- or a connection over its rate (matchmaker_check_quota); in a queue with a ready check,
-- a player of this login in their decline cooldown (with the time left) or in a pending
-- match. A player id belongs to the login that enqueued it, as a party id does: another
-- login's "alice" is another player, which this login can neither block, see, cancel nor
-- withdraw.
--
-- The fast route reads the queue's row and checks the fields with the inlined
-- matchmaker_member_ok; only when that fails does the slow route find out why (and raise
-- it), or accept a player the fast path was too strict for. "Already queued" is ON
-- CONFLICT on the one-queued-row-per-player index, not an exception block (a
-- subtransaction on every call): a second call racing the first for the same player waits
-- for it, then inserts nothing and gets the readable refusal.
-- `#variable_conflict use_column`: ON CONFLICT names its target's columns, which share
-- names with the parameters; the parameters are read as enqueue.<name>.
CREATE FUNCTION enqueue(queue text, player_id text, skill double precision,
                        latencies jsonb DEFAULT '{}', peer_pings jsonb DEFAULT '{}',
                        roles text[] DEFAULT '{}', side double precision DEFAULT NULL,
                        skill_sigma double precision DEFAULT NULL,
                        attributes jsonb DEFAULT '{}')
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
    -- Most players carry no attributes: the default costs no check.
    IF enqueue.attributes IS DISTINCT FROM '{}' THEN
        PERFORM matchmaker_check_attributes('attributes', enqueue.attributes);
    END IF;
    IF q.ready_timeout IS NOT NULL OR q.decline_cooldown IS NOT NULL THEN
        PERFORM matchmaker_check_ready_gate(q, enqueue.player_id, 'player_id');
    END IF;
    PERFORM matchmaker_check_quota(q, 1);
    INSERT INTO queue_entries AS e (queue, player_id, skill, skill_sigma, latencies,
                                    peer_pings, roles, side, attributes, enqueued_at,
                                    expires_at)
    VALUES (q.queue, enqueue.player_id, enqueue.skill, enqueue.skill_sigma,
            matchmaker_canonical_ms_map(enqueue.latencies),
            matchmaker_canonical_ms_map(enqueue.peer_pings), enqueue.roles, enqueue.side,
            enqueue.attributes, now(), now() + q.ticket_ttl)
    ON CONFLICT (queue, owner, player_id) WHERE status = 'queued' DO NOTHING
    RETURNING e.entry_id INTO id;
    IF id IS NULL THEN
        PERFORM matchmaker_refuse('player_id', quote_literal(enqueue.player_id),
            format('is already queued in queue %s (cancel it first)', q.queue));
    END IF;
    RETURN id;
END
$$;

-- Enqueue a whole party in one call: members is a JSON array of objects with player_id,
-- skill and optionally latencies, peer_pings, roles, side, skill_sigma, attributes.
-- Returns each member's entry id. Membership is fixed here: nobody joins later. A party
-- plays in one match: its members must agree on the queue's same_attributes.
-- A party id belongs to the login that enqueued it: two logins may each queue a party
-- "crew" in one queue (the daemon tells parties apart by party_key), so one game backend
-- can neither block another's party id nor learn that it is queued.
-- Refuses: an unknown or retired queue; a bad party_id; members that are not an array of
-- 2..max_party_size objects; an unknown field or a field of the wrong type; a member that
-- breaks an input rule; a player twice in the party; members that disagree on one of the
-- queue's same_attributes (a missing attribute is a value of its own); a party_id this
-- login already has queued in the queue, or is enqueueing in another call right now; a
-- login over its quota or a connection over its rate; a member this login already has
-- queued in the queue; in a queue with a ready check, a member of this login in their
-- decline cooldown or in a pending match.
CREATE FUNCTION enqueue_party(queue text, party_id text, members jsonb)
RETURNS TABLE (player_id text, entry_id bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
    SET lock_timeout = '200ms' AS $$
#variable_conflict use_variable
DECLARE
    q queues := matchmaker_active_queue(queue);
    m jsonb;
    n integer;
    key bigint;
    ids text[] := '{}';
    pid text;
    violated text;
    same text;
BEGIN
    PERFORM matchmaker_check_id('party_id', party_id);
    IF members IS NULL OR jsonb_typeof(members) <> 'array' THEN
        PERFORM matchmaker_refuse('members', members::text, 'must be a JSON array of members');
    END IF;
    n := jsonb_array_length(members);
    IF n < 2 OR n > q.max_party_size THEN
        PERFORM matchmaker_refuse('members', n || CASE WHEN n = 1 THEN ' member' ELSE ' members' END,
            format('a party in queue %s has 2 to %s members (enqueue a solo player with enqueue)',
                   q.queue, q.max_party_size));
    END IF;
    FOR m IN SELECT value FROM jsonb_array_elements(members) LOOP
        PERFORM matchmaker_check_member_json(
            q, m, ARRAY['player_id', 'skill', 'skill_sigma', 'latencies', 'peer_pings',
                        'roles', 'side', 'attributes']);
        pid := m ->> 'player_id';
        IF pid = ANY (ids) THEN
            PERFORM matchmaker_refuse('members[].player_id', quote_literal(pid),
                                      'appears twice in the party');
        END IF;
        ids := ids || pid;
        IF q.ready_timeout IS NOT NULL OR q.decline_cooldown IS NOT NULL THEN
            PERFORM matchmaker_check_ready_gate(q, pid, 'members[].player_id');
        END IF;
    END LOOP;
    -- Players who may not share a match cannot share a party.
    FOREACH same IN ARRAY q.same_attributes LOOP
        IF (SELECT count(DISTINCT coalesce(x -> 'attributes' -> same, 'null'))
              FROM jsonb_array_elements(members) AS t(x)) > 1 THEN
            PERFORM matchmaker_refuse('members[].attributes.' || same,
                (SELECT string_agg(DISTINCT coalesce(x -> 'attributes' ->> same, 'NULL'), ', ')
                   FROM jsonb_array_elements(members) AS t(x)),
                format('party members must share it (queue %s''s filters.same)', q.queue));
        END IF;
    END LOOP;

    -- This login's party already queued is refused before the insert: a client that
    -- repeats a refused call at once must hear "already queued" again, not "being enqueued
    -- by another call" from its own first call (PostgreSQL reports an error to the client
    -- a moment before the failed transaction releases its locks).
    IF EXISTS (SELECT 1 FROM queue_entries e
                WHERE e.queue = q.queue AND e.owner = session_user
                  AND e.party_id = party_id AND e.status = 'queued') THEN
        PERFORM matchmaker_refuse('party_id', quote_literal(party_id),
            format('is already queued in queue %s (cancel it first)', q.queue));
    END IF;

    PERFORM matchmaker_check_quota(q, n);

    -- One party_id per login and queue at a time: the first member's row (party_lead) is
    -- unique per (queue, owner, party_id), and its members' per (queue, owner, player_id).
    -- Every key holds the login, so only this login's own calls can collide with this one,
    -- and no other login can compute or hold what it waits for. A concurrent call of this
    -- login for the same party or player waits at most the function's lock_timeout, then
    -- is refused, never stalled.
    key := nextval('queue_entries_party_key_seq');
    BEGIN
        RETURN QUERY
        INSERT INTO queue_entries AS e (queue, player_id, party_id, party_key, party_size,
                                        party_lead, skill, skill_sigma, latencies,
                                        peer_pings, roles, side, attributes, enqueued_at,
                                        expires_at)
        SELECT q.queue, x ->> 'player_id', party_id, key, n, t.ord = 1,
               (x ->> 'skill')::double precision, (x ->> 'skill_sigma')::double precision,
               matchmaker_canonical_ms_map(coalesce(x -> 'latencies', '{}')),
               matchmaker_canonical_ms_map(coalesce(x -> 'peer_pings', '{}')),
               coalesce(ARRAY(SELECT jsonb_array_elements_text(x -> 'roles')), '{}'),
               (x ->> 'side')::double precision, coalesce(x -> 'attributes', '{}'), now(),
               now() + q.ticket_ttl
          FROM jsonb_array_elements(members) WITH ORDINALITY AS t(x, ord)
         ORDER BY t.ord
        RETURNING e.player_id, e.entry_id;
    EXCEPTION
        WHEN unique_violation THEN
            GET STACKED DIAGNOSTICS violated = CONSTRAINT_NAME;
            IF violated = 'queue_entries_one_queued_party_per_owner' THEN
                PERFORM matchmaker_refuse('party_id', quote_literal(party_id),
                    format('is already queued in queue %s (cancel it first)', q.queue));
            END IF;
            PERFORM matchmaker_refuse('members[].player_id',
                (SELECT string_agg(quote_literal(e.player_id), ', ' ORDER BY e.player_id)
                   FROM queue_entries e
                  WHERE e.queue = q.queue AND e.owner = session_user
                    AND e.status = 'queued' AND e.player_id = ANY (ids)),
                format('is already queued in queue %s (cancel it first)', q.queue));
        WHEN lock_not_available THEN
            PERFORM matchmaker_refuse('party_id', quote_literal(party_id),
                format('is being enqueued in queue %s by another call right now', q.queue));
    END;
END
$$;

-- Cancel a player's queued entries (in one queue, or in every queue when queue is NULL),
-- and the entries of their party with them: a party is never split. A player in a match
-- still waiting for its ready check declines it (decline_match): the leader cancels the
-- match, the player and their party end declined. Returns how many entries were
-- cancelled, plus the pending matches declined (0: nothing queued; a round may have
-- matched them already). Only the caller's own entries (daemon and ops: any). Refuses: a
-- bad player_id.
CREATE FUNCTION cancel(player_id text, queue text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    n integer;
    pending bigint;
BEGIN
    PERFORM matchmaker_check_id('player_id', player_id);
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
-- Refuses: a NULL array, a NULL id, or more than 10000 ids.
CREATE FUNCTION keep_alive(player_ids text[], queue text DEFAULT NULL)
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

-- ---- Enqueue wake-up --------------------------------------------------------------------
-- Per statement, not per row: a bulk INSERT sends one notification per queue.
CREATE FUNCTION matchmaker_notify_enqueue() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM matchmaker_notify('matchmaker_enqueue', q.queue)
       FROM (SELECT DISTINCT queue FROM inserted) q;
    RETURN NULL;
END
$$;

CREATE TRIGGER queue_entries_notify_enqueue
    AFTER INSERT ON queue_entries
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION matchmaker_notify_enqueue();

-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON queues, queue_entries FROM PUBLIC;
REVOKE ALL ON FUNCTION
    matchmaker_check_member(queues, text, double precision, double precision, jsonb, jsonb,
                            text[], double precision),
    matchmaker_check_member_json(queues, jsonb, text[]),
    matchmaker_member_ok(queues, text, double precision, double precision, jsonb, jsonb,
                         text[], double precision),
    matchmaker_active_queue(text),
    enqueue(text, text, double precision, jsonb, jsonb, text[], double precision,
            double precision, jsonb),
    enqueue_party(text, text, jsonb),
    cancel(text, text),
    keep_alive(text[], text),
    matchmaker_notify_enqueue()
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    enqueue(text, text, double precision, jsonb, jsonb, text[], double precision,
            double precision, jsonb),
    enqueue_party(text, text, jsonb),
    cancel(text, text),
    keep_alive(text[], text)
    TO matchmaker_client;
-- The daemon publishes and retires the queues and moves the entries; operators read.
GRANT SELECT, INSERT, UPDATE, DELETE ON queue_entries TO matchmaker_daemon;
GRANT SELECT, INSERT, UPDATE ON queues TO matchmaker_daemon;
GRANT USAGE, SELECT ON SEQUENCE queue_entries_entry_id_seq TO matchmaker_daemon;
GRANT SELECT ON queues, queue_entries TO matchmaker_ops;
