-- Client views read only the caller's rows before any predicate.
--
-- On a security-barrier view, a client's predicate (player_id = 'alice') may reach an
-- index before the view's owner test, and EXPLAIN ANALYZE then counts the rows of
-- another login that match it ("Rows Removed by Filter: 1"): whether another login has
-- a player, a match or a session of that id. So each client view reads a function that
-- returns only the caller's rows; PostgreSQL never inlines a SECURITY DEFINER function,
-- so no predicate of the caller reaches the tables, and a plan counts the same whether
-- another login's ids exist or not.
--
-- Each view keeps its name and columns. Operators and the daemon read the same rows
-- through the view's internal twin (matchmaker_<view>_rows, every login's rows, indexed
-- as before); a client's branch of the view reads the function. A function reads all of
-- the caller's rows, so a client polling one player, match or request calls the keyed
-- function beside the view, which looks its key up by index:
--   SELECT * FROM player_status('alice');              -- or player_status('{alice,bob}')
--   SELECT * FROM match_details(4711);                 -- one match's roster
--   SELECT * FROM player_matches('alice') ORDER BY match_id DESC LIMIT 1;
--   SELECT * FROM backfill_status(812);                -- one backfill request
-- The keyed functions return the view's columns and, last, the row's owner.


-- ---- Every login's rows, for operators and the daemon ------------------------------------
-- The definitions of player_status (0013), match_details (0014), backfill_status (0007)
-- and avoid_list (0008) without their owner test, with the owner as a column.
CREATE VIEW matchmaker_player_status_rows AS
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
            THEN (SELECT a.answer FROM ready_answers a
                   WHERE a.match_id = e.match_id AND a.entry_id = e.entry_id) END AS answer,
       -- queued: the estimated wait left (matchmaker_estimate_wait).
       CASE WHEN e.status = 'queued' AND e.expires_at > now()
            THEN matchmaker_estimate_wait((SELECT qs.wait_model FROM queue_state qs
                                            WHERE qs.queue = e.queue),
                                          e.skill, e.latencies,
                                          coalesce(c.seconds_to_next_round, 0))
       END AS estimated_wait_s,
       e.owner
  FROM queue_entries e
  LEFT JOIN queue_countdown c ON c.queue = e.queue AND e.status = 'queued'
  LEFT JOIN matches m ON m.match_id = e.match_id
 ORDER BY e.queue, e.owner, e.player_id, e.entry_id DESC;

CREATE VIEW matchmaker_match_details_rows AS
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
       mp.entry_id = ANY (res.left_early_entries) AS left_early,
       m.server_id,
       m.server_address,
       m.map,
       mp.entry_id,
       (SELECT e.owner FROM queue_entries e WHERE e.entry_id = mp.entry_id) AS owner,
       m.server_owner
  FROM match_players mp
  JOIN matches m ON m.match_id = mp.match_id
  LEFT JOIN match_results res ON res.match_id = mp.match_id;

CREATE VIEW matchmaker_backfill_status_rows AS
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
          FROM match_players mp WHERE mp.match_id = b.match_id) AS filled_players,
       b.owner
  FROM backfill_requests b;

CREATE VIEW matchmaker_avoid_list_rows AS
SELECT a.player_id,
       a.avoided_player_id,
       a.created_at,
       a.expires_at,
       a.owner
  FROM avoids a
 WHERE a.expires_at IS NULL OR a.expires_at > now();

-- A login's rows, found from the owner: what the caller-only functions read.
CREATE INDEX queue_entries_by_owner ON queue_entries (owner, player_id, entry_id DESC);
CREATE INDEX match_players_by_entry ON match_players (entry_id);
CREATE INDEX matches_by_server_owner ON matches (server_owner, match_id)
    WHERE server_owner IS NOT NULL;


