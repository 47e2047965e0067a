-- Rounds and matches: what each round did and why, the matches it committed and their
-- players, and the history the next rounds read. A queue's leader (0004) runs a round over
-- the queue's pool (0003) and commits it in one transaction: the round, its matches,
-- match_players, the entries moved to 'matched', recent_matches, the round's snapshot,
-- and the notifications to the players' logins. Retention prunes this history by age.


-- ---- rounds: what each round did and why ------------------------------------------------
-- Enough to explain any past round and to replay it (the effective queue config, its hash
-- and the seed are stored with the round; the pool is in round_snapshots).
CREATE TABLE rounds (
    round_id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue             text NOT NULL,
    -- schedule: the interval / cron tick; pool_size: the pool reached the target size
    -- early; max_wait: someone waited the queue's maximum; manual: an operator asked;
    -- backfill: a round that only fills backfill requests.
    trigger           text NOT NULL,
    -- The lease under which the round was committed (see leases).
    leader            text NOT NULL,
    term              bigint NOT NULL,
    started_at        timestamptz NOT NULL,
    snapshot_at       timestamptz NOT NULL,
    committed_at      timestamptz NOT NULL,
    pool_size         integer NOT NULL,
    match_count       integer NOT NULL,
    matched           integer NOT NULL,
    left_over         integer NOT NULL,
    rejected          integer NOT NULL,
    -- Players whose match was dropped because a match-mate cancelled during the solve;
    -- they stay queued with their original enqueue time.
    dropped_by_cancel integer NOT NULL DEFAULT 0,
    -- The round's megascore (mean match score) and the mean of each factor's score.
    score             double precision NULL,
    factor_averages   jsonb NOT NULL DEFAULT '{}',
    solver_stats      jsonb NOT NULL DEFAULT '{}',
    -- Database and solver time of the round, for ops (ms).
    snapshot_ms       double precision NOT NULL,
    solve_ms          double precision NOT NULL,
    commit_ms         double precision NOT NULL,
    -- The seed is a u64: numeric holds all of it.
    seed              numeric(20, 0) NOT NULL,
    config_hash       text NOT NULL,
    config            jsonb NOT NULL,
    CONSTRAINT trigger_must_be_known
        CHECK (trigger IN ('schedule', 'pool_size', 'max_wait', 'manual', 'backfill'))
);
COMMENT ON TABLE rounds IS
    'One row per committed round; config + seed + the pool (match_players and the entries '
    'with this round_id) are enough to replay it.';

