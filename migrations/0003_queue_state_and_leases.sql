-- What the countdown is made of, and who runs each queue's rounds.

-- Written by the leader of each queue at start-up, after each round and after a config
-- change. The live pool size is counted by the queue_countdown view, not stored here, so
-- enqueues never write (or lock) this row.
CREATE TABLE queue_state (
    queue             text PRIMARY KEY,
    -- When the next round is due. NULL while the queue waits for enough players
    -- (waiting_for says which condition).
    next_round_at     timestamptz NULL,
    -- schedule: the next tick; min_pool: the tick passed but the pool is below min_pool
    --   (the round starts when it is reached, or when the oldest player hits max_wait);
    -- players: not even one match can be formed yet.
    waiting_for       text NOT NULL DEFAULT 'schedule'
        CONSTRAINT waiting_for_must_be_known
        CHECK (waiting_for IN ('schedule', 'min_pool', 'players')),
    schedule          text NOT NULL,
    -- Early start at this pool size (NULL: no early start).
    target_pool       integer NULL,
    min_pool          integer NOT NULL,
    players_per_match integer NOT NULL,
    max_wait          interval NOT NULL,
    last_round_id     bigint NULL REFERENCES rounds,
    last_round_at     timestamptz NULL,
    config_hash       text NOT NULL,
    updated_at        timestamptz NOT NULL
);

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
