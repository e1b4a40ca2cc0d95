-- The person a request or an event belongs to (`Subject::principal`), beside tenant and agent.
-- NULL for rows written before (and for subjects that name no principal): such a request is
-- decided only by a subject without a principal.
ALTER TABLE registry_approvals ADD COLUMN principal text;
ALTER TABLE audit_events ADD COLUMN principal text;

-- Counting a principal's pending requests (`max_pending_approvals`), and, for subjects
-- without one, a tenant's and agent's: one index scan each.
CREATE INDEX registry_approvals_pending_principal
    ON registry_approvals (principal, expires_at)
    WHERE state = 'pending' AND principal IS NOT NULL;
CREATE INDEX registry_approvals_pending_subject
    ON registry_approvals (tenant, agent, expires_at)
    WHERE state = 'pending' AND principal IS NULL;
