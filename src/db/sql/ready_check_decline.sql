-- The entries of players who declined (or did not answer), or whose party mate did: out,
-- with the reason, and the decline cooldown for those it applies to.
-- $1 = entry ids, $2 = reasons, $3 = the cooldown in seconds (NULL: none), $4 = whether
-- each entry gets it.
UPDATE queue_entries e
   SET status = 'declined', reject_reason = u.reason, updated_at = now(),
       declined_until = CASE WHEN u.cooldown AND $3::float8 IS NOT NULL
                             THEN now() + make_interval(secs => $3) END
  FROM unnest($1::bigint[], $2::text[], $4::bool[]) AS u(entry_id, reason, cooldown)
 WHERE e.entry_id = u.entry_id AND e.status = 'matched'