-- ---- matches ----------------------------------------------------------------------------
-- Peer-to-peer matches name who hosts them: the solver never makes one that nobody in it
-- can host (a player can host when their ping to every other player is at most
-- hosts.max_ping_ms). Of the players who can, the two best by the host rule of the
-- Awesomenauts matchmaker post (lowest worst ping to the others, ties by player id) are
-- the host and the backup host, who takes over if the host drops (host migration).
CREATE TABLE matches (
    match_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- A key: one check per match, not per player.
    round_id   bigint NOT NULL REFERENCES rounds,
    queue      text NOT NULL,
    created_at timestamptz NOT NULL,
    -- Weighted match score in [0, 1] and the score of each factor, by factor name.
    score      double precision NOT NULL,
    factors    jsonb NOT NULL DEFAULT '{}',
    -- Dedicated-server queues: the server region. Peer-to-peer: players who can host,
    -- best first.
    region     text NULL,
    hosts      text[] NOT NULL DEFAULT '{}',
    -- NULL in dedicated-server queues (the match is played in `region`).
    host_player_id        text NULL,
    -- NULL when only one player can host (or in dedicated-server queues).
    backup_host_player_id text NULL,
    -- Backfills: a fill is written as a match holding the new players only, with the
    -- session they join and the request it answers (no key: retention prunes requests
    -- by their own age).
    session_id            text NULL,
    backfill_request_id   bigint NULL,
    -- Peer-to-peer: nobody in the match can host it; the game backend routes it through
    -- its relay (a floor step with relay = true was in force for its longest-waiting
    -- player).
    relay                 boolean NOT NULL DEFAULT false,
    CONSTRAINT relay_match_has_no_host CHECK (NOT relay OR host_player_id IS NULL),
    -- The ready check: ready (final: no ready check, or every player accepted), pending
    -- (players answer with accept_match / decline_match until answer_by), cancelled (a
    -- player declined or did not answer: cancel_reason says who). The queue's leader
    -- resolves a pending match once, in one transaction fenced by its lease: ready, or
    -- cancelled with its match_players rows deleted, their answers kept in `answers`,
    -- the players who accepted (with their parties) queued again on their own entries,
    -- with their original enqueue time, and the others declined.
    status                text NOT NULL DEFAULT 'ready'
        CONSTRAINT match_status_must_be_known
        CHECK (status IN ('pending', 'ready', 'cancelled')),
    answer_by             timestamptz NULL,
    resolved_at           timestamptz NULL,
    cancel_reason         text NULL,
    -- Cancelled matches: each player's answer ({"alice": "accepted", "bob": null}; a
    -- second "alice", of another login, as "alice#<entry_id>").
    answers               jsonb NULL,
    CONSTRAINT pending_match_has_answer_by CHECK (status <> 'pending' OR answer_by IS NOT NULL),
    CONSTRAINT cancelled_match_has_reason CHECK (status <> 'cancelled' OR cancel_reason IS NOT NULL),
    CONSTRAINT backup_host_needs_a_host
        CHECK (backup_host_player_id IS NULL OR host_player_id IS NOT NULL),
    CONSTRAINT backup_host_is_another_player
        CHECK (backup_host_player_id IS DISTINCT FROM host_player_id
               OR host_player_id IS NULL)
);
COMMENT ON COLUMN matches.host_player_id IS
    'Peer-to-peer: the player who hosts (reaches everyone within hosts.max_ping_ms, lowest '
    'worst ping; ties by player id). NULL in dedicated-server queues.';
COMMENT ON COLUMN matches.backup_host_player_id IS
    'Peer-to-peer: the next best possible host, for host migration; NULL when only one '
    'player can host.';
COMMENT ON COLUMN matches.relay IS
    'Peer-to-peer: nobody in the match can host it; played through the game''s relay (host '
    'and backup host NULL).';
COMMENT ON COLUMN matches.session_id IS
    'Backfills: the running session the match''s players join (NULL: a new match)';

-- ---- match_players ----------------------------------------------------------------------
-- The round's commit writes a match, its players' rows here and their entries' move to
-- 'matched' in one statement: each row is made from the entry that statement has just
-- moved, under the match id it has just inserted. So its links to the match and the entry
-- are not foreign keys (which would cost every matched player two key checks, each a row
-- lock on a row the same statement had just written). What the keys would guard holds:
-- only the daemon writes these tables; retention deletes a match's match_players rows
-- first, then its entries and the match; and the audit (`matchmaker-lab soak`, the
-- fault tests) counts match_players rows whose match or entry is missing, a violation
-- like a player in two matches.
CREATE TABLE match_players (
    match_id     bigint NOT NULL,
    -- UNIQUE: an entry goes to at most one match, whatever goes wrong above.
    entry_id     bigint NOT NULL UNIQUE,
    queue        text NOT NULL,
    player_id    text NOT NULL,
    party_id     text NULL,
    team         integer NOT NULL,
    role         text NULL,
    skill        double precision NOT NULL,
    enqueued_at  timestamptz NOT NULL,
    matched_at   timestamptz NOT NULL,
    -- The ready check: the player's answer (NULL: none yet, or no ready check).
    answer       text NULL
        CONSTRAINT answer_must_be_known CHECK (answer IN ('accepted', 'declined')),
    answered_at  timestamptz NULL,
    -- By entry, not player id: player ids are per login, and two logins' "alice" may
    -- play in one match.
    PRIMARY KEY (match_id, entry_id)
);
COMMENT ON COLUMN match_players.match_id IS
    'the match; written in the same statement as the match, without a foreign key';
COMMENT ON COLUMN match_players.entry_id IS
    'the queue entry matched (UNIQUE: one match per entry); written in the same statement '
    'that moves the entry to matched, without a foreign key';

