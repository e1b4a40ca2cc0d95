-- Version 3: several tokens in one round trip.
--
-- `registry_take_tokens` takes up to `want` tokens from bucket `k` at once (created full), under
-- the same row lock and clock rules as `registry_take_token`. It returns how many it took
-- (1..want), or, when it took none, minus the microseconds until one comes back. A replica
-- takes a chunk for a generous limit, spends it locally for a short while and drops what is
-- left: the fleet never exceeds the limit, and a hot bucket's row is locked once per chunk
-- instead of once per call.
CREATE FUNCTION registry_take_tokens(k bytea, capacity bigint, step bigint, want integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    now_at timestamptz := clock_timestamp();
    have   bigint;
    taken  bigint;
BEGIN
    INSERT INTO registry_quota_buckets AS b (key, tokens_us, at, capacity_us, interval_us)
    VALUES (k, capacity, now_at, capacity, step)
    ON CONFLICT (key) DO UPDATE SET
        tokens_us = CASE
            WHEN b.capacity_us <> EXCLUDED.capacity_us OR b.interval_us <> EXCLUDED.interval_us
                THEN EXCLUDED.capacity_us
            ELSE LEAST(b.capacity_us,
                       b.tokens_us + GREATEST(0, (EXTRACT(EPOCH FROM (now_at - b.at)) * 1000000)::bigint))
        END,
        at = GREATEST(b.at, now_at),
        capacity_us = EXCLUDED.capacity_us,
        interval_us = EXCLUDED.interval_us
    RETURNING tokens_us INTO have;
    taken := LEAST(GREATEST(want, 1), have / step);
    IF taken >= 1 THEN
        UPDATE registry_quota_buckets SET tokens_us = have - taken * step WHERE key = k;
        RETURN taken;
    END IF;
    RETURN -(step - have);
END;
$$;
