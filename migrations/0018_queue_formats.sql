-- 0018: a flexible queue publishes its formats (issue 24, part 2; seed 002's alliance rule).
--
-- `teams` x `team_size` stays the full format, and the largest: a party still has at most
-- `team_size` members (`max_party_size`), since a party plays on one team. A flexible
-- queue also forms smaller matches (a 5v5 queue with player_min_number = 4: 5v4, 4v4);
-- clients read which in `queue_catalog`, and the audit (src/db/audit.rs) holds every
-- committed match to them.
--
--   min_teams, min_team_size   seed 002's min_number and player_min_number (equal to
--                              teams and team_size in a fixed-format queue);
--   formats                    every format, full first, as team sizes largest first
--                              joined by 'v' ('5v5', '5v4', '4v4'; three teams: '2v2v2').
--
-- Text, not an integer array: formats have different numbers of teams, and PostgreSQL's
-- arrays are rectangular. A match's format in the same words is
-- string_agg(size::text, 'v' ORDER BY size DESC) over its teams.

ALTER TABLE queues
    ADD COLUMN min_teams integer NULL,
    ADD COLUMN min_team_size integer NULL,
    ADD COLUMN formats text[] NULL;

-- Rows published before: their format is teams x team_size. The daemon republishes a row
-- whose formats differ from its config's (src/db/queues.rs), so a flexible queue's row is
-- corrected by its leader's next publish.
UPDATE queues
   SET min_teams = teams,
       min_team_size = team_size,
       formats = ARRAY[array_to_string(array_fill(team_size, ARRAY[teams]), 'v')];

ALTER TABLE queues
    ALTER COLUMN min_teams SET NOT NULL,
    ALTER COLUMN min_team_size SET NOT NULL,
    ALTER COLUMN formats SET NOT NULL,
    ADD CONSTRAINT queue_team_range CHECK (min_teams BETWEEN 2 AND teams),
    ADD CONSTRAINT queue_team_size_range CHECK (min_team_size BETWEEN 1 AND team_size),
    -- The full format comes first.
    ADD CONSTRAINT queue_formats_start_full
        CHECK (formats[1] = array_to_string(array_fill(team_size, ARRAY[teams]), 'v')),
    -- A party plays on one team: never larger than the largest team.
    ADD CONSTRAINT queue_party_fits_a_team CHECK (max_party_size <= team_size);

COMMENT ON COLUMN queues.min_teams IS
    'Fewest teams of a match (seed 002 min_number); teams is the most.';
COMMENT ON COLUMN queues.min_team_size IS
    'Fewest players of a team (seed 002 player_min_number); team_size is the most.';
COMMENT ON COLUMN queues.formats IS
    'Every format a match of this queue may have, full format first: team sizes largest '
    'first joined by ''v'' (''5v5'', ''5v4'', ''4v4'').';

-- 0009's columns in 0009's order, then the ranges (a view may only gain columns at the
-- end). min_players_per_match: players of the smallest format, the fewest a round needs.
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
                  FROM unnest(q.formats) f) s)::integer AS min_players_per_match
  FROM queues q
  LEFT JOIN queue_countdown c ON c.queue = q.queue
 WHERE q.active;