-- ---- recent_matches: each player's last matches -----------------------------------------
-- So that a round's work does not grow with the length of the history. The snapshot
-- reads the rows of its pooled players through the primary key (nothing reads
-- match_players by player), and retention keeps the matches they name. The round's commit
-- rewrites a row in place (the new id appended, the oldest beyond the queue's depth
-- dropped): no indexed column changes and fillfactor leaves room on the page, so it is a
-- HOT update and adds no index key for a player who has played before. An index on
-- match_players by player instead grows a key per matched player at a random place, and
-- its pages, read and written whole once per player, make each round dearer as the
-- history grows.
CREATE TABLE recent_matches (
    queue     text NOT NULL,
    player_id text NOT NULL,
    -- The player's last matches in the queue, oldest first (ascending match_id: a
    -- queue's rounds commit one after the other under its lease), at most the queue's
    -- round.history_matches at the time of the last match.
    match_ids bigint[] NOT NULL,
    -- The login whose player this is (player ids are per login, as in queue_entries).
    owner     text NOT NULL DEFAULT session_user,
    PRIMARY KEY (queue, owner, player_id)
) WITH (fillfactor = 80);
COMMENT ON TABLE recent_matches IS
    'Per queue, login and player, the ids of their last round.history_matches matches, oldest '
    'first: the history a round''s snapshot reads and retention keeps. Written by the '
    'round''s commit, in the transaction that writes match_players.';

-- ---- round_snapshots: what each round's solver saw --------------------------------------
-- So that any past round can be re-solved (`matchmaker replay`), re-solved with other
-- settings (what-if), and every pooled player who was not matched can be told why
-- (`matchmaker explain`, the player_rounds view).
CREATE TABLE round_snapshots (
    -- One snapshot per round, gone with its round: retention prunes rounds and relies on
    -- this cascade.
    round_id     bigint PRIMARY KEY REFERENCES rounds ON DELETE CASCADE,
    queue        text NOT NULL,
    -- Layout of `pool`; a later layout gets a new number and the program reads both.
    format       smallint NOT NULL DEFAULT 1,
    -- The solver's input exactly: the core's Pool as JSON (every player given to the
    -- solver with the fields it used: skill, sigma, latencies, peer pings, roles, side,
    -- party, enqueue time; the round's clock `now`, so waits are as they were; the match
    -- history the snapshot read), compressed with LZ4 (frame: 4-byte length, then the
    -- block). Compressed by the daemon, not by PostgreSQL: a 10,000-player pool is a few
    -- MB of JSON, and the round's commit should neither parse it (jsonb) nor compress it
    -- (TOAST) while it holds the lease row. Only the program reads it back.
    pool         bytea NOT NULL,
    pool_players integer NOT NULL,
    -- Size of the JSON before compression (what the compression saves, for ops).
    pool_json_bytes integer NOT NULL,
    -- The queue's effective config as a config file (TOML) holding this queue only, as
    -- `matchmaker optimize --config` and `replay --config` read it.
    config       text NOT NULL,
    -- The solver's budget: {"time_ms": 3000} or {"restarts": 8, "moves_per_restart": N}
    -- (moves_per_restart null: the solver's default), and the threads; with restarts the
    -- result does not depend on threads or machine speed. The seed is rounds.seed.
    budget       jsonb NOT NULL,
    strategy     text NOT NULL,
    threads      integer,
    -- Every pooled player who was not matched, and why:
    -- {"player_id": {"outcome": "outscored", "reason": "..."}}; outcomes: no_valid_match,
    -- outscored, not_found, party_sat_out, rejected, left_during_solve, match_dropped.
    -- Small (left-overs are few), readable in SQL, and indexed for `explain`.
    left_over    jsonb NOT NULL DEFAULT '{}',
    -- Matches the solver made that the commit dropped (a player left during the solve),
    -- as arrays of teams of player ids: with the committed matches, the solver's output.
    dropped_matches jsonb NOT NULL DEFAULT '[]'
);
-- Already compressed: do not let TOAST try again (EXTERNAL: out of line, uncompressed).
ALTER TABLE round_snapshots ALTER COLUMN pool SET STORAGE EXTERNAL;
COMMENT ON TABLE round_snapshots IS
    'What each round''s solver saw (pool, history, config, budget; seed in rounds) and why '
    'each pooled player who was not matched was left over. matchmaker replay re-solves it.';

-- ---- Indexes ----------------------------------------------------------------------------
CREATE INDEX rounds_by_queue_latest ON rounds (queue, round_id DESC);
-- Retention: the next old rounds of a queue, oldest first.
CREATE INDEX rounds_by_queue_age ON rounds (queue, committed_at, round_id);

-- Also the foreign-key check of every round retention deletes.
CREATE INDEX matches_by_round ON matches (round_id);
-- Retention: the next old matches of a queue, oldest first, from where the last batch
-- stopped.
CREATE INDEX matches_by_queue_age ON matches (queue, created_at, match_id);

-- `explain PLAYER`: the rounds that left a player over (`left_over ? 'alice'`).
CREATE INDEX round_snapshots_left_over ON round_snapshots USING gin (left_over);

-- ---- Round commit -----------------------------------------------------------------------
-- The commit writes a round's counts after its matches (a row that fails is isolated
-- first), so the notification is sent at COMMIT from the row as it is then: a deferred
-- constraint trigger that reads the final row, not the row as first inserted.
CREATE FUNCTION matchmaker_notify_round() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM matchmaker_notify('matchmaker_round', json_build_object(
        'queue', r.queue, 'round_id', r.round_id,
        'match_count', r.match_count, 'matched', r.matched)::text)
       FROM rounds r
      WHERE r.round_id = NEW.round_id;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER rounds_notify_commit
    AFTER INSERT ON rounds
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION matchmaker_notify_round();

