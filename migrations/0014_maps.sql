-- Maps: each match is played on a map of its queue's pool, chosen by the round together
-- with its players.
--
-- A queue with [queues.NAME.maps] publishes its pool and how many maps a player may veto.
-- Players name the maps they veto and those they prefer in their attributes, `veto` and
-- `maps` (a string or a list of strings); enqueue and enqueue_party refuse a name outside
-- the pool and more vetoes than the queue allows, in class 22 like every input rule. The
-- round never puts a match on a map one of its players vetoed (unless the queue's floors
-- relax vetoes for a long wait), prefers the maps its players prefer and have not played
-- lately, and writes the map with the match; the history keeps it, so the next rounds see
-- what each player played.


-- ---- queues: the map pool ---------------------------------------------------------------
ALTER TABLE queues ADD COLUMN maps text[] NOT NULL DEFAULT '{}',
                   ADD COLUMN max_vetoes integer NOT NULL DEFAULT 0,
                   ADD CONSTRAINT queue_vetoes_leave_a_map
                       CHECK (max_vetoes >= 0
                              AND (max_vetoes = 0 OR max_vetoes < cardinality(maps)));
COMMENT ON COLUMN queues.maps IS
    'The maps a match of this queue is played on ([queues.NAME.maps] pool); empty: no maps';
COMMENT ON COLUMN queues.max_vetoes IS
    'How many maps of the pool one player may veto (attribute veto)';

-- ---- matches: the map played -------------------------------------------------------------
ALTER TABLE matches ADD COLUMN map text NULL,
                    ADD COLUMN map_vetoed_by integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN matches.map IS
    'The map the match is played on (queues with maps; NULL otherwise)';
COMMENT ON COLUMN matches.map_vetoed_by IS
    'Players of the match who vetoed its map: a floor step with relax_vetoes was in force '
    'and every map was vetoed by one of them (0: every veto held)';

-- ---- The entry rule -----------------------------------------------------------------------
-- A row's `veto` and `maps` attributes against its queue's pool. A trigger rather than a
-- new enqueue: both enqueue functions insert through it, and the WHEN clause keeps its cost
-- off every entry that names no map.
CREATE FUNCTION matchmaker_check_map_choices() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    q queues;
    key text;
    names text[];
    n text;
BEGIN
    SELECT * INTO q FROM queues WHERE queues.queue = NEW.queue;
    FOREACH key IN ARRAY ARRAY['veto', 'maps'] LOOP
        CONTINUE WHEN NOT NEW.attributes ? key;
        names := CASE jsonb_typeof(NEW.attributes -> key)
                      WHEN 'array' THEN ARRAY(SELECT jsonb_array_elements_text(NEW.attributes -> key))
                      ELSE ARRAY[NEW.attributes ->> key] END;
        IF cardinality(q.maps) = 0 THEN
            PERFORM matchmaker_refuse('attributes.' || key, (NEW.attributes -> key)::text,
                format('queue %s has no maps', NEW.queue));
        END IF;
        FOREACH n IN ARRAY names LOOP
            IF NOT n = ANY (q.maps) THEN
                PERFORM matchmaker_refuse('attributes.' || key, quote_literal(n),
                    format('unknown map; queue %s''s maps: %s', NEW.queue,
                           array_to_string(q.maps, ', ')));
            END IF;
        END LOOP;
        IF key = 'veto' AND cardinality(names) > q.max_vetoes THEN
            PERFORM matchmaker_refuse('attributes.veto', (NEW.attributes -> key)::text,
                CASE WHEN q.max_vetoes = 0 THEN format('queue %s allows no vetoes', NEW.queue)
                     ELSE format('vetoes %s maps; queue %s allows %s', cardinality(names),
                                 NEW.queue, q.max_vetoes) END);
        END IF;
    END LOOP;
    RETURN NEW;
END
$$;

CREATE TRIGGER queue_entries_map_choices
    BEFORE INSERT ON queue_entries
    FOR EACH ROW
    WHEN (NEW.attributes ? 'veto' OR NEW.attributes ? 'maps')
    EXECUTE FUNCTION matchmaker_check_map_choices();

-- ---- match_details: the map ---------------------------------------------------------------
-- match_details of 0012 with the match's map.
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
       mp.entry_id = ANY (res.left_early_entries) AS left_early,
       m.server_id,
       m.server_address,
       m.map
  FROM match_players mp
  JOIN matches m ON m.match_id = mp.match_id
  LEFT JOIN match_results res ON res.match_id = mp.match_id
 WHERE (SELECT matchmaker_sees_all())
    OR m.server_owner = session_user
    OR EXISTS (SELECT 1 FROM match_players mine
                 JOIN queue_entries e ON e.entry_id = mine.entry_id
                WHERE mine.match_id = mp.match_id AND e.owner = session_user);

-- ---- queue_catalog: the map pool ----------------------------------------------------------
-- queue_catalog of 0011 with the maps a client may name and how many it may veto.
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
       q.rating_pool,
       -- The maps players may name in their veto and maps attributes, and how many they
       -- may veto.
       q.maps,
       q.max_vetoes
  FROM queues q
  LEFT JOIN queue_countdown c ON c.queue = q.queue
 WHERE q.active;

-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON FUNCTION matchmaker_check_map_choices() FROM PUBLIC;
