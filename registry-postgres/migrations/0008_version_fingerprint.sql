-- Version fingerprints: a replacement names the versions it replaced and installed.
--
-- `fingerprint` and `old_fingerprint` are what a model is shown (definition and hints); two
-- versions that differ in scopes, tenants or gate flags only are shown alike. `version` and
-- `old_version` are `Tool::version_fingerprint`, which covers those too: replicas compare a
-- replacement by them. Rows recorded before this have none, and are compared as before.
ALTER TABLE registry_changes ADD COLUMN version text, ADD COLUMN old_version text;
