-- Read models: for clients (countdown, assignment, rejection) and for ops (rounds, matches).
-- Every time in these views is computed against now() of the reading transaction.

-- Per queue: the countdown and the live pool size.
CREATE VIEW queue_countdown AS
SELECT s.queue,
       s.next_round_at,
       s.waiting_for,
       ceil(greatest(0, extract(epoch FROM s.next_round_at - now())))::integer
           AS seconds_to_next_round,
       pool.size AS pool_size,
       s.target_pool,
       -- How many more players would start the round early (NULL: no early start).
       greatest(0, s.target_pool - pool.size) AS players_missing_for_early_start,
       s.min_pool,
       s.players_per_match,
       s.schedule,
       s.last_round_id,
       s.last_round_at
  FROM queue_state s
 CROSS JOIN LATERAL (
        SELECT count(*)::integer AS size
          FROM queue_entries e
         WHERE e.queue = s.queue AND e.status = 'queued') pool;

-- A player's latest entry per queue: the countdown while queued, the assignment once
-- matched, the reason once rejected.
--   SELECT * FROM player_status WHERE player_id = $1;
CREATE VIEW player_status AS
SELECT DISTINCT ON (e.queue, e.player_id)
       e.queue,
       e.player_id,
       e.entry_id,
       e.status,
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
       e.reject_reason
  FROM queue_entries e
  LEFT JOIN queue_countdown c ON c.queue = e.queue AND e.status = 'queued'
  LEFT JOIN matches m ON m.match_id = e.match_id
 ORDER BY e.queue, e.player_id, e.entry_id DESC;

-- One line per round, newest first when ordered by round_id DESC.
CREATE VIEW round_summaries AS
SELECT r.round_id,
       r.queue,
       r.trigger,
       r.started_at,
       r.committed_at,
       round((extract(epoch FROM r.committed_at - r.started_at) * 1000)::numeric, 1)
           AS elapsed_ms,
       r.pool_size,
       r.match_count,
       r.matched,
       r.left_over,
       r.rejected,
       r.dropped_by_cancel,
       r.score,
       r.factor_averages,
       r.snapshot_ms,
       r.solve_ms,
       r.commit_ms,
       r.solver_stats ->> 'strategy' AS strategy,
       r.solver_stats ->> 'stop_reason' AS stop_reason,
       r.seed,
       r.config_hash,
       r.leader,
       r.term
  FROM rounds r;

-- One line per matched player: team, teammates, opponents, where it is played, how good.
CREATE VIEW match_details AS
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
       m.factors
  FROM match_players mp
  JOIN matches m ON m.match_id = mp.match_id;
