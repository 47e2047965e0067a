-- The countdown: when each queue's next round runs, and what a waiting player reads. The
-- queue's leader (0004) writes queue_state at every look at the queue; clients read it
-- through queue_countdown, queue_catalog (the queues they may enqueue into) and
-- player_status (their tickets: the countdown while queued, the match once matched, the
-- reason otherwise), and hear of every change on their queue channel (0002).


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


-- =========================================================================================
-- Views
-- =========================================================================================

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

-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON queue_state, queue_countdown, player_status, queue_catalog FROM PUBLIC;
REVOKE ALL ON FUNCTION
    matchmaker_estimate_wait(jsonb, double precision, jsonb, integer),
    matchmaker_notify_countdown()
    FROM PUBLIC;
-- Functions in a view run with the privileges of the view's reader.
GRANT EXECUTE ON FUNCTION matchmaker_estimate_wait(jsonb, double precision, jsonb, integer)
    TO matchmaker_client, matchmaker_daemon, matchmaker_ops;
GRANT SELECT ON player_status, queue_countdown, queue_catalog TO matchmaker_client;
GRANT SELECT ON queue_catalog TO matchmaker_server;
GRANT SELECT, INSERT, UPDATE ON queue_state TO matchmaker_daemon;
GRANT SELECT ON player_status, queue_countdown, queue_catalog TO matchmaker_daemon;
GRANT SELECT ON queue_state, queue_countdown, player_status, queue_catalog
    TO matchmaker_ops;
