-- Results and ratings: what happened in a match, and the ratings it moves.
--
-- A game server (matchmaker_server) or a client login with players in a match reports
-- its result once with report_result(); a second login's report of the same match is
-- kept beside it, and a disagreement marks the result disputed for operators. On a queue
-- with [queues.NAME.rating] the queue's leader applies each result to the ratings of its
-- players before the next round of any queue that shares the rating pool, in one
-- transaction that marks the result applied: each result moves ratings exactly once. A
-- rated queue takes `skill => NULL` on enqueue: the player's stored rating is used (a new
-- player starts at the pool's initial rating), and each round reads the rating as it is
-- then. Every match player's row has the predicted chance of their team to win, from the
-- skills the round used.
--
-- The client API grows by:
--   report_result(match_id, team_ranks, left_early)  -> 'recorded', 'confirmed' or 'disputed'
--   player_ratings                                    this login's players' ratings


-- ---- rating_pools: the ratings' systems and scales --------------------------------------
-- Published by the leader of each rated queue, like its queues row: what the enqueue
-- trigger needs to start a new player and to grow an idle player's uncertainty. Queues
-- that share a pool share one rating per player.
CREATE TABLE rating_pools (
    pool                text PRIMARY KEY,
    system              text NOT NULL
        CONSTRAINT rating_system_must_be_known
        CHECK (system IN ('weng_lin', 'glicko2', 'trueskill')),
    initial_rating      double precision NOT NULL,
    initial_uncertainty double precision NOT NULL
        CONSTRAINT initial_uncertainty_must_be_positive CHECK (initial_uncertainty > 0),
    -- An idle player's uncertainty grows back to initial_uncertainty over this time (its
    -- square grows linearly with idle time).
    idle_to_initial     interval NOT NULL,
    -- The whole [queues.NAME.rating] table as the publishing queue's config has it.
    config              jsonb NOT NULL,
    published_by        text NOT NULL,
    published_at        timestamptz NOT NULL
);
COMMENT ON TABLE rating_pools IS
    'The rating pools of the rated queues ([queues.NAME.rating]): system and scale '
    '(written by the daemon)';

ALTER TABLE queues ADD COLUMN rating_pool text NULL;
COMMENT ON COLUMN queues.rating_pool IS
    'The rating pool of a rated queue ([queues.NAME.rating] pool); NULL: skill is the '
    'client''s to give';

-- ---- ratings: one per player and pool ---------------------------------------------------
-- Player ids are per login, as in queue_entries: (owner, player_id) names a player. The
-- key leads with the owner, so a login's own ratings are one index range.
CREATE TABLE ratings (
    owner          text NOT NULL,
    player_id      text NOT NULL,
    pool           text NOT NULL,
    rating         double precision NOT NULL,
    uncertainty    double precision NOT NULL,
    -- Glicko-2's volatility (the other systems keep its default).
    volatility     double precision NOT NULL DEFAULT 0.06,
    matches        integer NOT NULL DEFAULT 0,
    -- The last result applied: an idle player's uncertainty grows from then.
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (owner, player_id, pool),
    CONSTRAINT rating_must_be_finite
        CHECK (rating > '-Infinity' AND rating < 'Infinity'
               AND uncertainty >= 0 AND uncertainty < 'Infinity')
);
COMMENT ON TABLE ratings IS
    'The built-in rating of each player of a rated queue''s pool, moved by the results '
    'the daemon applies';

-- An entry enqueued with skill NULL in a rated queue: its skill is the player's rating,
-- read again by every round's snapshot (the rating may move while the player waits).
ALTER TABLE queue_entries ADD COLUMN rated boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN queue_entries.rated IS
    'skill and skill_sigma come from the player''s rating in the queue''s rating pool '
    '(enqueued with skill NULL); each round reads the rating as it is then';

-- The predicted chance of the player's team to win, from the skills and uncertainties the
-- round used (Weng-Lin's Bradley-Terry model). NULL for a backfill (its session's other
-- players are not in the round).
ALTER TABLE match_players ADD COLUMN win_probability double precision NULL;
COMMENT ON COLUMN match_players.win_probability IS
    'Predicted chance of the player''s team to win, from the skills at match time; NULL '
    'for a backfill';

