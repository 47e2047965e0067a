-- Whether a pending match of the queue is decided: its answer_by passed, every player
-- accepted, or a player declined.
-- $1 = queue.
SELECT EXISTS (
    SELECT 1 FROM matches m
     WHERE m.queue = $1 AND m.status = 'pending'
       AND (m.answer_by <= now()
            OR NOT EXISTS (SELECT 1 FROM match_players mp
                            WHERE mp.match_id = m.match_id
                              AND NOT EXISTS (SELECT 1 FROM ready_answers a
                                               WHERE a.match_id = mp.match_id
                                                 AND a.entry_id = mp.entry_id
                                                 AND a.answer = 'accepted'))
            OR EXISTS (SELECT 1 FROM ready_answers a
                        WHERE a.match_id = m.match_id AND a.answer = 'declined')))
