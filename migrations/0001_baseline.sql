-- The matchmaker's schema, 1.0.
--
-- Three kinds of users, three roles (section 7):
--   clients    game clients or a game backend (matchmaker_client): call the client
--              functions (section 4) and read the client views (section 5); they hold no
--              privilege on any table. This is Open Match's frontend rule (the server
--              owns tickets) in PostgreSQL's own terms: SECURITY DEFINER functions with a
--              pinned search_path, roles, row locks.
--   the daemon `matchmaker run` (matchmaker_daemon): the only writer of the tables. It
--              publishes the queues, runs each queue's rounds under a lease, commits
--              matches, expires tickets and prunes old history.
--   operators  (matchmaker_ops): read everything, write nothing.
--
-- Sections:
--   1. Tables                 5. Views
--   2. Indexes                6. Notifications
--   3. Internal helpers       7. Roles and privileges
--   4. The client API
--
-- Released migrations are never edited: a change to this schema is a new migration.


-- =========================================================================================
-- 1. Tables
-- =========================================================================================

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
-- them, and the audit (`matchmaker soak`, the fault tests) holds every matched entry to
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
-- first, then its entries and the match; and the audit (`matchmaker soak`, the fault
-- tests) counts match_players rows whose match or entry is missing, a violation like a
-- player in two matches.
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

-- ---- queue_state: what the countdown is made of -----------------------------------------
-- Written by the leader of each queue at start-up, after each round, after a config change
-- and when it recounts the pool. pool_size is the pool as the leader last counted it (at
-- every look at the queue: on each enqueue NOTIFY, debounced, and at least every
-- daemon.poll_interval), so clients polling player_status do not each count the queue's
-- queued rows, and enqueues never write (or lock) this row.
CREATE TABLE queue_state (
    queue             text PRIMARY KEY,
    -- The next moment a round can run: the schedule's tick. Once the tick has passed and
    -- the queue only waits for players (min_pool, players) it stays that passed tick: a
    -- round runs as soon as players_missing more arrive. NULL while a round runs.
    next_round_at     timestamptz NULL,
    -- schedule: the next tick (players_missing > 0: the tick finds the pool below
    --   min_pool and waits for them);
    -- min_pool: the tick passed and the pool is below min_pool: a round runs when it is
    --   reached, or at latest_round_at (the oldest player's max-wait fallback);
    -- players: the tick passed and not one match can be formed;
    -- round: a round is running since round_started_at.
    waiting_for       text NOT NULL DEFAULT 'schedule'
        CONSTRAINT waiting_for_must_be_known
        CHECK (waiting_for IN ('schedule', 'min_pool', 'players', 'round')),
    schedule          text NOT NULL,
    -- Early start at this pool size (NULL: no early start).
    target_pool       integer NULL,
    min_pool          integer NOT NULL,
    players_per_match integer NOT NULL,
    max_wait          interval NOT NULL,
    last_round_id     bigint NULL REFERENCES rounds,
    last_round_at     timestamptz NULL,
    config_hash       text NOT NULL,
    updated_at        timestamptz NOT NULL,
    pool_size         integer NOT NULL DEFAULT 0,
    pool_counted_at   timestamptz NULL,
    -- Players the next round still needs, counted against the threshold that fires it:
    -- min_pool, or one match of the smallest format once the oldest player has waited
    -- max_wait and not one match can be formed (0: nothing missing).
    players_missing   integer NOT NULL DEFAULT 0,
    -- The latest moment a round runs if nobody else arrives: the tick when the pool
    -- holds min_pool, else the max-wait fallback (NULL: unknown, not one match yet, or
    -- written by a round's commit until the leader's next look, right after it).
    latest_round_at   timestamptz NULL,
    -- When the running round started (waiting_for = 'round' only).
    round_started_at  timestamptz NULL,
    -- The wait estimate, written by the leader after each round (see player_status):
    -- per region (a player's lowest-latency one, "*" for all) the skill edges of its
    -- buckets and, per bucket, how many rounds after the next a player of that skill and
    -- region is expected to wait, from how the pooled players of the queue's recent
    -- rounds fared; round_interval_s the recent rounds' spacing.
    -- {"round_interval_s": 30, "regions": {"*": {"edges": [1400, 1600], "rounds": [0.2, 0.1, 0.5]}}}
    wait_model        jsonb NULL,
    -- The median wait, enqueue to match, of the players the recent rounds matched.
    median_wait_s     double precision NULL
);

-- ---- leases: who runs each queue's rounds -----------------------------------------------
-- Leader election per queue (River's river_leader, Oban's peers): the holder renews
-- expires_at on a timer; anyone may take an expired lease, which bumps the term. A round
-- commits only while its (holder, term) still owns an unexpired lease, so a paused or
-- partitioned old leader cannot write.
CREATE TABLE leases (
    queue       text PRIMARY KEY,
    holder      text NOT NULL,
    term        bigint NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

-- ---- replicas: the running daemons ------------------------------------------------------
-- Each replica registers here so that each can count the live ones and lead its fair
-- share of the queues it lists, instead of the first replica taking every lease (Oban
-- keeps the same kind of table, oban_peers). A replica writes its own row at every pass of
-- its leadership loop (every daemon.lease_renew), with times from the database's clock
-- like the leases'. Live = expires_at in the future. A replica that stops deletes its
-- row; one that dies is no longer counted once its row expires (daemon.lease_ttl after
-- its last heartbeat, which is never after its leases expire: it heartbeats before it
-- renews them). This table only decides who should ask for a lease, never who holds one:
-- leadership stays in leases, so the term fencing of every commit is unchanged.
CREATE TABLE replicas (
    -- The replica's name, as in leases.holder (`matchmaker run --holder`; default
    -- hostname-pid).
    replica      text PRIMARY KEY
        CONSTRAINT replica_must_not_be_empty CHECK (replica <> ''),
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    -- The queues its config lists: the only queues it may lead. Replicas with different
    -- configs (a rolling config change) share each queue among those that list it.
    queues       text[] NOT NULL DEFAULT '{}',
    -- The binary's version, for the operator during a rolling upgrade.
    version      text NOT NULL DEFAULT ''
);
COMMENT ON TABLE replicas IS
    'One row per running daemon replica, heartbeated every daemon.lease_renew by the '
    'database clock; live while expires_at > now(). Each live replica leads about its '
    'share of the queues it lists; leases stays the only proof of leadership.';

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

-- ---- avoids: players a player does not want to meet -------------------------------------
-- Written by avoid() and unavoid(); a login's avoids name its own player ids (as parties
-- and entries do). Each queue honours a player's newest avoids, up to its
-- avoids.max_per_player, and keeps them apart (never in one match, or never on one team:
-- avoids.scope). avoid() keeps at most the largest max_per_player of the active queues
-- per player, the oldest going when a new one comes (Overwatch's "avoid as teammate"
-- list works so), so avoids cannot starve a player or the pool. An expired avoid is
-- ignored at once and deleted by retention.
CREATE TABLE avoids (
    owner             text NOT NULL DEFAULT session_user,
    player_id         text NOT NULL,
    avoided_player_id text NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    -- NULL: until unavoid().
    expires_at        timestamptz NULL,
    PRIMARY KEY (owner, player_id, avoided_player_id),
    CONSTRAINT avoid_names_another_player CHECK (player_id <> avoided_player_id),
    CONSTRAINT avoid_ids_must_not_be_empty CHECK (player_id <> '' AND avoided_player_id <> '')
);
COMMENT ON TABLE avoids IS
    'Per login and player, the players they avoid (avoid(), unavoid()); the snapshot gives '
    'each pooled player their newest avoids.max_per_player unexpired ones';


-- ---- call_buckets: each client connection's enqueue allowance ---------------------------
-- A token bucket per login, backend and queue: enqueue and enqueue_party take a token per
-- player and refuse when the bucket is empty (limits.enqueue_rate, limits.enqueue_burst).
-- Per connection, not per login: a row shared by a login's connections would hold each
-- enqueue behind the previous one's commit. A login's rate is bounded by enqueue_rate
-- times its connection limit (docs/operations.md, "Bounding client logins"). UNLOGGED:
-- no WAL per call; a crash empties it, which only refills the buckets.
CREATE UNLOGGED TABLE call_buckets (
    login  text NOT NULL,
    pid    integer NOT NULL,
    -- Each queue has its own limits.enqueue_rate: one bucket per queue.
    queue  text NOT NULL,
    tokens double precision NOT NULL,
    at     timestamptz NOT NULL,
    PRIMARY KEY (login, pid, queue)
);
COMMENT ON TABLE call_buckets IS
    'Enqueue token buckets per client login, backend and queue (written by the enqueue '
    'functions)';


-- ---- channel_key: what makes a login's notification channels its own -------------------
-- A login's channel for a queue is named by a hash of this key, the login and the queue
-- (matchmaker_login_channel): LISTEN takes no privilege, so a channel name another login
-- could work out would let it read this login's matches, or send it false ones. Random,
-- made by the migration; only the schema's owner reads it. Replacing it (UPDATE
-- channel_key SET key = ...) moves every login to new channels: clients ask
-- queue_channel() again when they reconnect.
CREATE TABLE channel_key (
    only_row boolean PRIMARY KEY DEFAULT true CONSTRAINT channel_key_has_one_row CHECK (only_row),
    key      text NOT NULL
);
-- gen_random_uuid() draws from PostgreSQL's strong random source: 244 random bits.
INSERT INTO channel_key (key) VALUES (gen_random_uuid()::text || gen_random_uuid()::text);
COMMENT ON TABLE channel_key IS
    'The secret in each login''s notification channel names (matchmaker_login_channel)';