-- ---- Results ----------------------------------------------------------------------------
-- The accepted result of a match: the first report. Kept with the match (retention
-- prunes it with the match).
CREATE TABLE match_results (
    match_id      bigint PRIMARY KEY REFERENCES matches ON DELETE CASCADE,
    queue         text NOT NULL,
    -- The rank of each team in ascending team order: 1 best, equal ranks a draw.
    team_ranks    integer[] NOT NULL,
    -- The players who left early, as reported (player ids), and their entries.
    left_early    text[] NOT NULL DEFAULT '{}',
    left_early_entries bigint[] NOT NULL DEFAULT '{}',
    reported_by   text NOT NULL,
    reported_at   timestamptz NOT NULL DEFAULT now(),
    -- A second login reported a different result (see result_reports).
    disputed      boolean NOT NULL DEFAULT false,
    -- The rated queue's pool when reported (NULL: an unrated queue), and when the daemon
    -- applied the result to its players' ratings (NULL: not yet).
    rating_pool   text NULL,
    applied_at    timestamptz NULL,
    -- Why the result moved no rating, if the rating model refused it (applied_at is set
    -- all the same: it is not tried again).
    rating_error  text NULL
);
COMMENT ON TABLE match_results IS
    'The result of each reported match (its first report); applied_at: when its ratings '
    'moved (rated queues)';
-- The daemon's work list: unapplied results of a pool, in report order.
CREATE INDEX match_results_to_apply ON match_results (rating_pool, reported_at, match_id)
    WHERE applied_at IS NULL AND rating_pool IS NOT NULL;
CREATE INDEX match_results_by_queue_time ON match_results (queue, reported_at);

-- Every report, one per login and match: the first is the result; a later one by another
-- login confirms it or disputes it.
CREATE TABLE result_reports (
    match_id    bigint NOT NULL REFERENCES matches ON DELETE CASCADE,
    reported_by text NOT NULL,
    team_ranks  integer[] NOT NULL,
    left_early  text[] NOT NULL,
    reported_at timestamptz NOT NULL DEFAULT now(),
    agrees      boolean NOT NULL,
    PRIMARY KEY (match_id, reported_by)
);
COMMENT ON TABLE result_reports IS
    'Each login''s report of a match''s result; agrees: the same as the accepted result';

-- What each applied result did to each of its players' ratings. The key makes a second
-- application of one result impossible, whatever happens above.
CREATE TABLE rating_changes (
    match_id           bigint NOT NULL REFERENCES matches ON DELETE CASCADE,
    entry_id           bigint NOT NULL,
    pool               text NOT NULL,
    owner              text NOT NULL,
    player_id          text NOT NULL,
    team               integer NOT NULL,
    left_early         boolean NOT NULL,
    rating_before      double precision NOT NULL,
    uncertainty_before double precision NOT NULL,
    rating_after       double precision NOT NULL,
    uncertainty_after  double precision NOT NULL,
    applied_at         timestamptz NOT NULL,
    PRIMARY KEY (match_id, entry_id)
);
COMMENT ON TABLE rating_changes IS
    'Per applied result and player: the rating before and after (one row per result and '
    'player, ever)';
CREATE INDEX rating_changes_by_player ON rating_changes (owner, player_id, match_id);

