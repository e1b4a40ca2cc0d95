-- Version 15: a decision on an approval request is announced, so that a replica whose client
-- waits on the question wakes at once instead of polling (`PgApprovalStore`'s `watch`).
--
-- Every change of a request's state or verdict (a run's decision, an operator's
-- `registry-admin approve`/`deny`) sends `NOTIFY registry_approvals` with the request's id, in
-- the same transaction: it is delivered when, and only if, that transaction commits.
CREATE FUNCTION registry_approvals_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('registry_approvals', NEW.id);
    RETURN NULL;
END
$$;

CREATE TRIGGER registry_approvals_notify
    AFTER UPDATE ON registry_approvals
    FOR EACH ROW
    WHEN (OLD.* IS DISTINCT FROM NEW.*)
    EXECUTE FUNCTION registry_approvals_notify();
