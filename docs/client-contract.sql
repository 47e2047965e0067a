-- What a client runs against the matchmaker's database: the client contract.
--
-- A client (a game backend, a gateway, a game client with a database connection) logs in
-- as a role that is a member of matchmaker_client, and has nothing else:
--
--   CREATE ROLE game_backend LOGIN PASSWORD '...' IN ROLE matchmaker_client;
--
-- That role may call ten functions (enqueue, enqueue_party, keep_alive, cancel,
-- queue_channel, accept_match, decline_match, avoid, unavoid, report_result) and read six
-- views (queue_catalog, player_status, match_details, queue_countdown, avoid_list,
-- player_ratings). Backfill (request_backfill, cancel_backfill, backfill_status) and
-- server announcements (server_ready, server_gone, my_servers) are for game servers,
-- logins in matchmaker_server.
-- It cannot read or write a table: the matchmaker owns its tickets, their times and
-- their status. This file holds the statements of a queue's ordinary flow; the whole API,
-- backfill included, is described in docs/client-guide.md.
-- A login sees and cancels only the players it enqueued itself.
--
--
-- A call with bad input is refused with an error in SQLSTATE class 22 and writes
-- nothing: what the functions check says `field = value: rule` (22023,
-- invalid_parameter_value), a text that is not a value of the parameter's type keeps
-- PostgreSQL's own message (22P02, ...). Class 22: the request is wrong, show or log the
-- message, do not retry. Classes 08, 53, 57 and 40: the server is unavailable for now,
-- retry later. docs/client-guide.md ("Refusals and errors") shows examples.
--
-- Each statement starts with a `-- name:` line; tests/it/client_contract.rs runs every one
-- of them as a client login and checks its answer. Parameters are $1, $2, ... with the
-- casts written out, so the statements run as they are from any driver (or from psql 16+
-- with \bind). The `-- example:` line gives one set of values, separated by ` | `; the
-- examples tell one story: alice queues alone, bob and carol as a party, alice cancels and
-- queues again, and a round matches them.

-- name: queue_catalog
-- The queues you may enqueue into, and their rules: teams x team_size (the full format;
-- a flexible queue also forms the smaller formats listed in formats, e.g. {5v5,5v4,4v4},
-- from min_players_per_match players up), the network
-- (peer_to_peer: peer_pings matter; dedicated: latencies to regions), the roles and
-- regions a player may name (empty: none / any), the largest party, how long a ticket
-- lives without keep_alive (ticket_ttl) and how often to call keep_alive
-- (keep_alive_every), and the countdown to the queue's next round.
SELECT queue, teams, team_size, formats, min_players_per_match, network, roles, regions,
       max_party_size,
       extract(epoch FROM ticket_ttl) AS ticket_ttl_s,
       extract(epoch FROM keep_alive_every) AS keep_alive_every_s,
       extract(epoch FROM max_wait) AS max_wait_s,
       next_round_at, seconds_to_next_round, waiting_for, pool_size,
       players_missing_for_early_start, players_missing, seconds_to_latest_round
  FROM queue_catalog
 ORDER BY queue;

-- name: listen_rounds
-- Wake-ups: a notification on channel matchmaker_round after every round commits, with
-- JSON {"queue", "round_id", "match_count", "matched"}; then read player_status. A
-- notification may be lost (a dropped connection): poll player_status as well, e.g. at
-- seconds_to_next_round.
LISTEN matchmaker_round;

-- name: queue_channel
-- This login's channel of a queue's notifications: 'matchmaker:' and 40 hex digits of a
-- keyed hash of the login and the queue, which no other login can work out. LISTEN on it
-- in double quotes. It carries the matches that hold this login's players and the
-- queue's countdown while one of them waits.
-- example: q
SELECT queue_channel(queue => $1) AS channel;

-- name: listen_queue
-- Notifications of queue q, on the channel queue_channel gave (in double quotes: the name
-- has a colon). Each payload is JSON with an "event":
--   match      one per committed match holding a player of this login, sent when its
--              round commits: queue, round_id,
--              match_id, part / parts (a match too large for one 8000-byte payload
--              comes in several parts, each naming some players), and players: a list of
--              {"player_id", "team", "party_id" and "role" when set}. Tell those players
--              (match_details has the rest).
--   countdown  the queue's countdown changed: next_round_at, seconds_to_next_round,
--              waiting_for, players_missing, latest_round_at, seconds_to_latest_round,
--              round_started_at (as in player_status), and cause: round (round_id,
--              trigger), round_start, config, pool or start.
-- As with matchmaker_round, a notification sent while the connection is down is lost:
-- keep polling player_status, less often.
-- LISTEN takes no parameter: write the name queue_channel gave between the quotes.
LISTEN "{channel}";

-- name: enqueue
-- Queue one solo player; returns the new entry's id. Call it with named arguments: every
-- argument after skill may be left out.
--   queue        a queue of queue_catalog
--   player_id    your id for the player: 1-64 characters, no control characters
--   skill        a number in [-1000000, 1000000] (an Elo or MMR rating, say)
--   latencies    JSON object region -> round-trip ms (0-10000), at most 32 regions; only
--                the queue's regions when queue_catalog.regions is not empty
--   peer_pings   JSON object other player_id -> round-trip ms (0-10000), at most 100
--   roles        the roles the player will play, from queue_catalog.roles ({}: any)
--   side         side preference in [0, 1]: 0 first team, 1 second team (NULL: none)
--   skill_sigma  the rating's uncertainty, in [0, 1000000] (NULL: unknown)
-- The server sets the enqueue time, the ticket's expiry and the status. A player may wait
-- in several queues at once and is matched in one of them at most: the others then read
-- `withdrawn`, naming the match. Enqueueing a player already queued in this queue is
-- refused (cancel first).
-- example: q | alice | 1500 | {"eu": 25, "us": 90} | {} | {} | 0.5 | 120
SELECT enqueue(queue => $1, player_id => $2, skill => $3::float8,
               latencies => $4::jsonb, peer_pings => $5::jsonb, roles => $6::text[],
               side => $7::float8, skill_sigma => $8::float8) AS entry_id;

