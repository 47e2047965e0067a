-- Per queue with a ready-checked match created in the window ($1 the queue or NULL, $2
-- from, $3 to): its matches by outcome, the accept rate and the median time to accept.
WITH m AS (
    SELECT * FROM matches
     WHERE answer_by IS NOT NULL AND created_at >= $2 AND created_at < $3
       AND ($1::text IS NULL OR queue = $1)),
answers AS (
    -- A ready match keeps its answers in match_players (the resolution copies them from
    -- ready_answers), a cancelled one in matches.answers; pending ones are not counted.
    SELECT m.queue, mp.answer,
           extract(epoch FROM mp.answered_at - m.created_at)::float8 AS secs
      FROM m JOIN match_players mp ON mp.match_id = m.match_id
     WHERE m.status = 'ready'
    UNION ALL
    SELECT m.queue, a.value #>> '{}', NULL
      FROM m CROSS JOIN LATERAL jsonb_each(m.answers) a
     WHERE m.status = 'cancelled')
SELECT q.queue,
       (SELECT count(*) FROM m WHERE m.queue = q.queue AND m.status = 'pending') AS pending,
       (SELECT count(*) FROM m WHERE m.queue = q.queue AND m.status = 'ready') AS ready,
       (SELECT count(*) FROM m WHERE m.queue = q.queue AND m.status = 'cancelled')
           AS cancelled,
       -- A player who did not answer counts against the rate.
       (SELECT avg(CASE WHEN a.answer = 'accepted' THEN 1.0 ELSE 0.0 END)::float8
          FROM answers a WHERE a.queue = q.queue) AS accept_rate,
       (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a.secs)
          FROM answers a WHERE a.queue = q.queue AND a.secs IS NOT NULL)
           AS median_accept_s
  FROM (SELECT DISTINCT queue FROM m) q
 ORDER BY q.queue
