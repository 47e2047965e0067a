-- Faster enqueues: the latency-map checks as plain expressions instead of a call to
-- matchmaker_is_latency_map(). That SQL function (a subquery over jsonb_each) is planned
-- again for every inserted row; the jsonpath expression is not. Measured on PostgreSQL 15:
-- the two checks took about two thirds of the server time of a single-row enqueue.
-- Same rule: a JSON object of non-empty names to numbers in [0, 1e9) ms. `strict` keeps
-- jsonpath from unwrapping arrays ({"eu": [1]} is refused).
--
-- NOT VALID: existing rows already satisfied the same rule; no table scan at migration.
ALTER TABLE queue_entries
    DROP CONSTRAINT latencies_must_map_regions_to_non_negative_ms,
    DROP CONSTRAINT peer_pings_must_map_players_to_non_negative_ms;

ALTER TABLE queue_entries
    ADD CONSTRAINT latencies_must_map_regions_to_non_negative_ms CHECK (
        jsonb_typeof(latencies) = 'object'
        AND NOT latencies ? ''
        AND NOT jsonb_path_exists(
            latencies, 'strict $.* ? (@.type() != "number" || @ < 0 || @ >= 1e9)'))
        NOT VALID,
    ADD CONSTRAINT peer_pings_must_map_players_to_non_negative_ms CHECK (
        jsonb_typeof(peer_pings) = 'object'
        AND NOT peer_pings ? ''
        AND NOT jsonb_path_exists(
            peer_pings, 'strict $.* ? (@.type() != "number" || @ < 0 || @ >= 1e9)'))
        NOT VALID;

-- No longer used by any constraint.
DROP FUNCTION matchmaker_is_latency_map(jsonb);