-- ---- The caller's rows -------------------------------------------------------------------
-- The caller's players' newest entry per queue (operators: nobody's; they read the twin).
CREATE FUNCTION matchmaker_player_status() RETURNS SETOF matchmaker_player_status_rows
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT * FROM matchmaker_player_status_rows r WHERE r.owner = session_user
$$;

-- Every player of each match that holds one of the caller's players or is hosted on one
-- of the caller's servers.
CREATE FUNCTION matchmaker_match_details() RETURNS SETOF matchmaker_match_details_rows
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT d.*
      FROM matchmaker_match_details_rows d
     WHERE d.match_id IN (SELECT mine.match_id
                            FROM queue_entries e
                            JOIN match_players mine ON mine.entry_id = e.entry_id
                           WHERE e.owner = session_user
                          UNION
                          SELECT m.match_id FROM matches m WHERE m.server_owner = session_user)
$$;

CREATE FUNCTION matchmaker_backfill_status() RETURNS SETOF matchmaker_backfill_status_rows
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT * FROM matchmaker_backfill_status_rows b WHERE b.owner = session_user
$$;

CREATE FUNCTION matchmaker_avoid_list() RETURNS SETOF matchmaker_avoid_list_rows
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT * FROM matchmaker_avoid_list_rows a WHERE a.owner = session_user
$$;

CREATE FUNCTION matchmaker_my_servers()
RETURNS TABLE (server_id text, region text, address text, status text, match_id bigint,
               announced_at timestamptz, ready_since timestamptz, allocated_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT s.server_id, s.region, s.address, s.status, s.match_id, s.announced_at,
           s.ready_since, s.allocated_at
      FROM servers s
     WHERE s.owner = session_user
$$;


-- ---- The client views, same names and columns -------------------------------------------
DROP VIEW player_status, match_details, backfill_status, avoid_list, my_servers;

CREATE VIEW player_status AS
SELECT queue, player_id, entry_id, status, enqueued_at, seconds_to_next_round, next_round_at,
       waiting_for, players_missing_for_early_start, may_start_early, match_id, team,
       role, region, hosts, reject_reason, reason, expires_at, party_id, host_player_id,
       backup_host_player_id, left_over, session_id, players_missing, latest_round_at,
       seconds_to_latest_round, round_started_at, relay, answer_by, answer,
       estimated_wait_s
  FROM matchmaker_player_status_rows
 WHERE (SELECT matchmaker_sees_all())
UNION ALL
SELECT queue, player_id, entry_id, status, enqueued_at, seconds_to_next_round, next_round_at,
       waiting_for, players_missing_for_early_start, may_start_early, match_id, team,
       role, region, hosts, reject_reason, reason, expires_at, party_id, host_player_id,
       backup_host_player_id, left_over, session_id, players_missing, latest_round_at,
       seconds_to_latest_round, round_started_at, relay, answer_by, answer,
       estimated_wait_s
  FROM matchmaker_player_status()
 WHERE NOT (SELECT matchmaker_sees_all());

CREATE VIEW match_details AS
SELECT match_id, round_id, queue, created_at, player_id, party_id, team, role, skill,
       waited_seconds, teammates, opponents, region, hosts, match_score, factors,
       host_player_id, backup_host_player_id, relay, win_probability, team_rank,
       left_early, server_id, server_address, map
  FROM matchmaker_match_details_rows
 WHERE (SELECT matchmaker_sees_all())
UNION ALL
SELECT match_id, round_id, queue, created_at, player_id, party_id, team, role, skill,
       waited_seconds, teammates, opponents, region, hosts, match_score, factors,
       host_player_id, backup_host_player_id, relay, win_probability, team_rank,
       left_early, server_id, server_address, map
  FROM matchmaker_match_details()
 WHERE NOT (SELECT matchmaker_sees_all());

CREATE VIEW backfill_status AS
SELECT request_id, queue, session_id, status, reason, open_slots, created_at, expires_at,
       attempted_at, match_id, round_id, filled_by, filled_players
  FROM matchmaker_backfill_status_rows
 WHERE (SELECT matchmaker_sees_all())
UNION ALL
SELECT request_id, queue, session_id, status, reason, open_slots, created_at, expires_at,
       attempted_at, match_id, round_id, filled_by, filled_players
  FROM matchmaker_backfill_status()
 WHERE NOT (SELECT matchmaker_sees_all());

CREATE VIEW avoid_list AS
SELECT player_id, avoided_player_id, created_at, expires_at
  FROM matchmaker_avoid_list_rows
 WHERE (SELECT matchmaker_sees_all())
UNION ALL
SELECT player_id, avoided_player_id, created_at, expires_at
  FROM matchmaker_avoid_list()
 WHERE NOT (SELECT matchmaker_sees_all());

-- A server login reads its own servers (operators read the servers table).
CREATE VIEW my_servers AS
SELECT server_id, region, address, status, match_id, announced_at, ready_since, allocated_at
  FROM matchmaker_my_servers();

COMMENT ON VIEW player_status IS
    'This login''s players: each one''s newest entry per queue, its status and reason; '
    'poll one player with player_status(player_id)';
COMMENT ON VIEW match_details IS
    'Every player of the matches that hold one of this login''s players (or run on its '
    'servers); one match: match_details(match_id), a player''s: player_matches(player_id)';
COMMENT ON VIEW backfill_status IS
    'This login''s backfill requests; one request: backfill_status(request_id)';
COMMENT ON VIEW avoid_list IS 'The avoids of this login''s players that hold now';
COMMENT ON VIEW my_servers IS 'This login''s game servers and what each hosts';


-- ---- Keyed reads: one player, match or request by index ---------------------------------
-- The caller's players of these ids, as player_status shows them (operators: every
-- login's), then the owner.
CREATE FUNCTION player_status(player_ids text[]) RETURNS SETOF matchmaker_player_status_rows
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT *
      FROM matchmaker_player_status_rows r
     WHERE r.player_id = ANY ($1)
       AND (r.owner = session_user OR matchmaker_sees_all())
$$;

CREATE FUNCTION player_status(player_id text) RETURNS SETOF matchmaker_player_status_rows
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT * FROM player_status(ARRAY[$1])
$$;

-- One match's roster, when the caller may see it (a player of its own is in it, or it
-- runs on one of its servers); otherwise no rows, as for a match that does not exist.
CREATE FUNCTION match_details(match_id bigint) RETURNS SETOF matchmaker_match_details_rows
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT d.*
      FROM matchmaker_match_details_rows d
     WHERE d.match_id = $1
       AND (matchmaker_sees_all()
            OR EXISTS (SELECT 1 FROM matches m
                        WHERE m.match_id = $1 AND m.server_owner = session_user)
            OR EXISTS (SELECT 1 FROM match_players mine
                         JOIN queue_entries e ON e.entry_id = mine.entry_id
                        WHERE mine.match_id = $1 AND e.owner = session_user))
$$;

-- The caller's player's own row in each match it played (operators: every login's player
-- of that id); newest last by match_id.
CREATE FUNCTION player_matches(player_id text) RETURNS SETOF matchmaker_match_details_rows
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT d.*
      FROM matchmaker_match_details_rows d
     WHERE d.entry_id IN (SELECT e.entry_id FROM queue_entries e
                           WHERE e.player_id = $1
                             AND (e.owner = session_user OR matchmaker_sees_all()))
$$;

CREATE FUNCTION backfill_status(request_id bigint)
RETURNS SETOF matchmaker_backfill_status_rows
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT *
      FROM matchmaker_backfill_status_rows b
     WHERE b.request_id = $1
       AND (b.owner = session_user OR matchmaker_sees_all())
$$;


-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON matchmaker_player_status_rows, matchmaker_match_details_rows,
              matchmaker_backfill_status_rows, matchmaker_avoid_list_rows,
              player_status, match_details, backfill_status, avoid_list, my_servers
    FROM PUBLIC;
REVOKE ALL ON FUNCTION
    matchmaker_player_status(), matchmaker_match_details(), matchmaker_backfill_status(),
    matchmaker_avoid_list(), matchmaker_my_servers(),
    player_status(text[]), player_status(text), match_details(bigint),
    player_matches(text), backfill_status(bigint)
    FROM PUBLIC;
GRANT SELECT ON matchmaker_player_status_rows, matchmaker_match_details_rows,
                matchmaker_backfill_status_rows, matchmaker_avoid_list_rows
    TO matchmaker_daemon, matchmaker_ops;
-- A view's functions run with its reader's rights: the reader may call them (they return
-- the reader's rows only).
GRANT SELECT ON player_status, avoid_list TO matchmaker_client, matchmaker_daemon, matchmaker_ops;
GRANT EXECUTE ON FUNCTION matchmaker_player_status(), matchmaker_avoid_list(),
                          player_status(text[]), player_status(text)
    TO matchmaker_client, matchmaker_daemon, matchmaker_ops;
GRANT SELECT ON match_details
    TO matchmaker_client, matchmaker_server, matchmaker_daemon, matchmaker_ops;
GRANT EXECUTE ON FUNCTION matchmaker_match_details(), match_details(bigint),
                          player_matches(text)
    TO matchmaker_client, matchmaker_server, matchmaker_daemon, matchmaker_ops;
GRANT SELECT ON backfill_status TO matchmaker_server, matchmaker_daemon, matchmaker_ops;
GRANT EXECUTE ON FUNCTION matchmaker_backfill_status(), backfill_status(bigint)
    TO matchmaker_server, matchmaker_daemon, matchmaker_ops;
GRANT SELECT ON my_servers TO matchmaker_server, matchmaker_daemon, matchmaker_ops;
GRANT EXECUTE ON FUNCTION matchmaker_my_servers()
    TO matchmaker_server, matchmaker_daemon, matchmaker_ops;
