-- Cancel pending matches, with the reason, the answers and the entries they held.
-- $1 = match ids, $2 = reasons, $3 = answers.
UPDATE matches m
   SET status = 'cancelled', resolved_at = now(), cancel_reason = u.reason,
       answers = u.answers,
       cancelled_entries = ARRAY(SELECT mp.entry_id FROM match_players mp
                                  WHERE mp.match_id = m.match_id
                                  ORDER BY mp.entry_id)
  FROM unnest($1::bigint[], $2::text[], $3::jsonb[]) AS u(match_id, reason, answers)
 WHERE m.match_id = u.match_id AND m.status = 'pending'
