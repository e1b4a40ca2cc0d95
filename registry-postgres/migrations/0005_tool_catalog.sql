-- Version 5: which tools the replicas have.
--
-- Each replica records its tools' names and fingerprints when it starts following the change
-- feed, so that `registry-admin revoke` can refuse a name no replica has (a typo during an
-- incident would otherwise be recorded, and the real tool would stay live).
CREATE TABLE registry_tools (
    replica     text        NOT NULL,
    tool        text        NOT NULL,
    fingerprint text        NOT NULL,
    seen_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (replica, tool)
);
CREATE INDEX registry_tools_tool ON registry_tools (tool);
