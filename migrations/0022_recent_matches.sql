-- Each player's recent matches per queue in one row, so that a round's work does not grow
-- with the length of the history (issue 23).
--
-- Until now the snapshot found a pooled player's last matches by descending
-- match_players_recent (queue, player_id, matched_at DESC), and every matched player
-- added a key at a random place of that index: at 10 million history rows a 526 MB
-- B-tree, whose leaf pages a round touches once per player, each such page written
-- whole to the WAL (a full-page image) the first time after a checkpoint, and read from
-- disk when the index no longer fits the buffer cache. A round of 10,000 players cost
-- 1.3-1.7 times a round on an empty history.
--
-- recent_matches holds one row per (queue, player): the ids of the player's last
-- `round.history_matches` matches in the queue, oldest first. The round's commit
-- rewrites the row in place (the new id appended, the oldest beyond the queue's depth
-- dropped). No indexed column changes and fillfactor leaves room on the page, so the
-- update is a HOT update: no index key is added for a matched player who has played
-- before, and the table (a row per player, not per match) stays small. The snapshot
-- reads the rows of its pooled players through the primary key, and retention keeps
-- the matches they name.
-- Not additive: it drops match_players_recent, which the previous release's rounds read
-- and write (without it a replica of that release scans match_players per pooled player,
-- and its commits would leave recent_matches behind). So it refuses to run while any
-- replica is alive or holds an unexpired lease: the upgrade must stop every replica
-- first (deploy/README.md). A replica killed without a clean stop keeps its lease until
-- daemon.lease_ttl has passed; then the migration runs.
DO $$
DECLARE
    live text;
BEGIN
    SELECT string_agg(DISTINCT who, ', ' ORDER BY who) INTO live
      FROM (SELECT replica AS who FROM replicas WHERE expires_at > now()
            UNION ALL
            SELECT holder FROM leases WHERE expires_at > now()) AS alive;
    IF live IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'object_in_use',
            MESSAGE = format('migration 0022 (recent_matches) needs every replica stopped; '
                             'alive or holding a lease: %s', live),
            HINT = 'stop every matchmaker replica, wait for daemon.lease_ttl if one was '
                   'killed, then run `matchmaker migrate` (deploy/README.md, "Migration 0022")';
    END IF;
END
$$;

CREATE TABLE recent_matches (
    queue     text NOT NULL,
    player_id text NOT NULL,
    -- The player's last matches in the queue, oldest first (ascending match_id: a
    -- queue's rounds commit one after the other under its lease), at most the queue's
    -- round.history_matches at the time of the last match.
    match_ids bigint[] NOT NULL,
    PRIMARY KEY (queue, player_id)
) WITH (fillfactor = 80);

COMMENT ON TABLE recent_matches IS
    'Per queue and player, the ids of their last round.history_matches matches, oldest '
    'first: the history a round''s snapshot reads and retention keeps. Written by the '
    'round''s commit, in the transaction that writes match_players.';

-- The rows of the history already recorded. The depth of each queue is the
-- history_matches of its last round's stored config (absent: the model's
-- opponent_variation.depth, its default and minimum; 1 when the config names neither).
-- One pass over match_players: each row's rank among its player's matches in the queue,
-- newest first, the rows within the depth aggregated per player.
SET LOCAL work_mem = '256MB';
INSERT INTO recent_matches (queue, player_id, match_ids)
SELECT ranked.queue, ranked.player_id, array_agg(ranked.match_id ORDER BY ranked.match_id)
  FROM (SELECT mp.queue, mp.player_id, mp.match_id,
               row_number() OVER (PARTITION BY mp.queue, mp.player_id
                                  ORDER BY mp.matched_at DESC, mp.match_id DESC) AS n
          FROM match_players mp) ranked
  JOIN (SELECT DISTINCT ON (r.queue) r.queue,
               greatest(coalesce((r.config -> 'round' ->> 'history_matches')::int, 1),
                        coalesce((r.config -> 'opponent_variation' ->> 'depth')::int, 1),
                        1) AS depth
          FROM rounds r
         ORDER BY r.queue, r.round_id DESC) d ON d.queue = ranked.queue
 WHERE ranked.n <= d.depth
 GROUP BY ranked.queue, ranked.player_id;

-- Nothing reads match_players by player any more: the snapshot and retention read
-- recent_matches; a player's older matches (ops queries, the report's previous match)
-- are found through their entries (queue_entries_player_latest, then match_id).
DROP INDEX match_players_recent;

-- The daemon writes it; operators read it. Never clients (they read player_status).
REVOKE ALL ON recent_matches FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON recent_matches TO matchmaker_daemon;
GRANT SELECT ON recent_matches TO matchmaker_ops;