-- ---- report_result ----------------------------------------------------------------------
-- Report a match's result: team_ranks[k] is the rank of the k-th team in ascending team
-- order (1 best, equal ranks a draw; the best rank is 1 and none exceeds the number of
-- teams), left_early the player ids who abandoned it (a client login names its own
-- players; a server login any of the match's, by id, unambiguous). Returns 'recorded'
-- (the first report: the match's result), 'confirmed' (another login's report, the same)
-- or 'disputed' (another login's report, different: kept, and the result marked disputed
-- for operators; the first report stands).
-- Who may: a server login (matchmaker_server), any match; a client login, a match with
-- at least one of its players.
-- Refuses, writing nothing: a NULL match_id; a match the login may not report (unknown,
-- or without its players: the same words either way, so nothing leaks); a match still
-- waiting for its ready check or cancelled by it; a backfill (a fill is not a match of
-- its own); ranks that do not fit the match's teams; a left_early that names nobody of
-- the match (or another login's player, for a client); a second report by the same login.
CREATE FUNCTION report_result(match_id bigint, team_ranks integer[],
                              left_early text[] DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    server constant boolean := pg_has_role(session_user, 'matchmaker_server', 'USAGE');
    m matches;
    teams integer;
    leavers bigint[] := '{}';
    given text;
    hits bigint[];
    accepted match_results;
    agrees boolean;
BEGIN
    IF match_id IS NULL THEN
        PERFORM matchmaker_refuse('match_id', 'NULL', 'is required');
    END IF;
    SELECT x.* INTO m FROM matches x WHERE x.match_id = match_id;
    IF NOT FOUND
       OR (NOT server AND NOT EXISTS (
               SELECT 1 FROM match_players mp
                 JOIN queue_entries e ON e.entry_id = mp.entry_id
                WHERE mp.match_id = m.match_id AND e.owner = session_user)) THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            CASE WHEN server THEN 'no such match'
                 ELSE 'no match of this login''s players' END);
    END IF;
    IF m.status = 'pending' THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            'is waiting for its ready check: report its result once it is played');
    END IF;
    IF m.status = 'cancelled' THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            'was cancelled by its ready check: it was never played');
    END IF;
    IF m.session_id IS NOT NULL THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            format('is a backfill of session %s, not a match of its own', m.session_id));
    END IF;

    teams := (SELECT count(DISTINCT mp.team) FROM match_players mp
               WHERE mp.match_id = m.match_id);
    IF team_ranks IS NULL OR coalesce(array_ndims(team_ranks), 1) <> 1
       OR cardinality(team_ranks) <> teams
       OR array_position(team_ranks, NULL) IS NOT NULL THEN
        PERFORM matchmaker_refuse('team_ranks', coalesce(team_ranks::text, 'NULL'),
            format('match %s has %s teams: one rank per team, in ascending team order '
                   '(1 best, equal ranks a draw)', m.match_id, teams));
    END IF;
    IF (SELECT min(r) FROM unnest(team_ranks) r) <> 1
       OR (SELECT max(r) FROM unnest(team_ranks) r) > teams THEN
        PERFORM matchmaker_refuse('team_ranks', team_ranks::text,
            format('ranks are 1 (best) to %s, and some team is 1', teams));
    END IF;

    IF coalesce(array_ndims(left_early), 1) <> 1 THEN
        PERFORM matchmaker_refuse('left_early', left_early::text,
                                  'must be a one-dimensional array of player ids');
    END IF;
    FOREACH given IN ARRAY coalesce(left_early, '{}') LOOP
        PERFORM matchmaker_check_id('left_early', given);
        hits := ARRAY(SELECT mp.entry_id FROM match_players mp
                         JOIN queue_entries e ON e.entry_id = mp.entry_id
                        WHERE mp.match_id = m.match_id AND mp.player_id = given
                          AND (server OR e.owner = session_user));
        IF cardinality(hits) = 0 THEN
            PERFORM matchmaker_refuse('left_early', quote_literal(given),
                CASE WHEN server THEN format('is not a player of match %s', m.match_id)
                     ELSE format('is not a player of this login in match %s', m.match_id) END);
        ELSIF cardinality(hits) > 1 THEN
            PERFORM matchmaker_refuse('left_early', quote_literal(given),
                format('names %s players of match %s (of different logins)',
                       cardinality(hits), m.match_id));
        ELSIF hits[1] = ANY (leavers) THEN
            PERFORM matchmaker_refuse('left_early', quote_literal(given), 'is named twice');
        END IF;
        leavers := leavers || hits[1];
    END LOOP;

    -- The first report is the result; ON CONFLICT: a report racing this one waits for it,
    -- then compares.
    INSERT INTO match_results AS r (match_id, queue, team_ranks, left_early,
                                    left_early_entries, reported_by, rating_pool)
    SELECT m.match_id, m.queue, team_ranks, coalesce(left_early, '{}'), leavers,
           session_user, q.rating_pool
      FROM (SELECT 1) one LEFT JOIN queues q ON q.queue = m.queue
    ON CONFLICT ON CONSTRAINT match_results_pkey DO NOTHING
    RETURNING r.* INTO accepted;
    IF FOUND THEN
        INSERT INTO result_reports (match_id, reported_by, team_ranks, left_early, agrees)
        VALUES (m.match_id, session_user, team_ranks, coalesce(left_early, '{}'), true);
        RETURN 'recorded';
    END IF;

    SELECT r.* INTO accepted FROM match_results r WHERE r.match_id = m.match_id;
    agrees := accepted.team_ranks = team_ranks
              AND (SELECT coalesce(array_agg(x ORDER BY x), '{}') FROM unnest(leavers) x)
                = (SELECT coalesce(array_agg(x ORDER BY x), '{}')
                     FROM unnest(accepted.left_early_entries) x);
    INSERT INTO result_reports (match_id, reported_by, team_ranks, left_early, agrees)
    VALUES (m.match_id, session_user, team_ranks, coalesce(left_early, '{}'), agrees)
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        PERFORM matchmaker_refuse('match_id', match_id::text,
            format('this login already reported its result (at %s)',
                   (SELECT to_char(x.reported_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                      FROM result_reports x
                     WHERE x.match_id = m.match_id AND x.reported_by = session_user)));
    END IF;
    IF NOT agrees THEN
        UPDATE match_results r SET disputed = true WHERE r.match_id = m.match_id;
        RETURN 'disputed';
    END IF;
    RETURN 'confirmed';
END
$$;

-- ---- Rated enqueues ---------------------------------------------------------------------
-- The member rules of 0003, with one change: in a rated queue skill may be NULL (the
-- player's rating is used).
CREATE OR REPLACE FUNCTION matchmaker_check_member(q queues, player_id text, skill double precision,
                                        skill_sigma double precision, latencies jsonb,
                                        peer_pings jsonb, roles text[],
                                        side double precision) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    r text;
BEGIN
    PERFORM matchmaker_check_id('player_id', player_id);
    IF skill IS NULL AND q.rating_pool IS NULL THEN
        PERFORM matchmaker_refuse('skill', 'NULL',
            format('is required (queue %s has no built-in rating)', q.queue));
    END IF;
    -- NaN compares above Infinity in PostgreSQL: these bounds refuse it too.
    IF skill IS NOT NULL AND NOT (skill >= -1e6 AND skill <= 1e6) THEN
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

-- A player's rating in a pool as a round would use it now: the stored one with the
-- uncertainty grown by idle time, or the pool's initial rating for a new player.
CREATE FUNCTION matchmaker_current_rating(p rating_pools, owner text, player_id text,
                                          OUT rating double precision,
                                          OUT uncertainty double precision)
LANGUAGE sql STABLE AS $$
    SELECT coalesce(r.rating, p.initial_rating),
           coalesce(least(p.initial_uncertainty,
                          sqrt(r.uncertainty ^ 2 + p.initial_uncertainty ^ 2
                               * least(1, greatest(0, extract(epoch FROM now() - r.updated_at))
                                           / greatest(extract(epoch FROM p.idle_to_initial), 1)))),
                    p.initial_uncertainty)
      FROM (SELECT 1) one
      LEFT JOIN ratings r
        ON r.owner = matchmaker_current_rating.owner
       AND r.player_id = matchmaker_current_rating.player_id AND r.pool = p.pool
$$;

-- An entry enqueued with skill NULL into a rated queue takes the player's rating (the
-- member rules refused skill NULL anywhere else). Only such rows run it (WHEN).
CREATE FUNCTION matchmaker_rated_entry() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    p rating_pools;
    c record;
BEGIN
    SELECT rp.* INTO p FROM queues q JOIN rating_pools rp ON rp.pool = q.rating_pool
     WHERE q.queue = NEW.queue;
    IF FOUND THEN
        c := matchmaker_current_rating(p, NEW.owner, NEW.player_id);
        NEW.skill := c.rating;
        NEW.skill_sigma := c.uncertainty;
        NEW.rated := true;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER queue_entries_rated
    BEFORE INSERT ON queue_entries
    FOR EACH ROW WHEN (NEW.skill IS NULL)
    EXECUTE FUNCTION matchmaker_rated_entry();

-- ---- Views ------------------------------------------------------------------------------

-- This login's players' ratings (operators and the daemon: everyone's), through a
-- function that reads only the caller's rows: a plan over the view counts nothing of
-- another login's.
CREATE FUNCTION matchmaker_player_ratings()
RETURNS TABLE (pool text, player_id text, rating double precision,
               uncertainty double precision, matches integer, updated_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT r.pool, r.player_id, r.rating, r.uncertainty, r.matches, r.updated_at
      FROM ratings r
     WHERE r.owner = session_user
    UNION ALL
    SELECT r.pool, r.player_id, r.rating, r.uncertainty, r.matches, r.updated_at
      FROM ratings r
     WHERE matchmaker_sees_all() AND r.owner <> session_user
$$;

CREATE VIEW player_ratings AS
SELECT pool, player_id, rating, uncertainty, matches, updated_at
  FROM matchmaker_player_ratings();
COMMENT ON VIEW player_ratings IS
    'This login''s players'' built-in ratings, per pool: what a backend shows its players';

-- match_details of 0005, with each player's predicted chance to win and the match's
-- result once reported.
CREATE OR REPLACE VIEW match_details WITH (security_barrier) AS
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
       m.relay,
       mp.win_probability,
       res.team_ranks[(SELECT count(DISTINCT o.team) FROM match_players o
                        WHERE o.match_id = mp.match_id AND o.team <= mp.team)]
           AS team_rank,
       mp.entry_id = ANY (res.left_early_entries) AS left_early
  FROM match_players mp
  JOIN matches m ON m.match_id = mp.match_id
  LEFT JOIN match_results res ON res.match_id = mp.match_id
 WHERE (SELECT matchmaker_sees_all())
    OR EXISTS (SELECT 1 FROM match_players mine
                 JOIN queue_entries e ON e.entry_id = mine.entry_id
                WHERE mine.match_id = mp.match_id AND e.owner = session_user);

-- queue_catalog of 0006, with the rating pool of a rated queue.
CREATE OR REPLACE VIEW queue_catalog WITH (security_barrier) AS
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
       q.decline_cooldown,
       -- A rated queue's rating pool: enqueue may pass skill => NULL (NULL: an unrated
       -- queue).
       q.rating_pool
  FROM queues q
  LEFT JOIN queue_countdown c ON c.queue = q.queue
 WHERE q.active;

-- For operators: results that two logins reported differently, with every report.
CREATE VIEW result_disputes AS
SELECT r.match_id, r.queue, r.team_ranks AS accepted_ranks, r.reported_by AS accepted_from,
       x.reported_by, x.team_ranks, x.left_early, x.reported_at
  FROM match_results r
  JOIN result_reports x ON x.match_id = r.match_id AND NOT x.agrees
 WHERE r.disputed;

-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON rating_pools, ratings, match_results, result_reports, rating_changes,
              player_ratings, result_disputes
    FROM PUBLIC;
REVOKE ALL ON FUNCTION
    report_result(bigint, integer[], text[]),
    matchmaker_current_rating(rating_pools, text, text),
    matchmaker_rated_entry(),
    matchmaker_player_ratings()
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION report_result(bigint, integer[], text[])
    TO matchmaker_client, matchmaker_server;
-- A view's functions run with its reader's rights: the reader may call the function (it
-- returns the same rows the view does).
GRANT EXECUTE ON FUNCTION matchmaker_player_ratings()
    TO matchmaker_client, matchmaker_daemon, matchmaker_ops;
GRANT SELECT ON player_ratings TO matchmaker_client, matchmaker_daemon, matchmaker_ops;
GRANT SELECT, INSERT, UPDATE, DELETE
    ON rating_pools, ratings, match_results, result_reports, rating_changes
    TO matchmaker_daemon;
GRANT SELECT ON result_disputes TO matchmaker_daemon;
GRANT EXECUTE ON FUNCTION matchmaker_current_rating(rating_pools, text, text)
    TO matchmaker_daemon;
GRANT SELECT ON rating_pools, ratings, match_results, result_reports, rating_changes,
                result_disputes
    TO matchmaker_ops;
