-- Version 2: a bucket's time never goes back.
--
-- `registry_take_token` reads the clock before it waits for the bucket's row. A caller that
-- read its clock first but got the row second used to set the bucket's time back to its own
-- earlier reading, and the time between was then refilled a second time by the next caller
-- (more calls granted than the limit). The time is now the later of the two.
CREATE OR REPLACE FUNCTION registry_take_token(k bytea, capacity bigint, step bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    now_at timestamptz := clock_timestamp();
    have   bigint;
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
    IF have >= step THEN
        UPDATE registry_quota_buckets SET tokens_us = have - step WHERE key = k;
        RETURN 0;
    END IF;
    RETURN step - have;
END;
$$;
