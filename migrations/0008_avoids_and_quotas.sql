-- Avoids and quotas. Avoids: players a player does not want to meet, kept apart by every
-- queue's rounds. Quotas: what one client login may use, so that no login's made-up
-- players can crowd a queue or grow a table without bound: its queued entries and open
-- backfill requests per queue ([queues.NAME.limits], columns of queues in 0003), its
-- enqueue rate per connection (call_buckets) and its avoids.


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

-- ---- Indexes of avoids ------------------------------------------------------------------
-- A player's avoids newest first (avoid() keeps the newest; the snapshot reads them so).
CREATE INDEX avoids_newest_first ON avoids (owner, player_id, created_at DESC);

-- Retention deletes expired avoids.
CREATE INDEX avoids_expiry ON avoids (expires_at) WHERE expires_at IS NOT NULL;

-- avoid() counts a login's unexpired avoids (limits.max_avoids_per_login): an index-only
-- scan of the login's range, no heap visit per avoid.
CREATE INDEX avoids_per_login ON avoids (owner, expires_at);

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


-- =========================================================================================
-- Quotas
-- =========================================================================================

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

-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON avoids, avoid_list, call_buckets FROM PUBLIC;
REVOKE ALL ON FUNCTION
    matchmaker_check_quota(queues, integer),
    avoid(text, text, interval),
    unavoid(text, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    avoid(text, text, interval),
    unavoid(text, text)
    TO matchmaker_client;
GRANT SELECT ON avoid_list TO matchmaker_client;
-- avoids: the snapshot reads them, retention deletes the expired ones.
GRANT SELECT, INSERT, UPDATE, DELETE ON avoids TO matchmaker_daemon;
GRANT SELECT, INSERT, UPDATE, DELETE ON call_buckets TO matchmaker_daemon;
GRANT SELECT ON avoid_list TO matchmaker_daemon;
GRANT SELECT ON avoids, avoid_list, call_buckets TO matchmaker_ops;
