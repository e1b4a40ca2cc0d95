-- Version 14: which replicas are alive, for the policy status (`registry-admin policy show`,
-- `policy push --wait`) and for the retention.
--
-- A replica whose feed validates policy sets refreshes `seen_at` while it runs (every 20
-- heartbeats, at most every 20 s); a row not refreshed within `POLICY_STATUS_TTL` (60 s) is a
-- dead replica's (by default a replica is named `host-pid`, so each restart leaves one), and
-- the retention deletes it once `seen_at` is older than its cutoff. A live replica's row is
-- never deleted, however long ago it reported.
ALTER TABLE registry_policy_status ADD COLUMN seen_at timestamptz NOT NULL DEFAULT now();
