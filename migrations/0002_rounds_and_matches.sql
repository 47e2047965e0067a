-- What each round did and why: enough to explain any past round and to replay it (the
-- effective queue config, its hash and the seed are stored with the round).

CREATE TABLE rounds (
    round_id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue             text NOT NULL,
    -- schedule: the interval / cron tick; pool_size: the pool reached the target size
    -- early; max_wait: someone waited the queue's maximum; manual: an operator asked.
    trigger           text NOT NULL
        CONSTRAINT trigger_must_be_known
        CHECK (trigger IN ('schedule', 'pool_size', 'max_wait', 'manual')),
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
    config            jsonb NOT NULL
);
COMMENT ON TABLE rounds IS
    'One row per committed round; config + seed + the pool (match_players and the entries '
    'with this round_id) are enough to replay it.';

CREATE INDEX rounds_by_queue_latest ON rounds (queue, round_id DESC);

CREATE TABLE matches (
    match_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    round_id   bigint NOT NULL REFERENCES rounds,
    queue      text NOT NULL,
    created_at timestamptz NOT NULL,
    -- Weighted match score in [0, 1] and the score of each factor, by factor name.
    score      double precision NOT NULL,
    factors    jsonb NOT NULL DEFAULT '{}',
    -- Dedicated-server queues: the server region. Peer-to-peer: players who can host.
    region     text NULL,
    hosts      text[] NOT NULL DEFAULT '{}'
);
CREATE INDEX matches_by_round ON matches (round_id);

CREATE TABLE match_players (
    match_id     bigint NOT NULL REFERENCES matches,
    -- UNIQUE: an entry goes to at most one match, whatever goes wrong above.
    entry_id     bigint NOT NULL UNIQUE REFERENCES queue_entries,
    queue        text NOT NULL,
    player_id    text NOT NULL,
    party_id     text NULL,
    team         integer NOT NULL,
    role         text NULL,
    skill        double precision NOT NULL,
    enqueued_at  timestamptz NOT NULL,
    matched_at   timestamptz NOT NULL,
    PRIMARY KEY (match_id, player_id)
);
-- "A player's recent matches": ops queries, and the opponent-variation history every
-- snapshot reads for the players in its pool.
CREATE INDEX match_players_recent ON match_players (queue, player_id, matched_at DESC);

ALTER TABLE queue_entries
    ADD CONSTRAINT queue_entries_round_fk FOREIGN KEY (round_id) REFERENCES rounds,
    ADD CONSTRAINT queue_entries_match_fk FOREIGN KEY (match_id) REFERENCES matches;
