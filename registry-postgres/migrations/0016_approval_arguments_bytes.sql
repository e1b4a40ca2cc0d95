-- Approval requests kept exactly, their arguments apart, and bounded per owner.
--
-- `body` is the request as the core serializes it, without its arguments, and `arguments`
-- its arguments as compact JSON: both `bytea`, so that every character (NUL included, which
-- `text` and `jsonb` refuse) reads back exactly as it was written, and an approved call runs
-- with exactly the arguments the model sent. `arguments_size` and `arguments_hash` are their
-- digest (size in bytes, and the audit log's `argument_hash`), kept when the arguments are
-- discarded: a request denied, expired or revoked has `arguments` NULL. `request` (jsonb)
-- stays for operators' SQL, without the arguments (NUL shown as `\u{0}`). Rows written
-- before have no `body`, and are read from `request` as before.
ALTER TABLE registry_approvals
    ADD COLUMN body bytea,
    ADD COLUMN arguments bytea,
    ADD COLUMN arguments_size bigint,
    ADD COLUMN arguments_hash text;

-- Rows written before: their arguments' size, and the arguments of those that will never
-- run (denied, expired, revoked) discarded.
UPDATE registry_approvals
   SET arguments_size = octet_length((request -> 'arguments')::text)
 WHERE request ? 'arguments';
UPDATE registry_approvals
   SET request = request - 'arguments'
 WHERE state IN ('denied', 'expired', 'revoked');

-- An owner's share (its requests pending or decided within the last minute, and their
-- bytes of arguments): one index scan each, for a principal and for a tenant and agent.
CREATE INDEX registry_approvals_principal_recent
    ON registry_approvals (principal, decided_at)
    WHERE principal IS NOT NULL;
CREATE INDEX registry_approvals_subject_recent
    ON registry_approvals (tenant, agent, decided_at)
    WHERE principal IS NULL;
