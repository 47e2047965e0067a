-- An entry's attributes are bounded in total, not only per value.
--
-- The per-value rules of 0001 (16 names, 16 values each, 64 characters a value) allow
-- an entry 16 KB of attributes, and a login at its queued-entries quota tens of
-- megabytes that every round's snapshot reads and every commit writes back. So an
-- entry's attributes, as JSON text, take at most 2048 bytes: ten times what a filter, a map
-- choice and a few tags need, and a login's total is at most its quota times that.
-- enqueue, enqueue_party and request_backfill members refuse more in class 22.

CREATE OR REPLACE FUNCTION matchmaker_check_attributes(field text, a jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    e record;
    v jsonb;
    n integer := 0;
BEGIN
    IF a IS NULL OR jsonb_typeof(a) <> 'object' THEN
        PERFORM matchmaker_refuse(field, a::text,
            'must be a JSON object of names to a string or a list of strings');
    END IF;
    IF octet_length(a::text) > 2048 THEN
        PERFORM matchmaker_refuse(field, a::text,
            format('is %s bytes of JSON; an entry''s attributes may take 2048 in all',
                   octet_length(a::text)));
    END IF;
    FOR e IN SELECT key, value FROM jsonb_each(a) LOOP
        n := n + 1;
        IF n > 16 THEN
            PERFORM matchmaker_refuse(field, a::text, 'has more than 16 attributes');
        END IF;
        PERFORM matchmaker_check_id(field || ' key', e.key);
        IF jsonb_typeof(e.value) = 'string' THEN
            PERFORM matchmaker_check_id(field || '.' || e.key, e.value #>> '{}');
        ELSIF jsonb_typeof(e.value) = 'array' THEN
            IF jsonb_array_length(e.value) > 16 THEN
                PERFORM matchmaker_refuse(field || '.' || e.key, e.value::text,
                                          'has more than 16 values');
            END IF;
            FOR v IN SELECT value FROM jsonb_array_elements(e.value) LOOP
                IF jsonb_typeof(v) <> 'string' THEN
                    PERFORM matchmaker_refuse(field || '.' || e.key, e.value::text,
                                              'must be a string or a list of strings');
                END IF;
                PERFORM matchmaker_check_id(field || '.' || e.key, v #>> '{}');
            END LOOP;
        ELSE
            PERFORM matchmaker_refuse(field || '.' || e.key, e.value::text,
                                      'must be a string or a list of strings');
        END IF;
    END LOOP;
END
$$;
