-- Tasks (`registry_core::task`): started on one replica, read, cancelled and collected on any.
--
-- `record` is the task's `Task` as JSON, `message` its message, `progress` its last progress
-- (JSON) and `result` the ended task's `KeptResult` (JSON): all `bytea`, so that every
-- character a tool name, a message or a result holds (NUL included, which `text` and `jsonb`
-- refuse; newlines, bidi controls) reads back exactly as it was written. `owner` is the exact
-- bytes of the owner (tenant and principal, or tenant and agent): the per-principal bound
-- counts by it, so two owners never share a bound. `tenant`, `principal` and `tool` are for
-- operators (NUL shown as `\u{0}`).
--
-- A running task (`working`, `input_required`) holds a lease, renewed by the replica that
-- runs it; once `lease_until` has passed, any replica marks it `failed`, with the reason.
-- An ended task is forgotten once `expires_at` has passed.
CREATE TABLE registry_tasks (
    id          text        PRIMARY KEY,
    owner       bytea       NOT NULL,
    tenant      text        NOT NULL,
    principal   text,
    tool        text        NOT NULL,
    status      text        NOT NULL CHECK (status IN
                    ('working', 'input_required', 'completed', 'failed', 'cancelled')),
    record      bytea       NOT NULL,
    message     bytea,
    progress    bytea,
    result      bytea,
    replica     text        NOT NULL,
    lease_until timestamptz NOT NULL,
    ttl_ms      bigint      NOT NULL CHECK (ttl_ms >= 0),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL,
    expires_at  timestamptz,
    CHECK ((status IN ('working', 'input_required')) = (expires_at IS NULL))
);

-- Counting an owner's running tasks (the per-principal bound): one index scan.
CREATE INDEX registry_tasks_running_owner
    ON registry_tasks (owner) WHERE status IN ('working', 'input_required');
-- Finding the tasks whose lease ran out.
CREATE INDEX registry_tasks_lease
    ON registry_tasks (lease_until) WHERE status IN ('working', 'input_required');
-- Forgetting the ended tasks that expired.
CREATE INDEX registry_tasks_expiry
    ON registry_tasks (expires_at) WHERE expires_at IS NOT NULL;
