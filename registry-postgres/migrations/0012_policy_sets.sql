-- Version 12: Cedar policy sets pushed to every replica (`registry-admin policy push DIR`,
-- `ControlPlane::push_policies`).
--
-- A pushed set is kept whole, as named texts (file name, Cedar text), in name order, with its
-- SHA-256 digest: `generation` numbers the sets in the order they were pushed, assigned under
-- the same advisory lock as the changes' `seq`, and the push records a change of kind
-- `policies` naming that generation in the same transaction, so that the change feed carries
-- it to every replica. Each replica gives the newest set to the validation its application
-- installed (`ChangeFeed::on_policies`) and reports what it did in `registry_policy_status`:
-- applied, or refused with the reason (it keeps the set it ran). Old sets are history;
-- `ControlPlane::prune_policy_sets` keeps the newest N.
ALTER TABLE registry_changes DROP CONSTRAINT registry_changes_kind_check;
ALTER TABLE registry_changes ADD CONSTRAINT registry_changes_kind_check
    CHECK (kind IN ('revoke', 'restore', 'replace', 'policies'));
-- For a change of kind `policies`: the generation of the policy set it pushed.
ALTER TABLE registry_changes ADD COLUMN policies bigint;

CREATE TABLE registry_policy_sets (
    generation bigint      PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT now(),
    -- [{"name": "base.cedar", "text": "permit (...);"}, ...], in name order.
    files      jsonb       NOT NULL CHECK (jsonb_typeof(files) = 'array'),
    -- SHA-256 of the files in name order, in lowercase hexadecimal (see src/policies.rs).
    digest     text        NOT NULL,
    -- Who pushed it: a replica's name, or `registry-admin` and the operator's user.
    origin     text        NOT NULL
);

-- What each replica did with the newest set it was given: one row per replica, replaced by
-- each report.
CREATE TABLE registry_policy_status (
    replica    text        PRIMARY KEY,
    generation bigint      NOT NULL,
    outcome    text        NOT NULL CHECK (outcome IN ('applied', 'refused')),
    -- Why it was refused (NUL written as `\u{0}`).
    error      text,
    -- The generation the replica runs: the one it applied last, if any.
    running    bigint,
    at         timestamptz NOT NULL DEFAULT now()
);