-- name: enqueue_party
-- Queue a party: 2 to max_party_size players who play on one team, in one call. members
-- is a JSON array of objects with player_id and skill, and optionally latencies,
-- peer_pings, roles, side and skill_sigma (the same rules as enqueue; any other field is
-- refused). Returns one row per member. The party is fixed by this call: nobody joins
-- later, it is matched whole or not at all, and cancelling one member cancels it. A
-- party_id already queued in this queue is refused.
-- example: q | crew | [{"player_id": "bob", "skill": 1400, "latencies": {"eu": 30}}, {"player_id": "carol", "skill": 1550, "latencies": {"eu": 41, "us": 80}}]
SELECT player_id, entry_id
  FROM enqueue_party(queue => $1, party_id => $2, members => $3::jsonb)
 ORDER BY player_id;

-- name: keep_alive
-- Keep waiting players' tickets alive: call it every keep_alive_every (queue_catalog) for
-- all the players you have waiting, in one call (at most 10000 ids). A ticket not kept
-- alive for ticket_ttl expires and is never matched. Party members are refreshed with
-- any one of them. queue NULL: every queue. Returns how many entries were refreshed;
-- fewer than you expected means some left the queue (matched, expired, ...): read
-- player_status.
-- example: {alice,bob} | q
SELECT keep_alive(player_ids => $1::text[], queue => $2) AS refreshed;

-- name: cancel
-- Take a player out of a queue (queue NULL: out of every queue), with their party.
-- Returns how many entries were cancelled: 0 means nothing of theirs was queued, e.g. a
-- round matched them a moment ago: read player_status.
-- example: alice | q
SELECT cancel(player_id => $1, queue => $2) AS cancelled;

-- name: player_status
-- Where your players are, one row per player and queue (their latest entry). By status:
--   queued     seconds_to_next_round / next_round_at: the next moment a round can run
--              (0 s once the tick has passed and it waits for players; NULL while a
--              round runs); waiting_for: schedule, min_pool, players or round;
--              players_missing: how many more players that round needs;
--              seconds_to_latest_round / latest_round_at: the latest moment a round runs
--              regardless (NULL: unknown); round_started_at: the running round's start;
--              may_start_early and players_missing_for_early_start: how many more
--              players start it now.
--   matched    match_id, team (0, 1, ...), role, and where to play: region (dedicated
--              servers) or, peer-to-peer, host_player_id (who hosts) and
--              backup_host_player_id (who takes over if the host drops; NULL when only
--              one player can host; hosts lists every player who could, best first);
--              the rest of the match: match_details.
--   queued after a round left them over: left_over says how (no_host: nobody who
--              could host a match with them was in the pool; no_valid_match,
--              outscored, not_found, party_sat_out, match_dropped) and reason says it in
--              words.
--   cancelled, rejected, expired, withdrawn
--              reason: why, in words (withdrawn: matched in another queue, match_id says
--              which match).
-- A ticket past its expiry reads `expired` at once, before the matchmaker sweeps it.
-- example: {alice,bob,carol}
SELECT queue, player_id, status, party_id,
       seconds_to_next_round, next_round_at, waiting_for, may_start_early,
       players_missing_for_early_start, players_missing, seconds_to_latest_round,
       latest_round_at, round_started_at,
       match_id, team, role, region, hosts, host_player_id, backup_host_player_id,
       left_over, reason, expires_at
  FROM player_status($1::text[])
 ORDER BY queue, player_id;

-- name: my_match
-- A matched player's latest match: their team and role, their teammates and opponents,
-- where to play, and how long they waited.
-- example: alice
SELECT match_id, queue, created_at, team, role, teammates, opponents, region, hosts,
       host_player_id, backup_host_player_id,
       round(waited_seconds::numeric, 1) AS waited_seconds
  FROM player_matches($1)
 ORDER BY created_at DESC, match_id DESC
 LIMIT 1;

-- name: accept_match
-- The ready check: in a queue that has one (queue_catalog.ready_timeout is not NULL), a
-- round's match is `pending` in player_status until every player answers before
-- answer_by. Accept for one of this login's players: 'accepted' ('already_accepted' the
-- second time). Every player accepted: the match is final (matched). In a queue without
-- a ready check, as this flow's, the call is refused: `match_id = 1: has no ready check:
-- the match is final`.
-- example: alice | 1
SELECT accept_match(player_id => $1, match_id => $2::bigint) AS answer;

-- name: decline_match
-- Decline for one of this login's players: 'declined' ('already_declined'). The match is
-- cancelled, and those who accepted are queued again with their original enqueue time;
-- answer_by passing does the same. docs/client-guide.md ("The ready check") has the
-- rules and refusals.
-- example: alice | 1
SELECT decline_match(player_id => $1, match_id => $2::bigint) AS answer;

-- name: match_roster
-- Everyone in a match (one of your players is in it): team, role, party and skill of each
-- player, e.g. to build the lobby.
-- example: 1
SELECT player_id, party_id, team, role, skill
  FROM match_details($1::bigint)
 ORDER BY team, player_id;
