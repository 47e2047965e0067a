-- SQL an operator runs against the matchmaker's database (psql, Grafana, ...).
-- Each query starts with a `-- name:` line; tests/it/ops_queries.rs runs every one of
-- them. Parameters: $1, $2 (psql: replace them, or use \bind in psql 16+).

-- name: last_rounds
-- The last 20 rounds of queue $1: why each ran, how big the pool was, what came out,
-- how long the database and the solver took, and the config version that produced it.
SELECT round_id, trigger, committed_at, pool_size, match_count, matched, left_over,
       rejected, dropped_by_cancel, round(score::numeric, 3) AS score,
       round(snapshot_ms::numeric, 1) AS snapshot_ms, round(solve_ms::numeric) AS solve_ms,
       round(commit_ms::numeric, 1) AS commit_ms, stop_reason, config_hash, leader
  FROM round_summaries
 WHERE queue = $1
 ORDER BY round_id DESC
 LIMIT 20;

-- name: why_match_scored_low
-- The 5 worst matches of round $1, factor by factor: each factor's score, its weight in
-- the config that round ran with, and how many points of the match score it cost
-- (weight share x (1 - factor score)); the biggest `cost` is why the match scored low.
WITH round_weights AS (
    SELECT config -> 'weights' AS weights FROM rounds WHERE round_id = $1::bigint),
worst AS (
    SELECT match_id, score, factors FROM matches
     WHERE round_id = $1::bigint
     ORDER BY score, match_id
     LIMIT 5),
factor_rows AS (
    SELECT w.match_id, w.score AS match_score, f.key AS factor,
           f.value::float8 AS factor_score,
           coalesce((rw.weights ->> f.key)::float8, 0) AS weight
      FROM worst w
     CROSS JOIN round_weights rw
     CROSS JOIN LATERAL jsonb_each_text(w.factors) AS f)
SELECT match_id, round(match_score::numeric, 3) AS match_score, factor,
       round(factor_score::numeric, 3) AS factor_score, weight,
       round((weight / nullif(sum(weight) OVER (PARTITION BY match_id), 0)
              * (1 - factor_score))::numeric, 3) AS cost
  FROM factor_rows
 ORDER BY match_score, match_id, cost DESC NULLS LAST;

-- name: player_recent_matches
-- Player $2's last 10 matches in queue $1: team, teammates, opponents, where it was
-- played (region or hosts), how good the match was and how long the player waited.
-- (Found through the player's entries, index queue_entries_player_latest.)
SELECT match_id, round_id, created_at, team, teammates, opponents, region, hosts,
       round(match_score::numeric, 3) AS match_score, round(waited_seconds) AS waited_s
  FROM match_details
 WHERE queue = $1 AND player_id = $2
   AND match_id = ANY (ARRAY(SELECT e.match_id FROM queue_entries e
                              WHERE e.player_id = $2 AND e.queue = $1
                                AND e.status = 'matched'
                              ORDER BY e.entry_id DESC
                              LIMIT 10))
 ORDER BY created_at DESC
 LIMIT 10;

-- name: wait_percentiles
-- Wait from enqueue to match per queue over the last $1 (an interval, e.g. '24 hours'),
-- and the longest current wait of players still queued.
SELECT q.queue, q.matched_players,
       round(q.p50::numeric, 1) AS p50_s, round(q.p90::numeric, 1) AS p90_s,
       round(q.p99::numeric, 1) AS p99_s, round(q.max::numeric, 1) AS max_s,
       (SELECT round(extract(epoch FROM now() - min(e.enqueued_at)))
          FROM queue_entries e
         WHERE e.queue = q.queue AND e.status = 'queued') AS longest_waiting_now_s
  FROM (SELECT queue, count(*) AS matched_players,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY w) AS p50,
               percentile_cont(0.9) WITHIN GROUP (ORDER BY w) AS p90,
               percentile_cont(0.99) WITHIN GROUP (ORDER BY w) AS p99,
               max(w) AS max
          FROM (SELECT queue, extract(epoch FROM matched_at - enqueued_at)::float8 AS w
                  FROM match_players
                 WHERE matched_at > now() - $1::interval) waits
         GROUP BY queue) q
 ORDER BY q.queue;

-- name: opponent_repeats
-- How often opponents repeat (the opponent-variation factor), per round of queue $1
-- (last 20 rounds): of all (player, opponent) pairs, how many had already met in the
-- player's previous match, as opponents again or as teammates then.
WITH recent_rounds AS (
    SELECT round_id FROM rounds WHERE queue = $1 ORDER BY round_id DESC LIMIT 20),
pairs AS (
    SELECT m.round_id, a.player_id, a.entry_id, b.player_id AS opponent
      FROM recent_rounds r
      JOIN matches m ON m.round_id = r.round_id
      JOIN match_players a ON a.match_id = m.match_id
      JOIN match_players b ON b.match_id = a.match_id AND b.team <> a.team),
-- The player's match before: their entries in a queue follow their matches
-- (index queue_entries_player_latest).
previous AS (
    SELECT p.*, pm.match_id AS prev_match, pm.team AS prev_team
      FROM pairs p
      LEFT JOIN LATERAL (
            SELECT x.match_id, x.team FROM queue_entries x
             WHERE x.player_id = p.player_id AND x.entry_id < p.entry_id
               AND x.queue = $1 AND x.status = 'matched'
             ORDER BY x.entry_id DESC
             LIMIT 1) pm ON true)
SELECT pr.round_id,
       count(*) AS opponent_pairs,
       count(*) FILTER (WHERE o.team IS NOT NULL AND o.team <> pr.prev_team)
           AS opponents_again,
       count(*) FILTER (WHERE o.team = pr.prev_team) AS teammates_before,
       round(100.0 * count(o.team) / count(*), 1) AS repeat_pct
  FROM previous pr
  LEFT JOIN match_players o ON o.match_id = pr.prev_match AND o.player_id = pr.opponent
 GROUP BY pr.round_id
 ORDER BY pr.round_id DESC;
