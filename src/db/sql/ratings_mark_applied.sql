-- Mark results applied, the refused ones with why the model could not rate them.
-- $1 = applied match ids, $2 = refused match ids, $3 = now, $4 = the refusals' reasons.
UPDATE match_results r SET applied_at = $3, rating_error = u.why
  FROM (SELECT id, NULL::text AS why FROM unnest($1::bigint[]) AS id
        UNION ALL
        SELECT * FROM unnest($2::bigint[], $4::text[])) AS u(id, why)
 WHERE r.match_id = u.id AND r.applied_at IS NULL