-- =========================================================================================
-- 2. Indexes
-- =========================================================================================
-- Retention (the daemon's pruning, `matchmaker prune`) deletes old history in small
-- batches of short transactions; its indexes keep each batch an index range scan however
-- long the history is.

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

-- Retention: entries that ended outside a match (cancelled, expired, rejected,
-- withdrawn), by the time they ended, per queue. Never a queued or a matched row (a
-- match's entries go with the match, found through match_players), so the round's commit
-- adds no key here for the players it matches.
CREATE INDEX queue_entries_ended_outside_matches
    ON queue_entries (queue, updated_at, entry_id)
    WHERE status NOT IN ('queued', 'matched');

CREATE INDEX rounds_by_queue_latest ON rounds (queue, round_id DESC);
-- Retention: the next old rounds of a queue, oldest first.
CREATE INDEX rounds_by_queue_age ON rounds (queue, committed_at, round_id);

-- Also the foreign-key check of every round retention deletes.
CREATE INDEX matches_by_round ON matches (round_id);
-- The leader's look for ready checks to resolve; small: only pending matches are in it.
CREATE INDEX matches_pending ON matches (queue, answer_by) WHERE status = 'pending';
-- Retention: the next old matches of a queue, oldest first, from where the last batch
-- stopped.
CREATE INDEX matches_by_queue_age ON matches (queue, created_at, match_id);

-- `explain PLAYER`: the rounds that left a player over (`left_over ? 'alice'`).
CREATE INDEX round_snapshots_left_over ON round_snapshots USING gin (left_over);

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

-- A player's avoids newest first (avoid() keeps the newest; the snapshot reads them so).
CREATE INDEX avoids_newest_first ON avoids (owner, player_id, created_at DESC);

-- Retention deletes expired avoids.
CREATE INDEX avoids_expiry ON avoids (expires_at) WHERE expires_at IS NOT NULL;

-- avoid() counts a login's unexpired avoids (limits.max_avoids_per_login): an index-only
-- scan of the login's range, no heap visit per avoid.
CREATE INDEX avoids_per_login ON avoids (owner, expires_at);


-- =========================================================================================
-- 3. Internal helpers
-- =========================================================================================
-- None of these is executable by clients directly (section 7); the client functions run
-- them as their owner.

-- Operators and the daemon see every entry; a client login sees the entries it enqueued.
-- Called by the client views, with the privileges of the view's reader.
CREATE FUNCTION matchmaker_sees_all() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT pg_has_role(session_user, 'matchmaker_daemon', 'USAGE')
        OR pg_has_role(session_user, 'matchmaker_ops', 'USAGE')
$$;

-- ---- Input rules ------------------------------------------------------------------------
-- Every refusal is an error whose message names the field, the value and the rule, with
-- SQLSTATE 22023 (invalid_parameter_value). A client tells "your request is wrong" from
-- "the server is down" by the class alone: every refusal of a client function is in class
-- 22 (a text PostgreSQL cannot read as the parameter's type keeps its own 22P02, ...), so
-- no check may let another error through (a cast, an array subscript, a unique index). The limits keep any single row as cheap to a round as a
-- normal player:
--   ids (player, party, session, region, role, peer): 1-64 characters, no control
--     characters;
--   skill: finite, |skill| <= 1e6; skill_sigma: finite, 0..1e6; side: 0..1;
--   latencies: at most 32 regions (known regions only, when the queue lists them: a
--     dedicated-server queue always does),
--   peer_pings: at most 100 players; every ping 0..10000 ms;
--   roles: at most 16, known to the queue, no repeats; parties: 2..max_party_size members;
--   attributes: at most 16 names, each a value or a list of at most 16 values; names and
--     values 1-64 characters, no control characters.
CREATE FUNCTION matchmaker_refuse(field text, value text, rule text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'invalid_parameter_value',
        MESSAGE = format('%s = %s: %s', field,
                         coalesce(CASE WHEN length(value) > 80
                                       THEN left(value, 77) || '...' ELSE value END, 'NULL'),
                         rule);
END
$$;

CREATE FUNCTION matchmaker_check_id(field text, value text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF value IS NULL OR value = '' THEN
        PERFORM matchmaker_refuse(field, quote_nullable(value), 'is required (1-64 characters)');
    ELSIF length(value) > 64 THEN
        PERFORM matchmaker_refuse(field, quote_literal(value), 'is longer than 64 characters');
    ELSIF value ~ '[[:cntrl:]]' THEN
        PERFORM matchmaker_refuse(field, quote_literal(value), 'contains control characters');
    END IF;
END
$$;

-- A JSON object of names to milliseconds: at most max_entries, names valid ids (and among
-- known, when known is not empty), values numbers in [0, 10000].
CREATE FUNCTION matchmaker_check_ms_map(field text, m jsonb, max_entries integer,
                                        known text[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    e record;
    n integer := 0;
BEGIN
    IF m IS NULL OR jsonb_typeof(m) <> 'object' THEN
        PERFORM matchmaker_refuse(field, m::text, 'must be a JSON object of names to milliseconds');
    END IF;
    FOR e IN SELECT key, value FROM jsonb_each(m) LOOP
        n := n + 1;
        IF n > max_entries THEN
            PERFORM matchmaker_refuse(field, m::text, format('has more than %s entries', max_entries));
        END IF;
        PERFORM matchmaker_check_id(field || ' key', e.key);
        IF cardinality(known) > 0 AND NOT e.key = ANY (known) THEN
            PERFORM matchmaker_refuse(field, quote_literal(e.key),
                format('unknown region; this queue''s regions: %s', array_to_string(known, ', ')));
        END IF;
        IF jsonb_typeof(e.value) <> 'number' THEN
            PERFORM matchmaker_refuse(field || '.' || e.key, e.value::text, 'must be a number of ms');
        END IF;
        IF e.value::numeric < 0 OR e.value::numeric > 10000 THEN
            PERFORM matchmaker_refuse(field || '.' || e.key, e.value::text,
                                      'must be between 0 and 10000 ms');
        END IF;
    END LOOP;
END
$$;

-- ---- Canonical numbers -----------------------------------------------------------------
-- jsonb keeps a number as it was written, scale included: 0e-16383 is a few bytes stored
-- and 16,385 characters printed, and every round prints the rows it reads (the snapshot,
-- the backfill requests, the replay record). So the client functions store what they
-- checked in canonical form: milliseconds rounded to the microsecond, skills and sides to
-- 6 decimals, team indices as integers, trailing zeros dropped. No stored row prints longer
-- than a normal player's.

-- A checked map of names to milliseconds (matchmaker_check_ms_map), canonical.
CREATE FUNCTION matchmaker_canonical_ms_map(m jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN m = '{}' THEN m
                ELSE (SELECT jsonb_object_agg(key, trim_scale(round(value::numeric, 3)))
                        FROM jsonb_each(m)) END
$$;

-- A checked member of enqueue_party or request_backfill (matchmaker_check_member_json),
-- canonical: the fields it has, numbers rounded, JSON nulls dropped.
CREATE FUNCTION matchmaker_canonical_member(m jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'player_id', m -> 'player_id',
        'team', to_jsonb((m ->> 'team')::numeric::integer),
        'skill', to_jsonb(trim_scale(round((m ->> 'skill')::numeric, 6))),
        'skill_sigma', to_jsonb(trim_scale(round((m ->> 'skill_sigma')::numeric, 6))),
        'side', to_jsonb(trim_scale(round((m ->> 'side')::numeric, 6))),
        'latencies', matchmaker_canonical_ms_map(m -> 'latencies'),
        'peer_pings', matchmaker_canonical_ms_map(m -> 'peer_pings'),
        'roles', m -> 'roles',
        'attributes', m -> 'attributes'))
$$;

-- A JSON object of attribute names to a string or an array of strings (the input rules'
-- limits). A string is checked as an id is: 1-64 characters, no control characters.
CREATE FUNCTION matchmaker_check_attributes(field text, a jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    e record;
    v jsonb;
    n integer := 0;
BEGIN
    IF a IS NULL OR jsonb_typeof(a) <> 'object' THEN
        PERFORM matchmaker_refuse(field, a::text,
            'must be a JSON object of names to a string or a list of strings');
    END IF;
    FOR e IN SELECT key, value FROM jsonb_each(a) LOOP
        n := n + 1;
        IF n > 16 THEN
            PERFORM matchmaker_refuse(field, a::text, 'has more than 16 attributes');
        END IF;
        PERFORM matchmaker_check_id(field || ' key', e.key);
        IF jsonb_typeof(e.value) = 'string' THEN
            PERFORM matchmaker_check_id(field || '.' || e.key, e.value #>> '{}');
        ELSIF jsonb_typeof(e.value) = 'array' THEN
            IF jsonb_array_length(e.value) > 16 THEN
                PERFORM matchmaker_refuse(field || '.' || e.key, e.value::text,
                                          'has more than 16 values');
            END IF;
            FOR v IN SELECT value FROM jsonb_array_elements(e.value) LOOP
                IF jsonb_typeof(v) <> 'string' THEN
                    PERFORM matchmaker_refuse(field || '.' || e.key, e.value::text,
                                              'must be a string or a list of strings');
                END IF;
                PERFORM matchmaker_check_id(field || '.' || e.key, v #>> '{}');
            END LOOP;
        ELSE
            PERFORM matchmaker_refuse(field || '.' || e.key, e.value::text,
                                      'must be a string or a list of strings');
        END IF;
    END LOOP;
END
$$;

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


-- The calling login's quotas in queue q before it adds `players` entries: this
-- connection's enqueue rate, then the login's queued entries in the queue. The daemon
-- and operators are exempt. Concurrent calls of one login may each pass the count and
-- overshoot it by the calls in flight (no lock: that would serialize the login's calls).
-- A refused call rolls back, so it costs no token.
CREATE FUNCTION matchmaker_check_quota(q queues, players integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    queued integer;
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


-- =========================================================================================
-- 4. The client API
-- =========================================================================================
--   enqueue(queue, player_id, skill, ...)    one solo player -> entry_id
--   enqueue_party(queue, party_id, members)  a whole party in one call -> (player_id, entry_id)
--   cancel(player_id, queue)                 a player's queued entries, and their party's
--   accept_match(player_id, match_id)        answer a pending match's ready check -> text
--   decline_match(player_id, match_id)       decline it (the match is cancelled) -> text
--   keep_alive(player_ids, queue)            refresh tickets before they expire
--   request_backfill(queue, session_id, members, open_slots, expires_in) -> request_id
--   cancel_backfill(request_id)              -> boolean
--   avoid(player_id, avoided_player_id, duration) -> the player's avoids kept
--   unavoid(player_id, avoided_player_id)   -> boolean
--   queue_channel(queue)                     the queue's NOTIFY channel (section 6)
-- and the views player_status, match_details, queue_countdown, queue_catalog,
-- backfill_status, avoid_list (section 5).
--
-- Each runs as its owner (SECURITY DEFINER) with a pinned search_path, so clients need no
-- privilege on any table. Refusals: SQLSTATE 22023, a message naming the field, the value
-- and the rule (section 3); a text that is not a value of a parameter's type is PostgreSQL's
-- own error of class 22.

-- Enqueue one solo player; returns the entry id. The server sets the times, the status and
-- the owner. attributes: what the queue's filters read ({"build": "1.4.2", "platform":
-- "pc", "crossplay": "off", "language": ["en", "de"]}; queue_catalog.same_attributes
-- names those a match's players share). A player may be queued in several queues at once; they are matched at most
-- once (the commit that matches them withdraws their other entries).
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

-- Ask for players for a running session; returns the request id. members: the session's
-- current members, a JSON array of objects with player_id, team (from 0) and what the
-- scorer and the queue's filters read, as enqueue_party takes them (skill, skill_sigma,
-- latencies, peer_pings, roles, side, attributes). open_slots: the free slots per team (one entry per team). expires_in:
-- how long the request stays open. NOTIFY matchmaker_enqueue (payload: the queue) wakes
-- the queue's leader, which runs an immediate backfill round when the queue's [backfill]
-- config enables it.
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

-- Player player_id (of the caller's login) avoids avoided_player_id (of the same login):
-- every queue keeps them apart, in its avoids.scope (never in one match, or never on one
-- team), from the next round on. duration: how long (NULL: until unavoid). Avoiding the
-- same player again renews the avoid. A player keeps their newest avoids only, at most
-- the largest avoids.max_per_player of the active queues (and never more than 100): the
-- oldest goes when a new one comes. Returns how many unexpired avoids the player has now.
-- Refuses: a bad id; a player avoiding themselves; a duration outside 1 minute to 365
-- days; a new avoid (not a renewal) while the login holds the largest
-- limits.max_avoids_per_login of the active queues (the daemon and operators are exempt),
-- so one login's made-up player ids cannot grow the table without bound.
CREATE FUNCTION avoid(player_id text, avoided_player_id text, duration interval DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    keep integer;
    cap integer;
    held integer;
    n integer;
BEGIN
    PERFORM matchmaker_check_id('player_id', player_id);
    PERFORM matchmaker_check_id('avoided_player_id', avoided_player_id);
    IF avoided_player_id = player_id THEN
        PERFORM matchmaker_refuse('avoided_player_id', quote_literal(avoided_player_id),
                                  'is the player: a player cannot avoid themselves');
    END IF;
    IF duration IS NOT NULL AND (duration < interval '1 minute' OR duration > interval '365 days') THEN
        PERFORM matchmaker_refuse('duration', quote_literal(duration::text),
                                  'must be between 1 minute and 365 days (NULL: until unavoid)');
    END IF;
    SELECT least(100, greatest(1, coalesce(max(q.max_avoids), 10))),
           greatest(1, coalesce(max(q.max_avoids_per_login), 100000))
      INTO keep, cap
      FROM queues q WHERE q.active;
    -- A renewal adds no row. The count stops at the cap: its cost is bounded by the
    -- quota, not by what the login holds. Concurrent calls of one login may each pass it
    -- and overshoot by the calls in flight (no lock: that would serialize the login's
    -- calls), as the enqueue quotas do.
    IF NOT matchmaker_sees_all()
       AND NOT EXISTS (SELECT 1 FROM avoids a
                        WHERE a.owner = session_user AND a.player_id = player_id
                          AND a.avoided_player_id = avoided_player_id
                          AND (a.expires_at IS NULL OR a.expires_at > now())) THEN
        SELECT count(*) INTO held
          FROM (SELECT 1 FROM avoids a
                 WHERE a.owner = session_user
                   AND (a.expires_at IS NULL OR a.expires_at > now())
                 LIMIT cap) s;
        IF held >= cap THEN
            PERFORM matchmaker_refuse('player_id', quote_literal(player_id),
                format('this login has %s avoids (limits.max_avoids_per_login); unavoid some or let them expire',
                       held));
        END IF;
    END IF;
    -- No lock: an advisory key made of the login and player id could be computed and held
    -- by another login. Two concurrent calls for one player may each keep `keep` rows for
    -- a moment; the next call trims them, and the snapshot reads at most the queue's
    -- max_per_player per player whatever the table holds.
    INSERT INTO avoids AS a (owner, player_id, avoided_player_id, created_at, expires_at)
    VALUES (session_user, player_id, avoided_player_id, clock_timestamp(), now() + duration)
    ON CONFLICT ON CONSTRAINT avoids_pkey DO UPDATE
       SET created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at;
    -- The expired ones, and the oldest beyond what the queues honour.
    DELETE FROM avoids a
     WHERE a.owner = session_user AND a.player_id = player_id
       AND (a.expires_at <= now()
            OR a.avoided_player_id IN (
                SELECT o.avoided_player_id FROM avoids o
                 WHERE o.owner = session_user AND o.player_id = player_id
                   AND (o.expires_at IS NULL OR o.expires_at > now())
                 ORDER BY o.created_at DESC, o.avoided_player_id
                OFFSET keep));
    SELECT count(*) INTO n FROM avoids a
     WHERE a.owner = session_user AND a.player_id = player_id;
    RETURN n;
END
$$;

-- Player player_id no longer avoids avoided_player_id. Returns false when there was no
-- such avoid of the caller's (or it had expired). Refuses: a bad id.
CREATE FUNCTION unavoid(player_id text, avoided_player_id text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    n integer;
BEGIN
    PERFORM matchmaker_check_id('player_id', player_id);
    PERFORM matchmaker_check_id('avoided_player_id', avoided_player_id);
    DELETE FROM avoids a
     WHERE a.owner = session_user AND a.player_id = player_id
       AND a.avoided_player_id = avoided_player_id
       AND (a.expires_at IS NULL OR a.expires_at > now());
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n > 0;
END
$$;


-- =========================================================================================
-- 5. Views
-- =========================================================================================
-- Every time in these views is computed against now() of the reading transaction.
--
-- The client views filter to the caller's own entries unless the caller is the daemon or
-- ops. security_barrier: a client's own condition on a view runs only on the rows the
-- view's filter let through. Without it the planner may run a cheap function of the
-- client's (CREATE FUNCTION pg_temp.f ... needs no privilege beyond TEMP) on every row of
-- the table first, and the function sees, or raises with, other clients' players.

-- Per queue: the countdown and the pool size as the leader last counted it.
--   next_round_at / seconds_to_next_round: the next moment a round can run (0 s: now, as
--     soon as players_missing more players arrive; NULL while a round runs);
--   waiting_for: schedule, min_pool, players, or round (running since round_started_at);
--   players_missing: players that round still needs (0: it runs at next_round_at);
--   latest_round_at / seconds_to_latest_round: the latest moment a round runs even if
--     nobody else arrives (NULL: unknown, not one match can be formed yet).
CREATE VIEW queue_countdown AS
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
       s.wait_model,
       s.median_wait_s
  FROM queue_state s;

-- A queued player's estimated wait left, in seconds, from the leader's wait model (see
-- queue_state.wait_model): the time to the next round, plus the rounds after it that
-- players of this skill in this region (their lowest-latency one; "*" when the model has
-- none for it) were expected to wait, times the recent rounds' spacing. NULL: no model
-- yet (no round since the leader started). A few JSON look-ups: cheap enough for every
-- poll of player_status.
CREATE FUNCTION matchmaker_estimate_wait(model jsonb, skill double precision,
                                         latencies jsonb, seconds_to_next integer)
RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT ceil(greatest(0, seconds_to_next)
                + coalesce((model ->> 'round_interval_s')::double precision, 0)
                  * coalesce((b.r -> 'rounds' ->> (
                        SELECT count(*)::integer
                          FROM jsonb_array_elements_text(b.r -> 'edges') x
                         WHERE x::double precision <= skill))::double precision, 0))::integer
      FROM (SELECT coalesce(model -> 'regions' -> (SELECT key FROM jsonb_each(latencies)
                                                    ORDER BY value::numeric, key LIMIT 1),
                            model -> 'regions' -> '*') AS r) b
     WHERE model IS NOT NULL AND b.r IS NOT NULL
$$;

-- A player's latest entry per queue: the countdown while queued, the assignment once
-- matched (the match's host and backup host, the session a backfilled player joins), the
-- reason otherwise. A queued entry past its expiry reads as expired at once; a queued
-- entry's reason is why the last round left it over. A matched entry whose match waits
-- for its ready check reads pending (answer_by, the player's answer); declined: the
-- player or a party member declined it or did not answer.
--   SELECT * FROM player_status WHERE player_id = $1;
CREATE VIEW player_status WITH (security_barrier) AS
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
            THEN (SELECT mp.answer FROM match_players mp
                   WHERE mp.match_id = e.match_id AND mp.entry_id = e.entry_id) END AS answer,
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

-- The queues a client may enqueue into, their format, limits and countdown.
-- min_players_per_match: players of the smallest format, the fewest a round needs.
CREATE VIEW queue_catalog WITH (security_barrier) AS
SELECT q.queue,
       q.teams,
       q.team_size,
       q.network,
       q.roles,
       q.regions,
       q.max_party_size,
       q.ticket_ttl,
       -- How often a client should call keep_alive for its waiting players.
       q.ticket_ttl / 3 AS keep_alive_every,
       q.max_wait,
       c.next_round_at,
       c.seconds_to_next_round,
       c.waiting_for,
       c.pool_size,
       c.target_pool,
       c.players_missing_for_early_start,
       q.min_teams,
       q.min_team_size,
       q.formats,
       (SELECT min(s.players)
          FROM (SELECT (SELECT sum(x::integer) FROM unnest(string_to_array(f, 'v')) x)
                       AS players
                  FROM unnest(q.formats) f) s)::integer AS min_players_per_match,
       c.players_missing,
       c.latest_round_at,
       c.seconds_to_latest_round,
       c.round_started_at,
       -- Attributes a match's players share (a party's members must agree on them), and
       -- how many of a player's newest avoids the queue honours.
       q.same_attributes,
       q.max_avoids,
       -- The median wait, enqueue to match, of the players the recent rounds matched.
       round(c.median_wait_s)::integer AS recent_median_wait_s,
       -- The ready check: how long players have to accept a match (NULL: none).
       q.ready_timeout,
       q.decline_cooldown
  FROM queues q
  LEFT JOIN queue_countdown c ON c.queue = q.queue
 WHERE q.active;

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

-- The caller's avoids that hold now, newest first by created_at: the players each of its
-- players avoids, and until when (NULL: until unavoid). A queue honours a player's newest
-- queue_catalog.max_avoids.
CREATE VIEW avoid_list WITH (security_barrier) AS
SELECT a.player_id,
       a.avoided_player_id,
       a.created_at,
       a.expires_at
  FROM avoids a
 WHERE (a.owner = session_user OR (SELECT matchmaker_sees_all()))
   AND (a.expires_at IS NULL OR a.expires_at > now());

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

-- Who leads what, per replica (`matchmaker status` reads the same): live replicas,
-- expired rows not yet removed, and holders of live leases that never registered.
CREATE VIEW replica_leadership AS
SELECT coalesce(r.replica, l.holder) AS replica,
       coalesce(r.expires_at > now(), false) AS live,
       r.started_at,
       r.heartbeat_at,
       r.expires_at,
       coalesce(r.queues, '{}') AS serves,
       coalesce(l.queues, '{}') AS leads,
       r.version
  FROM replicas r
  FULL JOIN (SELECT holder, array_agg(queue ORDER BY queue) AS queues
               FROM leases
              WHERE expires_at > now()
              GROUP BY holder) l
    ON l.holder = r.replica;
COMMENT ON VIEW replica_leadership IS
    'Per replica: live or not, last heartbeat, the queues it lists (serves) and the '
    'queues whose live lease it holds (leads).';


-- =========================================================================================
-- 6. Notifications
-- =========================================================================================
-- NOTIFY only wakes listeners earlier; the daemon and clients also poll, so a lost
-- notification delays, never loses. Notifications are sent at COMMIT, so a listener never
-- sees a row that is not there yet. Every one goes through matchmaker_notify(), which
-- sends nothing while PostgreSQL's notification queue is past its limit (below): a full
-- queue fails every transaction that notifies, and enqueues and round commits must not
-- depend on it.
--
--   matchmaker_enqueue   payload: the queue. An enqueue (or a backfill request) wakes the
--                        queue's leader.
--   matchmaker_round     payload: {"queue", "round_id", "match_count", "matched"}. A round
--                        committed: wakes clients or a gateway waiting for assignments.
--   queue_channel(queue) per login and queue: the calling login's own channel, so that a
--                        game backend holding one LISTEN connection tells each of its
--                        players at once, instead of polling player_status. It carries
--                        only what concerns the login's players (and a game server's
--                        backfill requests): another login can neither work out its name
--                        nor read or send on it (channel_key).
--     match      one per committed match holding a player of the login, sent by the
--                round's commit inside its transaction (the whole roster, as
--                match_details shows it):
--                {"event":"match","queue":"q","round_id":7,"match_id":42,"part":1,"parts":1,
--                 "players":[{"player_id":"alice","team":0,"party_id":"crew","role":"tank"},..]}
--                "relay":true follows match_id when nobody in the match can host it (the
--                game backend routes it through its relay; absent otherwise).
--                party_id and role appear only when the player has one. Teams count from
--                0, as in player_status. event "backfill" (same layout, the whole roster)
--                is for players added to a match that already exists, sent to the
--                players' logins and to the login that asked for the backfill.
--     ready_check  a match of a queue with a ready check, pending: the "match" layout
--                plus "answer_by" (the time to accept_match by). Then, once:
--     ready      every player accepted (the "match" layout): the match is final;
--     cancelled  {"event":"cancelled","queue":"q","match_id":42,"reason":"...",
--                 "requeued":["alice",..],"declined":["bob",..]}: the login's players of
--                the match, queued again with their original enqueue time, or declined
--                ("players_omitted":true instead of both lists when they do not fit;
--                read player_status).
--     countdown  one per change of a queue's next round time or of what it waits for (a
--                round, a reload, the pool reaching min_pool, the max-wait fallback), sent
--                by whoever writes queue_state, in its transaction, to every login with
--                a player queued in the queue (a login with none reads queue_countdown):
--                {"event":"countdown","queue":"q","next_round_at":"2026-01-01T12:00:00.000000Z",
--                 "seconds_to_next_round":12,"waiting_for":"schedule","cause":"round",
--                 "players_missing":0,"latest_round_at":"2026-01-01T12:00:00.000000Z",
--                 "seconds_to_latest_round":12,"round_started_at":null,
--                 "round_id":7,"trigger":"pool_size"}
--                The fields mean what they mean in queue_countdown: seconds_to_next_round
--                is 0 once the tick has passed and the round waits for players_missing
--                more; next_round_at / seconds_to_next_round are null while a round runs
--                (waiting_for "round", since round_started_at); latest_round_at /
--                seconds_to_latest_round are null when unknown. cause: round (round_id,
--                trigger: what started it, e.g. pool_size for an early start), round_start
--                (a round started), config (a reload), pool (players arrived or left),
--                start (the queue's first countdown).
--
-- Size: PostgreSQL refuses a payload of 8000 bytes or more (with the default 8 kB block
-- size). A match whose payload would not fit is sent as several notifications, "part" 1
-- to "parts", each with the same header and some of the players; each part is complete
-- for the players it names (their match and team). The largest match the core allows (16
-- players) with the longest ids (64 four-byte characters) fits in two parts. If even one
-- player does not fit beside the header (a queue name of thousands of characters), the
-- match is sent as {"event":"match","round_id":..,"match_id":..,"part":1,"parts":1,
-- "players_omitted":true}: read match_details for that match.
--
-- Privileges: LISTEN and NOTIFY take none: any login may listen or send on any channel
-- whose name it knows. A login's queue channels are named by a hash of a secret key
-- (channel_key), the login and the queue, so no other login knows them; the shared
-- channels (matchmaker_enqueue, matchmaker_round) carry no player. A payload is still a
-- fast hint that names only ids: a backend confirms a match in match_details before
-- acting on it.
--
-- The queue's limit: PostgreSQL's notification queue (8 GB) holds every notification
-- until each listening session has read it, so one session that listens and then stays
-- inside a transaction keeps it growing; full, it fails every COMMIT of a transaction
-- that notifies. matchmaker_notify() sends nothing once the queue is past
-- matchmaker.notify_queue_limit (a fraction, default 0.5; set it per database or role)
-- and the daemon reports the queue's usage (docs/operations.md, "Notifications").

-- ---- Sending ----------------------------------------------------------------------------
-- The limit as set, or 0.5 when unset or not a fraction: a bad setting must not fail
-- every notifying transaction.
CREATE FUNCTION matchmaker_notify_queue_limit() RETURNS double precision
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN v ~ '^\s*(0(\.[0-9]*)?|1(\.0*)?|\.[0-9]+)\s*$' THEN v::double precision
                ELSE 0.5 END
      FROM coalesce(current_setting('matchmaker.notify_queue_limit', true), '') AS v
$$;
COMMENT ON FUNCTION matchmaker_notify_queue_limit() IS
    'The notification queue usage past which matchmaker_notify() sends nothing '
    '(matchmaker.notify_queue_limit, default 0.5)';

-- Whether the notification queue is below its limit: notifications may be sent.
CREATE FUNCTION matchmaker_notify_open() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT pg_notification_queue_usage() < matchmaker_notify_queue_limit()
$$;
COMMENT ON FUNCTION matchmaker_notify_open() IS
    'Whether PostgreSQL''s notification queue is below matchmaker.notify_queue_limit';

-- pg_notify(channel, payload), unless the notification queue is past its limit; returns
-- whether it sent. Past the limit listeners get nothing and poll, as for any lost
-- notification, while enqueues and rounds commit.
CREATE FUNCTION matchmaker_notify(channel text, payload text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT matchmaker_notify_open() THEN
        RETURN false;
    END IF;
    PERFORM pg_notify(channel, payload);
    RETURN true;
END
$$;
COMMENT ON FUNCTION matchmaker_notify(text, text) IS
    'pg_notify() unless the notification queue is past matchmaker.notify_queue_limit';

-- A login's channel for a queue: 'matchmaker:' and 40 hex digits of the SHA-256 of the
-- key, the login (with its length, so that no two pairs of login and queue read alike)
-- and the queue. 51 bytes: within a channel name's 63.
CREATE FUNCTION matchmaker_login_channel(login text, queue text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT 'matchmaker:' || left(encode(sha256(convert_to(
               format('%s:%s:%s:%s', k.key, length(login), login, queue), 'UTF8')), 'hex'), 40)
      FROM channel_key k
$$;
COMMENT ON FUNCTION matchmaker_login_channel(text, text) IS
    'The notification channel of a login''s players in a queue (the daemon''s; clients '
    'call queue_channel)';

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

-- ---- A login's channel of a queue -----------------------------------------------------
-- A client calls queue_channel() and LISTENs on the answer, in double quotes:
-- LISTEN "matchmaker:3f2a...". The name is the calling login's own
-- (matchmaker_login_channel): each login asks for it, nobody builds it.
CREATE FUNCTION queue_channel(queue text) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF queue IS NULL OR queue = '' THEN
        PERFORM matchmaker_refuse('queue', quote_nullable(queue), 'is required (a queue''s name)');
    END IF;
    RETURN matchmaker_login_channel(session_user, queue);
END
$$;
COMMENT ON FUNCTION queue_channel(text) IS
    'The calling login''s NOTIFY channel for a queue''s match and countdown notifications '
    '(LISTEN "<it>")';

-- ---- Match notifications ----------------------------------------------------------------
-- Not a trigger: the round's commit writes a round's matches in one statement, isolates a
-- failing row by savepoints, and knows which matches stand; a backfill names the matches
-- it extended. The commit calls matchmaker_notify_matches() after its matches are
-- written, so the notifications leave at COMMIT or never.

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

-- ---- Countdown notifications ------------------------------------------------------------
CREATE FUNCTION matchmaker_notify_countdown() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    cause text;
    round_trigger text;
    payload text;
BEGIN
    cause := CASE
        WHEN TG_OP = 'INSERT' THEN 'start'
        WHEN NEW.last_round_id IS DISTINCT FROM OLD.last_round_id THEN 'round'
        WHEN NEW.config_hash IS DISTINCT FROM OLD.config_hash THEN 'config'
        WHEN NEW.waiting_for = 'round' THEN 'round_start'
        ELSE 'pool' END;
    IF NEW.last_round_id IS NOT NULL AND cause IN ('start', 'round') THEN
        SELECT r.trigger INTO round_trigger FROM rounds r WHERE r.round_id = NEW.last_round_id;
    END IF;
    payload := format(
        '{"event":"countdown","queue":%s,"next_round_at":%s,"seconds_to_next_round":%s,'
        '"waiting_for":%s,"cause":%s,"players_missing":%s,"latest_round_at":%s,'
        '"seconds_to_latest_round":%s,"round_started_at":%s%s}',
        to_json(NEW.queue),
        coalesce(to_json(to_char(NEW.next_round_at AT TIME ZONE 'UTC',
                                 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text, 'null'),
        -- (greatest() skips a NULL: without the CASE a running round would read 0
        -- seconds.)
        CASE WHEN NEW.next_round_at IS NULL THEN 'null'
             ELSE ceil(greatest(0, extract(epoch FROM NEW.next_round_at - now())))::text END,
        to_json(NEW.waiting_for), to_json(cause), NEW.players_missing,
        coalesce(to_json(to_char(NEW.latest_round_at AT TIME ZONE 'UTC',
                                 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text, 'null'),
        CASE WHEN NEW.latest_round_at IS NULL THEN 'null'
             ELSE ceil(greatest(0, extract(epoch FROM NEW.latest_round_at - now())))::text END,
        coalesce(to_json(to_char(NEW.round_started_at AT TIME ZONE 'UTC',
                                 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text, 'null'),
        CASE WHEN cause = 'round'
             THEN format(',"round_id":%s,"trigger":%s', NEW.last_round_id,
                         coalesce(to_json(round_trigger)::text, 'null')) END);
    -- The logins with a player queued here: a skip scan of queue_entries_queued_owner,
    -- one index descent per login however many players each has queued.
    PERFORM matchmaker_notify(matchmaker_login_channel(l.owner, NEW.queue), payload)
       FROM (WITH RECURSIVE logins(owner) AS (
                 (SELECT e.owner FROM queue_entries e
                   WHERE e.queue = NEW.queue AND e.status = 'queued'
                   ORDER BY e.owner LIMIT 1)
                 UNION ALL
                 SELECT (SELECT e.owner FROM queue_entries e
                          WHERE e.queue = NEW.queue AND e.status = 'queued'
                            AND e.owner > l.owner
                          ORDER BY e.owner LIMIT 1)
                   FROM logins l
                  WHERE l.owner IS NOT NULL)
             SELECT owner FROM logins WHERE owner IS NOT NULL) l;
    RETURN NULL;
END
$$;

-- The leader rewrites its queue_state row whenever the pool size changes; only a change
-- of the countdown itself is worth a notification.
CREATE TRIGGER queue_state_notify_countdown_insert
    AFTER INSERT ON queue_state
    FOR EACH ROW EXECUTE FUNCTION matchmaker_notify_countdown();
CREATE TRIGGER queue_state_notify_countdown_update
    AFTER UPDATE ON queue_state
    FOR EACH ROW
    WHEN (OLD.next_round_at IS DISTINCT FROM NEW.next_round_at
          OR OLD.waiting_for IS DISTINCT FROM NEW.waiting_for
          OR OLD.players_missing IS DISTINCT FROM NEW.players_missing
          OR OLD.latest_round_at IS DISTINCT FROM NEW.latest_round_at
          OR OLD.round_started_at IS DISTINCT FROM NEW.round_started_at)
    EXECUTE FUNCTION matchmaker_notify_countdown();


-- =========================================================================================
-- 7. Roles and privileges
-- =========================================================================================

-- Roles belong to the cluster, not the database: a second database on the same server (or
-- a concurrent migration of one) finds them there already. Studios make their login roles
-- members: CREATE ROLE game_backend LOGIN PASSWORD '...' IN ROLE matchmaker_client;
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['matchmaker_client', 'matchmaker_daemon', 'matchmaker_ops',
                             'matchmaker_server'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION
                -- Another database's migration created it in the meantime.
                WHEN duplicate_object OR unique_violation THEN NULL;
                WHEN insufficient_privilege THEN
                    RAISE EXCEPTION 'the migration must create role %, and the migrating role may not', r
                        USING HINT = 'run `matchmaker migrate` as a role with CREATEROLE once, '
                                     'or create the roles matchmaker_client, matchmaker_daemon, '
                                     'matchmaker_ops and matchmaker_server (NOLOGIN) beforehand';
            END;
        END IF;
    END LOOP;
END
$$;

-- COMMENT ON ROLE needs CREATEROLE too: a migrating role without it, running after the
-- roles were created beforehand, leaves their comments to whoever created them.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT * FROM (VALUES
        ('matchmaker_client',
         'game clients and backends: EXECUTE on the client functions, SELECT on the client views'),
        ('matchmaker_daemon', 'matchmaker run: reads and writes the matchmaker tables'),
        ('matchmaker_ops', 'operators: read everything, write nothing'),
        ('matchmaker_server',
         'game servers: request and cancel backfill for their sessions, read backfill_status'))
        AS t(role, text)
    LOOP
        BEGIN
            EXECUTE format('COMMENT ON ROLE %I IS %L', c.role, c.text);
        EXCEPTION WHEN insufficient_privilege THEN NULL;
        END;
    END LOOP;
END
$$;

-- ---- Nothing for PUBLIC -----------------------------------------------------------------
-- Functions are executable by PUBLIC by default, and PostgreSQL before 15 lets PUBLIC
-- create objects in schema public (which a SECURITY DEFINER function's search_path would
-- then see). PostgreSQL 15 and later already revoke CREATE by default.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE ALL ON queues, queue_entries, rounds, matches, match_players, recent_matches,
              round_snapshots, queue_state, leases, replicas, backfill_requests, call_buckets,
              queue_countdown, player_status, match_details, queue_catalog, backfill_status,
              round_summaries, player_rounds, replica_leadership, avoids, avoid_list,
              channel_key
    FROM PUBLIC;
REVOKE ALL ON FUNCTION
    matchmaker_sees_all(),
    matchmaker_refuse(text, text, text),
    matchmaker_check_id(text, text),
    matchmaker_check_ms_map(text, jsonb, integer, text[]),
    matchmaker_check_attributes(text, jsonb),
    matchmaker_check_member(queues, text, double precision, double precision, jsonb, jsonb,
                            text[], double precision),
    matchmaker_check_member_json(queues, jsonb, text[]),
    matchmaker_canonical_ms_map(jsonb),
    matchmaker_canonical_member(jsonb),
    matchmaker_member_ok(queues, text, double precision, double precision, jsonb, jsonb,
                         text[], double precision),
    matchmaker_active_queue(text),
    matchmaker_check_quota(queues, integer),
    matchmaker_check_ready_gate(queues, text, text),
    matchmaker_answer_match(text, bigint, text),
    matchmaker_estimate_wait(jsonb, double precision, jsonb, integer),
    enqueue(text, text, double precision, jsonb, jsonb, text[], double precision,
            double precision, jsonb),
    enqueue_party(text, text, jsonb),
    cancel(text, text),
    accept_match(text, bigint),
    decline_match(text, bigint),
    keep_alive(text[], text),
    request_backfill(text, text, jsonb, integer[], interval),
    cancel_backfill(bigint),
    avoid(text, text, interval),
    unavoid(text, text),
    matchmaker_notify_queue_limit(),
    matchmaker_notify_open(),
    matchmaker_notify(text, text),
    matchmaker_login_channel(text, text),
    matchmaker_notify_enqueue(),
    matchmaker_notify_round(),
    queue_channel(text),
    matchmaker_notify_matches_in_parts(bigint[], text),
    matchmaker_notify_matches(bigint[], text),
    matchmaker_notify_countdown()
    FROM PUBLIC;

GRANT USAGE ON SCHEMA public
    TO matchmaker_client, matchmaker_daemon, matchmaker_ops, matchmaker_server;

-- Functions in a view run with the privileges of the view's reader.
GRANT EXECUTE ON FUNCTION matchmaker_sees_all(), queue_channel(text)
    TO matchmaker_client, matchmaker_daemon, matchmaker_ops, matchmaker_server;
GRANT EXECUTE ON FUNCTION matchmaker_estimate_wait(jsonb, double precision, jsonb, integer)
    TO matchmaker_client, matchmaker_daemon, matchmaker_ops;

-- ---- matchmaker_client: the client API and the client views, no table -------------------
GRANT EXECUTE ON FUNCTION
    enqueue(text, text, double precision, jsonb, jsonb, text[], double precision,
            double precision, jsonb),
    enqueue_party(text, text, jsonb),
    cancel(text, text),
    accept_match(text, bigint),
    decline_match(text, bigint),
    keep_alive(text[], text),
    avoid(text, text, interval),
    unavoid(text, text)
    TO matchmaker_client;
GRANT SELECT ON player_status, match_details, queue_countdown, queue_catalog, avoid_list
    TO matchmaker_client;

-- ---- matchmaker_server: backfill for the sessions a game server runs --------------------
GRANT EXECUTE ON FUNCTION
    request_backfill(text, text, jsonb, integer[], interval),
    cancel_backfill(bigint)
    TO matchmaker_server;
GRANT SELECT ON backfill_status, queue_catalog TO matchmaker_server;

-- ---- Large objects: closed to clients and servers ---------------------------------------
-- Any role may create large objects by default (lo_create, lo_import, lo_from_bytea...),
-- and nothing bounds their size: a client login could fill the disk. The matchmaker uses
-- none. Revoked from PUBLIC, through which alone the client and server roles hold them.
-- The functions belong to the bootstrap superuser: a migrating role that is not a
-- superuser cannot revoke them, and the deploy step does (docs/operations.md, "Bounding
-- client logins").
DO $$
DECLARE
    f regprocedure;
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE NOTICE 'large objects stay open to PUBLIC: only a superuser may revoke them '
                     '(docs/operations.md, "Bounding client logins")';
        RETURN;
    END IF;
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = 'pg_catalog'::regnamespace
                AND (p.proname LIKE 'lo\_%' OR p.proname IN ('loread', 'lowrite'))
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
END
$$;

-- ---- matchmaker_daemon: writes the tables -----------------------------------------------
-- DELETE where retention prunes (tables that reference rounds ON DELETE CASCADE are
-- cleaned by the cascade, which runs with the privileges of the table's owner), and on
-- replicas (a replica deletes its own row at shutdown, and rows long expired).
GRANT SELECT, INSERT, UPDATE, DELETE ON queue_entries, rounds, matches, match_players,
                                        replicas, backfill_requests, call_buckets
    TO matchmaker_daemon;
GRANT SELECT, INSERT, UPDATE ON queue_state, leases, queues, recent_matches
    TO matchmaker_daemon;
GRANT SELECT, INSERT ON round_snapshots TO matchmaker_daemon;
-- avoids: the snapshot reads them, retention deletes the expired ones.
GRANT SELECT, INSERT, UPDATE, DELETE ON avoids TO matchmaker_daemon;
GRANT SELECT ON player_status, match_details, queue_countdown, queue_catalog,
                backfill_status, round_summaries, player_rounds, replica_leadership,
                avoid_list
    TO matchmaker_daemon;
GRANT USAGE, SELECT ON SEQUENCE queue_entries_entry_id_seq, rounds_round_id_seq,
                              matches_match_id_seq
    TO matchmaker_daemon;
-- The triggers on queue_entries, rounds and queue_state run as their writer: the daemon,
-- or a client function's owner. channel_key stays the owner's: the daemon names a login's
-- channel through matchmaker_login_channel.
GRANT EXECUTE ON FUNCTION matchmaker_notify_matches(bigint[], text),
                          matchmaker_notify_matches_in_parts(bigint[], text),
                          matchmaker_notify(text, text),
                          matchmaker_notify_open(),
                          matchmaker_notify_queue_limit(),
                          matchmaker_login_channel(text, text)
    TO matchmaker_daemon;
GRANT EXECUTE ON FUNCTION matchmaker_notify_queue_limit() TO matchmaker_ops;

-- ---- matchmaker_ops: reads everything ---------------------------------------------------
GRANT SELECT ON queues, queue_entries, rounds, matches, match_players, recent_matches,
                round_snapshots, queue_state, leases, replicas, backfill_requests, call_buckets,
                queue_countdown, player_status, match_details, queue_catalog,
                backfill_status, round_summaries, player_rounds, replica_leadership,
                avoids, avoid_list
    TO matchmaker_ops;

-- `matchmaker run --no-migrate` and the read-only commands check the schema version
-- before they start. (sqlx's table: present whenever the migrations run through
-- `matchmaker migrate`.)
DO $$
BEGIN
    IF to_regclass('_sqlx_migrations') IS NOT NULL THEN
        GRANT SELECT ON _sqlx_migrations TO matchmaker_daemon, matchmaker_ops;
    END IF;
END
$$;