-- ---- Match notifications ----------------------------------------------------------------
-- Not a trigger: the round's commit writes a round's matches in one statement, isolates a
-- failing row by savepoints, and knows which matches stand; a backfill names the matches
-- it extended. The commit calls matchmaker_notify_matches() after its matches are
-- written, so the notifications leave at COMMIT or never.

-- Size: PostgreSQL refuses a payload of 8000 bytes or more (with the default 8 kB block
-- size). A match whose payload would not fit is sent as several notifications, "part" 1
-- to "parts", each with the same header and some of the players; each part is complete
-- for the players it names (their match and team). The largest match the core allows (16
-- players) with the longest ids (64 four-byte characters) fits in two parts. If even one
-- player does not fit beside the header (a queue name of thousands of characters), the
-- match is sent as {"event":"match","round_id":..,"match_id":..,"part":1,"parts":1,
-- "players_omitted":true}: read match_details for that match.

-- The matches whose roster needs several notifications: one PL/pgSQL pass per match and
-- player, splitting the players in parts under the payload limit.
CREATE FUNCTION matchmaker_notify_matches_in_parts(match_ids bigint[], event text DEFAULT 'match')
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    -- PostgreSQL's NOTIFY_PAYLOAD_MAX_LENGTH: BLCKSZ - NAMEDATALEN - 128, exclusive.
    max_bytes constant integer := current_setting('block_size')::integer - 64 - 128 - 1;
    m record;
    head text;
    budget integer;
    piece text;
    parts text[];
    current text;
    fits boolean;
    sent integer := 0;
    login text;
    payload text;
