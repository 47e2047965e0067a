-- 0013: peer-to-peer matches name who hosts them (issue 24, part 3; seed 003, "two
-- possible servers"), and a queued player reads why the last round left them over.
--
-- The solver never makes a peer-to-peer match that nobody in it can host (a player can
-- host when their ping to every other player is at most hosts.max_ping_ms). Of the
-- players who can, the two best by the seed's host rule (lowest worst ping to the
-- others, ties by player id) are the match's host and its backup host, who takes over
-- if the host drops (host migration). `hosts` keeps the whole list, best first.

ALTER TABLE matches
    -- NULL in dedicated-server queues (the match is played in `region`).
    ADD COLUMN host_player_id text NULL,
    -- NULL when only one player can host (or in dedicated-server queues).
    ADD COLUMN backup_host_player_id text NULL,
    ADD CONSTRAINT backup_host_needs_a_host
        CHECK (backup_host_player_id IS NULL OR host_player_id IS NOT NULL),
    ADD CONSTRAINT backup_host_is_another_player
        CHECK (backup_host_player_id IS DISTINCT FROM host_player_id
               OR host_player_id IS NULL);
COMMENT ON COLUMN matches.host_player_id IS
    'Peer-to-peer: the player who hosts (reaches everyone within hosts.max_ping_ms, lowest '
    'worst ping; ties by player id). NULL in dedicated-server queues.';
COMMENT ON COLUMN matches.backup_host_player_id IS
    'Peer-to-peer: the next best possible host, for host migration; NULL when only one '
    'player can host.';

-- Matches committed before this migration: their `hosts` list is already best first.
UPDATE matches
   SET host_player_id = hosts[1],
       backup_host_player_id = hosts[2]
 WHERE host_player_id IS NULL AND cardinality(hosts) > 0;

-- Why the last round that pooled a queued entry left it over (the same words as
-- round_snapshots.left_over, which ops read through player_rounds): written by the
-- round's commit for the entries it holds, so that a client polling player_status reads
-- it from the entry's own row (one row, no look into the round's snapshot).
ALTER TABLE queue_entries
    ADD COLUMN left_over text NULL,
    ADD COLUMN left_over_reason text NULL;
COMMENT ON COLUMN queue_entries.left_over IS
    'Queued entries: how the last round that pooled them left them over (no_valid_match, '
    'no_host, outscored, not_found, party_sat_out, match_dropped, ...); NULL: not pooled '
    'yet.';

-- Same columns as 0009's, then the host, the backup host and the left-over outcome. A
-- queued entry's reason is its left-over reason.
CREATE OR REPLACE VIEW player_status WITH (security_barrier) AS
SELECT DISTINCT ON (e.queue, e.player_id)
       e.queue,
       e.player_id,
       e.entry_id,
       CASE WHEN e.status = 'queued' AND e.expires_at <= now() THEN 'expired'
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
       CASE WHEN e.status = 'queued' THEN e.left_over END AS left_over
  FROM queue_entries e
  LEFT JOIN queue_countdown c ON c.queue = e.queue AND e.status = 'queued'
  LEFT JOIN matches m ON m.match_id = e.match_id
 WHERE e.owner = session_user OR (SELECT matchmaker_sees_all())
 ORDER BY e.queue, e.player_id, e.entry_id DESC;

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
                AND o.player_id <> mp.player_id
              ORDER BY o.player_id) AS teammates,
       ARRAY(SELECT o.player_id FROM match_players o
              WHERE o.match_id = mp.match_id AND o.team <> mp.team
              ORDER BY o.team, o.player_id) AS opponents,
       m.region,
       m.hosts,
       m.score AS match_score,
       m.factors,
       m.host_player_id,
       m.backup_host_player_id
  FROM match_players mp
  JOIN matches m ON m.match_id = mp.match_id
 WHERE (SELECT matchmaker_sees_all())
    OR EXISTS (SELECT 1 FROM match_players mine
                 JOIN queue_entries e ON e.entry_id = mine.entry_id
                WHERE mine.match_id = mp.match_id AND e.owner = session_user);
