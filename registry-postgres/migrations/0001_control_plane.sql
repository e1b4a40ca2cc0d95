-- The control plane shared by every replica. Applied once, under an advisory lock, by the
-- first replica (or `registry-admin`) that connects; see src/migrate.rs.

-- Revocations, restorations and replacements, in commit order: `seq` is assigned under a
-- transaction-scoped advisory lock, so a reader that has seen `seq = n` has seen every
-- change before it. Replicas apply them in order and catch up from the last one they applied.
CREATE TABLE registry_changes (
    seq         bigint      PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    tool        text        NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('revoke', 'restore', 'replace')),
    -- For a replacement: what happens to runs opened before it.
    old_runs    text        CHECK (old_runs IN ('keep_shown_version', 'revoke')),
    -- For a replacement: the fingerprint of the new definition. A replica whose definition
    -- differs does not have the new version and stops serving the old one.
    fingerprint text,
    reason      text        NOT NULL,
    -- Who made it: a replica's name, or `registry-admin` and the operator's user.
    origin      text        NOT NULL
);

-- Approval requests. `request` is the whole request as the core serializes it (arguments
-- included: an approved call runs with exactly them); the other columns are for operators.
CREATE TABLE registry_approvals (
    id           text        PRIMARY KEY,
    tool         text        NOT NULL,
    tenant       text        NOT NULL,
    agent        text,
    run_id       text        NOT NULL,
    call_id      text        NOT NULL,
    reason       text        NOT NULL,
    request      jsonb       NOT NULL,
    requested_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    -- pending, approved, denied, expired or revoked; leaves `pending` at most once.
    state        text        NOT NULL DEFAULT 'pending'
                             CHECK (state IN ('pending', 'approved', 'denied', 'expired', 'revoked')),
    -- The decided state as the core serializes it (who, why, edited).
    decision     jsonb,
    decided_at   timestamptz,
    -- An operator's verdict (`registry-admin approve|deny`), for the replica whose client
    -- waits on the request to apply; given at most once.
    verdict      text        CHECK (verdict IN ('approve', 'deny')),
    verdict_by   text,
    verdict_reason text,
    verdict_at   timestamptz,
    origin       text        NOT NULL
);
CREATE INDEX registry_approvals_pending ON registry_approvals (requested_at) WHERE state = 'pending';
CREATE INDEX registry_approvals_expires ON registry_approvals (expires_at);

-- Token buckets of rate limits, shared by every replica. `tokens` is in microseconds of
-- refill: a full bucket holds `capacity_us = calls * interval_us`.
CREATE TABLE registry_quota_buckets (
    key         bytea       PRIMARY KEY,
    tokens_us   bigint      NOT NULL,
    at          timestamptz NOT NULL,
    capacity_us bigint      NOT NULL,
    interval_us bigint      NOT NULL
);

-- Takes one token from bucket `k` (created full), atomically: the row lock of the upsert
-- serializes concurrent callers. Returns 0 when a token was taken, otherwise how many
-- microseconds until one comes back. A bucket whose limit changed starts over, full.
CREATE FUNCTION registry_take_token(k bytea, capacity bigint, step bigint) RETURNS bigint
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
        at = now_at,
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

-- Every audit event of every replica. Argument values are never written: only their size
-- and hash, inside `event`.
CREATE TABLE audit_events (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    replica     text        NOT NULL,
    kind        text        NOT NULL,
    run_id      text,
    tenant      text,
    tool        text,
    call_id     text,
    outcome     text,
    approval_id text,
    event       jsonb       NOT NULL
);
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_tool_at ON audit_events (tool, at);