BEGIN
    IF event IS NULL OR event NOT IN ('match', 'backfill', 'ready_check', 'ready') THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('event = %s: must be match, backfill, ready_check or ready',
                             quote_nullable(event));
    END IF;
    FOR m IN
        SELECT x.match_id, x.round_id, x.queue, x.relay, x.answer_by,
               -- Who is told: the logins of the match's players, and the one that asked
               -- for the backfill it fills.
               ARRAY(SELECT DISTINCT o FROM unnest(array_agg(e.owner)
                                                   || b.owner) AS o
                      WHERE o IS NOT NULL ORDER BY o) AS logins,
               -- One JSON object per player, written out by hand: compact (json_build_object
               -- puts spaces around every colon) and with the keys in a fixed order.
               array_agg(format('{"player_id":%s,"team":%s%s%s}',
                                to_json(mp.player_id), mp.team,
                                ',"party_id":' || to_json(mp.party_id),
                                ',"role":' || to_json(mp.role))
                         ORDER BY mp.team, mp.player_id) AS players
          FROM matches x
          JOIN match_players mp ON mp.match_id = x.match_id
          JOIN queue_entries e ON e.entry_id = mp.entry_id
          LEFT JOIN backfill_requests b ON b.request_id = x.backfill_request_id
         WHERE x.match_id = ANY (match_ids)
         GROUP BY x.match_id, b.owner
         ORDER BY x.match_id
    LOOP
        head := format('{"event":%s,"queue":%s,"round_id":%s,"match_id":%s%s%s',
                       to_json(event), to_json(m.queue), m.round_id, m.match_id,
                       CASE WHEN event = 'ready_check' THEN format(',"answer_by":%s', to_json(
                           to_char(m.answer_by AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')))
                       END,
                       CASE WHEN m.relay THEN ',"relay":true' ELSE '' END);
        -- What a part adds around its players, with part numbers as long as they can be.
        budget := max_bytes - octet_length(head)
                  - octet_length(',"part":,"parts":,"players":[]}')
                  - 2 * length(cardinality(m.players)::text);
        parts := '{}';
        current := NULL;
        fits := true;
        FOREACH piece IN ARRAY m.players LOOP
            IF octet_length(piece) > budget THEN
                fits := false;
                EXIT;
            END IF;
            IF current IS NULL THEN
                current := piece;
            ELSIF octet_length(current) + 1 + octet_length(piece) <= budget THEN
                current := current || ',' || piece;
            ELSE
                parts := parts || current;
                current := piece;
            END IF;
        END LOOP;
        IF NOT fits THEN
            parts := ARRAY[NULL::text];
        ELSE
            parts := parts || coalesce(current, '');
        END IF;
        FOREACH login IN ARRAY m.logins LOOP
            FOR i IN 1 .. cardinality(parts) LOOP
                payload := CASE WHEN fits
                    THEN format('%s,"part":%s,"parts":%s,"players":[%s]}',
                                head, i, cardinality(parts), parts[i])
                    ELSE format('{"event":%s,"round_id":%s,"match_id":%s,"part":1,"parts":1,'
                                '"players_omitted":true}', to_json(event), m.round_id, m.match_id)
                    END;
                IF matchmaker_notify(matchmaker_login_channel(login, m.queue), payload) THEN
                    sent := sent + 1;
                END IF;
            END LOOP;
        END LOOP;
    END LOOP;
    RETURN sent;
END
$$;
COMMENT ON FUNCTION matchmaker_notify_matches_in_parts(bigint[], text) IS
    'matchmaker_notify_matches() for matches whose roster needs several notifications '
    '(split in parts under the payload limit)';

-- One notification (or several parts) per match of match_ids and login told, built from
-- the rows as they are now in the calling transaction; returns how many notifications
-- were sent. The
-- matches that fit one notification (nearly all) are built in one statement, a loop over
-- every match and player being a noticeable part of a large round's commit; the others
-- go to matchmaker_notify_matches_in_parts(). A call's notifications are sent in match_id
-- order, those in parts after the others.
CREATE FUNCTION matchmaker_notify_matches(match_ids bigint[], event text DEFAULT 'match')
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    -- PostgreSQL's NOTIFY_PAYLOAD_MAX_LENGTH: BLCKSZ - NAMEDATALEN - 128, exclusive.
    max_bytes constant integer := current_setting('block_size')::integer - 64 - 128 - 1;
    sent integer;
    long bigint[];
BEGIN
    IF event IS NULL OR event NOT IN ('match', 'backfill', 'ready_check', 'ready') THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('event = %s: must be match, backfill, ready_check or ready',
                             quote_nullable(event));
    END IF;
    WITH payloads AS MATERIALIZED (
        SELECT x.match_id, x.queue,
               -- Who is told: the logins of the match's players, and the one that asked
               -- for the backfill it fills.
               ARRAY(SELECT DISTINCT o FROM unnest(array_agg(e.owner) || b.owner) AS o
                      WHERE o IS NOT NULL ORDER BY o) AS logins,
               format('{"event":%s,"queue":%s,"round_id":%s,"match_id":%s%s%s,"part":1,"parts":1,"players":[',
                      to_json(event), to_json(x.queue), x.round_id, x.match_id,
                      CASE WHEN event = 'ready_check' THEN format(',"answer_by":%s', to_json(
                          to_char(x.answer_by AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')))
                      END,
                      CASE WHEN x.relay THEN ',"relay":true' ELSE '' END)
               -- One JSON object per player, written out by hand as in
               -- matchmaker_notify_matches_in_parts: compact and with the keys in a fixed
               -- order.
               || string_agg(format('{"player_id":%s,"team":%s%s%s}',
                                    to_json(mp.player_id), mp.team,
                                    ',"party_id":' || to_json(mp.party_id),
                                    ',"role":' || to_json(mp.role)),
                             ',' ORDER BY mp.team, mp.player_id)
               || ']}' AS payload
          FROM matches x
          JOIN match_players mp ON mp.match_id = x.match_id
          JOIN queue_entries e ON e.entry_id = mp.entry_id
          LEFT JOIN backfill_requests b ON b.request_id = x.backfill_request_id
         WHERE x.match_id = ANY (match_ids)
         GROUP BY x.match_id, b.owner)
    , told AS (
        SELECT p.match_id, p.queue, l.login, p.payload
          FROM payloads p, unnest(p.logins) AS l(login)
         WHERE octet_length(p.payload) <= max_bytes),
    channels AS MATERIALIZED (
        -- Each login's channel once, not once per match.
        SELECT d.login, d.queue, matchmaker_login_channel(d.login, d.queue) AS channel
          FROM (SELECT DISTINCT login, queue FROM told) d)
    SELECT
        -- pg_notify() is volatile: called once per row, after the ORDER BY. The queue's
        -- limit is read once for the whole call (an InitPlan).
        (SELECT count(*)
           FROM (SELECT pg_notify(c.channel, t.payload)
                   FROM told t JOIN channels c USING (login, queue)
                  WHERE (SELECT matchmaker_notify_open())
                  ORDER BY t.match_id, t.login) AS s),
        (SELECT array_agg(p.match_id ORDER BY p.match_id)
           FROM payloads p
          WHERE octet_length(p.payload) > max_bytes)
      INTO sent, long;
    IF long IS NOT NULL THEN
        sent := sent + matchmaker_notify_matches_in_parts(long, event);
    END IF;
    RETURN sent;
END
$$;
COMMENT ON FUNCTION matchmaker_notify_matches(bigint[], text) IS
    'NOTIFY each match on its players'' logins'' channels of its queue (split in parts under '
    'the payload limit); the daemon calls it inside the commit that writes the matches';


-- =========================================================================================
-- Views
-- =========================================================================================

-- One line per matched player: team, teammates, opponents, where it is played, how good.
-- For matches that hold at least one of the caller's players (their teammates and
-- opponents included).
CREATE VIEW match_details WITH (security_barrier) AS
SELECT mp.match_id,
       m.round_id,
       m.queue,
       m.created_at,
       mp.player_id,
       mp.party_id,
       mp.team,
       mp.role,
       mp.skill,
       extract(epoch FROM mp.matched_at - mp.enqueued_at)::double precision
           AS waited_seconds,
       ARRAY(SELECT o.player_id FROM match_players o
              WHERE o.match_id = mp.match_id AND o.team = mp.team
                AND o.entry_id <> mp.entry_id
              ORDER BY o.player_id) AS teammates,
       ARRAY(SELECT o.player_id FROM match_players o
              WHERE o.match_id = mp.match_id AND o.team <> mp.team
              ORDER BY o.team, o.player_id) AS opponents,
       m.region,
       m.hosts,
       m.score AS match_score,
       m.factors,
       m.host_player_id,
       m.backup_host_player_id,
       m.relay
  FROM match_players mp
  JOIN matches m ON m.match_id = mp.match_id
 WHERE (SELECT matchmaker_sees_all())
    OR EXISTS (SELECT 1 FROM match_players mine
                 JOIN queue_entries e ON e.entry_id = mine.entry_id
                WHERE mine.match_id = mp.match_id AND e.owner = session_user);

-- ---- For operators ----------------------------------------------------------------------

-- One line per round, newest first when ordered by round_id DESC.
CREATE VIEW round_summaries AS
SELECT r.round_id,
       r.queue,
       r.trigger,
       r.started_at,
       r.committed_at,
       round((extract(epoch FROM r.committed_at - r.started_at) * 1000)::numeric, 1)
           AS elapsed_ms,
       r.pool_size,
       r.match_count,
       r.matched,
       r.left_over,
       r.rejected,
       r.dropped_by_cancel,
       r.score,
       r.factor_averages,
       r.snapshot_ms,
       r.solve_ms,
       r.commit_ms,
       r.solver_stats ->> 'strategy' AS strategy,
       r.solver_stats ->> 'stop_reason' AS stop_reason,
       r.seed,
       r.config_hash,
       r.leader,
       r.term,
       -- The ready check of the round's matches: still waiting, and cancelled.
       (SELECT count(*) FROM matches m
         WHERE m.round_id = r.round_id AND m.status = 'pending')::integer AS pending_matches,
       (SELECT count(*) FROM matches m
         WHERE m.round_id = r.round_id AND m.status = 'cancelled')::integer AS cancelled_matches
  FROM rounds r;

-- A player's rounds, newest first: the queue and round, the pool's size, matched (match,
-- team) or left over / rejected, and why. It names every player of every round, so it is
-- not granted to clients (they read player_status).
-- `WHERE player_id = ...` reaches the matched rows through the player's entries
-- (queue_entries_player_latest); the left-over rows are read from each round's small
-- left_over object (matchmaker explain uses the GIN index through `left_over ? $1`).
CREATE VIEW player_rounds AS
SELECT e.player_id, r.queue, r.round_id, r.committed_at, r.pool_size,
       'matched'::text AS outcome, e.match_id, e.team, NULL::text AS reason
  FROM queue_entries e
  JOIN rounds r ON r.round_id = e.round_id
 WHERE e.status = 'matched'
UNION ALL
SELECT o.key AS player_id, r.queue, r.round_id, r.committed_at, r.pool_size,
       o.value ->> 'outcome', NULL::bigint, NULL::integer, o.value ->> 'reason'
  FROM round_snapshots s
  JOIN rounds r USING (round_id)
 CROSS JOIN LATERAL jsonb_each(s.left_over) AS o;
COMMENT ON VIEW player_rounds IS
    'Per player and round: matched (match_id, team) or the outcome and reason of a pooled '
    'player who was not matched. Operators only.';

-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON rounds, matches, match_players, recent_matches, round_snapshots,
              match_details, round_summaries, player_rounds
    FROM PUBLIC;
REVOKE ALL ON FUNCTION
    matchmaker_notify_round(),
    matchmaker_notify_matches_in_parts(bigint[], text),
    matchmaker_notify_matches(bigint[], text)
    FROM PUBLIC;
GRANT SELECT ON match_details TO matchmaker_client;
-- DELETE where retention prunes (round_snapshots references rounds ON DELETE CASCADE: it
-- is cleaned by the cascade, which runs with the privileges of the table's owner).
GRANT SELECT, INSERT, UPDATE, DELETE ON rounds, matches, match_players TO matchmaker_daemon;
GRANT SELECT, INSERT, UPDATE ON recent_matches TO matchmaker_daemon;
GRANT SELECT, INSERT ON round_snapshots TO matchmaker_daemon;
GRANT SELECT ON match_details, round_summaries, player_rounds TO matchmaker_daemon;
GRANT USAGE, SELECT ON SEQUENCE rounds_round_id_seq, matches_match_id_seq
    TO matchmaker_daemon;
GRANT EXECUTE ON FUNCTION matchmaker_notify_matches(bigint[], text),
                          matchmaker_notify_matches_in_parts(bigint[], text)
    TO matchmaker_daemon;
GRANT SELECT ON rounds, matches, match_players, recent_matches, round_snapshots,
                match_details, round_summaries, player_rounds
    TO matchmaker_ops;
