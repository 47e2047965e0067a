-- Wait estimates learned per login.
--
-- The leader learns how the waits that followed the estimates compare with the model
-- for each login's players apart (`scales` in queue_state.wait_model, by login), so that
-- one login's players, whatever they do, cannot move the estimates another login's
-- players read. A login with too few matched players of its own reads `scale`, the
-- median of the logins' scales.

-- The model's rounds after the next, times the scale of the player's login (the
-- logins' median `scale` for a login without one; 1 before any is learned).
CREATE FUNCTION matchmaker_estimate_wait(model jsonb, skill double precision,
                                         latencies jsonb, seconds_to_next integer,
                                         login text)
RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT ceil(greatest(0, seconds_to_next)
                + coalesce((model ->> 'round_interval_s')::double precision, 0)
                  * coalesce((model -> 'scales' ->> login)::double precision,
                             (model ->> 'scale')::double precision, 1)
                  * coalesce((b.r -> 'rounds' ->> (
                        SELECT count(*)::integer
                          FROM jsonb_array_elements_text(b.r -> 'edges') x
                         WHERE x::double precision <= skill))::double precision, 0))::integer
      FROM (SELECT coalesce(model -> 'regions' -> (SELECT key FROM jsonb_each(latencies)
                                                    ORDER BY value::numeric, key LIMIT 1),
                            model -> 'regions' -> '*') AS r) b
     WHERE model IS NOT NULL AND b.r IS NOT NULL
$$;
REVOKE ALL ON FUNCTION
    matchmaker_estimate_wait(jsonb, double precision, jsonb, integer, text) FROM PUBLIC;
-- Functions in a view run with the privileges of the view's reader.
GRANT EXECUTE ON FUNCTION
    matchmaker_estimate_wait(jsonb, double precision, jsonb, integer, text)
    TO matchmaker_client, matchmaker_daemon, matchmaker_ops;

-- The twin of the client views (0015), as 0018 made it, with the estimate read at the
-- login's own scale.
CREATE OR REPLACE VIEW matchmaker_player_status_rows AS
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
       -- queued: the estimated wait left, the party's slowest member's; NULL while the
       -- pool is short of a match (players_missing) or the last round found no match
       -- the player could be in (left_over and reason say why).
       CASE WHEN e.status = 'queued' AND e.expires_at > now()
             AND coalesce(c.players_missing, 0) = 0
             AND coalesce(e.left_over, '') NOT IN
                 ('no_valid_match', 'no_host', 'filtered', 'avoided', 'vetoed')
            THEN (SELECT max(matchmaker_estimate_wait(qs.wait_model, p.skill, p.latencies,
                                                      coalesce(c.seconds_to_next_round, 0),
                                                      e.owner))
                    FROM queue_state qs
                    JOIN queue_entries p
                      ON p.entry_id = e.entry_id
                         OR (p.party_key = e.party_key AND p.status = 'queued')
                   WHERE qs.queue = e.queue)
       END AS estimated_wait_s,
       e.owner
  FROM queue_entries e
  LEFT JOIN queue_countdown c ON c.queue = e.queue AND e.status = 'queued'
  LEFT JOIN matches m ON m.match_id = e.match_id
 ORDER BY e.queue, e.owner, e.player_id, e.entry_id DESC;

-- Nothing reads the estimate without a login any more.
DROP FUNCTION matchmaker_estimate_wait(jsonb, double precision, jsonb, integer);
