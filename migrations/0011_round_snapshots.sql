-- 0011: what each round's solver saw, so that any past round can be re-solved
-- (`matchmaker replay`), re-solved with other settings (what-if), and every pooled player
-- who was not matched can be told why (`matchmaker explain`, the player_rounds view).
--
-- Before this, left-over players were re-linked to the next round and the pool the solver
-- saw was lost; rounds.config is JSON the program cannot read back as a config.

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

-- `explain PLAYER`: the rounds that left a player over (`left_over ? 'alice'`).
CREATE INDEX round_snapshots_left_over ON round_snapshots USING gin (left_over);

-- Rounds of a time range (`replay --from --to`) go through rounds.committed_at; rounds by
-- queue through rounds_by_queue_latest.

COMMENT ON TABLE round_snapshots IS
    'What each round''s solver saw (pool, history, config, budget; seed in rounds) and why '
    'each pooled player who was not matched was left over. matchmaker replay re-solves it.';

-- A player's rounds, newest first: the queue and round, the pool's size, matched (match,
-- team) or left over / rejected, and why. For operators: it names every player of every
-- round, so it is not granted to clients (they read player_status).
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

GRANT SELECT, INSERT ON round_snapshots TO matchmaker_daemon;
GRANT SELECT ON round_snapshots, player_rounds TO matchmaker_ops, matchmaker_daemon;
