-- Latency maps: also refuse absurd numbers (>= 1e9 ms, about 11 days). JSON allows any
-- magnitude, e.g. 1e400, which no client can mean and which does not fit a double; such
-- a row would otherwise reach the round. Rows stored earlier are not re-checked (the
-- snapshot turns any row it cannot convert into a rejection with a reason).
CREATE OR REPLACE FUNCTION matchmaker_is_latency_map(m jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT jsonb_typeof(m) = 'object'
       AND NOT EXISTS (
            SELECT 1
              FROM jsonb_each(m) AS e(name, ms)
             WHERE CASE WHEN e.name = '' OR jsonb_typeof(e.ms) <> 'number' THEN true
                        ELSE e.ms::numeric < 0 OR e.ms::numeric >= 1e9 END)
$$;
COMMENT ON FUNCTION matchmaker_is_latency_map(jsonb) IS
    'true when the value is a JSON object of non-empty names to numbers of ms in [0, 1e9)';
