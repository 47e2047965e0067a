-- Each login's ready check record gains its seats and failures; the stored counts decay,
-- halving every half-life.
-- $1 = queue, $2 = logins, $3 = seats, $4 = failures, $5 = the half-life in seconds.
INSERT INTO ready_records AS r (queue, owner, seats, failures, updated_at)
SELECT $1, u.owner, u.seats, u.failures, now()
  FROM unnest($2::text[], $3::float8[], $4::float8[]) AS u(owner, seats, failures)
ON CONFLICT (queue, owner) DO UPDATE
   SET seats = r.seats * power(0.5, extract(epoch FROM now() - r.updated_at) / $5)
               + EXCLUDED.seats,
       failures = r.failures
                  * power(0.5, extract(epoch FROM now() - r.updated_at) / $5)
                  + EXCLUDED.failures,
       updated_at = now()
