-- The enqueue contract: game clients (or the game's backend) INSERT one row per player
-- per enqueue; the daemon never deletes rows, it only moves them out of 'queued'.
--
-- Constraints catch bad data at INSERT time, where the client still can react, and carry
-- names that read as the rule that was broken (PostgreSQL puts the name in the error).

-- A latency map is a JSON object {"name": milliseconds, ...} with non-empty names and
-- finite, non-negative numbers. A CHECK constraint may only call IMMUTABLE functions, and
-- a subquery over jsonb_each needs a function around it.
CREATE FUNCTION matchmaker_is_latency_map(m jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT jsonb_typeof(m) = 'object'
       AND NOT EXISTS (
            SELECT 1
              FROM jsonb_each(m) AS e(name, ms)
             -- CASE: only cast values already known to be numbers (a cast of a string
             -- would raise instead of failing the check). JSON has no NaN / Infinity.
             WHERE CASE WHEN e.name = '' OR jsonb_typeof(e.ms) <> 'number' THEN true
                        ELSE e.ms::numeric < 0 END)
$$;
COMMENT ON FUNCTION matchmaker_is_latency_map(jsonb) IS
    'true when the value is a JSON object of non-empty names to non-negative numbers of ms';

CREATE TABLE queue_entries (
    entry_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,

    -- Written by clients.
    queue         text NOT NULL,
    player_id     text NOT NULL,
    party_id      text NULL,
    skill         double precision NOT NULL,
    skill_sigma   double precision NULL,
    latencies     jsonb NOT NULL DEFAULT '{}',
    peer_pings    jsonb NOT NULL DEFAULT '{}',
    roles         text[] NOT NULL DEFAULT '{}',
    side          double precision NULL,
    enqueued_at   timestamptz NOT NULL DEFAULT now(),

    -- Written by the daemon (and by a client that cancels: status only).
    status        text NOT NULL DEFAULT 'queued',
    reject_reason text NULL,
    round_id      bigint NULL,
    match_id      bigint NULL,
    team          integer NULL,
    role          text NULL,
    updated_at    timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT queue_must_not_be_empty CHECK (queue <> ''),
    CONSTRAINT player_id_must_not_be_empty CHECK (player_id <> ''),
    CONSTRAINT party_id_must_not_be_empty CHECK (party_id <> ''),
    -- PostgreSQL orders NaN above Infinity, so these bounds also refuse NaN.
    CONSTRAINT skill_must_be_finite CHECK (skill > '-Infinity' AND skill < 'Infinity'),
    CONSTRAINT skill_sigma_must_be_finite_and_non_negative
        CHECK (skill_sigma >= 0 AND skill_sigma < 'Infinity'),
    CONSTRAINT side_must_be_between_0_and_1 CHECK (side >= 0 AND side <= 1),
    CONSTRAINT latencies_must_map_regions_to_non_negative_ms
        CHECK (matchmaker_is_latency_map(latencies)),
    CONSTRAINT peer_pings_must_map_players_to_non_negative_ms
        CHECK (matchmaker_is_latency_map(peer_pings)),
    CONSTRAINT roles_must_not_contain_empty_or_null
        CHECK ('' <> ALL (roles) AND array_position(roles, NULL) IS NULL),
    CONSTRAINT status_must_be_known
        CHECK (status IN ('queued', 'matched', 'cancelled', 'rejected')),
    -- The daemon's own invariants: a matched row says where it went, a rejected row why.
    CONSTRAINT matched_entry_has_match CHECK (status <> 'matched' OR match_id IS NOT NULL),
    CONSTRAINT rejected_entry_has_reason
        CHECK (status <> 'rejected' OR reject_reason IS NOT NULL)
);

COMMENT ON TABLE queue_entries IS
    'One row per player per enqueue. Clients INSERT (queue, player_id, skill, ...) and cancel '
    'with UPDATE ... SET status = ''cancelled'' WHERE ... AND status = ''queued''; the daemon '
    'moves rows to matched / rejected. Rows are never deleted by the matchmaker.';
COMMENT ON COLUMN queue_entries.latencies IS 'round-trip ms to each region / datacenter';
COMMENT ON COLUMN queue_entries.peer_pings IS 'measured round-trip ms to other players by id';
COMMENT ON COLUMN queue_entries.side IS 'side preference: 0 first team, 1 second team';

-- A player waits at most once per queue; enqueueing again while queued is refused
-- (duplicate key on this index). Past rows (matched, cancelled, ...) do not count.
CREATE UNIQUE INDEX queue_entries_one_queued_row_per_player
    ON queue_entries (queue, player_id) WHERE status = 'queued';

-- The snapshot reads a queue's queued rows oldest first; small because only queued rows
-- are in it, however long the history grows.
CREATE INDEX queue_entries_queued_oldest_first
    ON queue_entries (queue, enqueued_at, entry_id) WHERE status = 'queued';

-- A client's status lookup: the latest entry of a player.
CREATE INDEX queue_entries_player_latest ON queue_entries (player_id, entry_id DESC);
