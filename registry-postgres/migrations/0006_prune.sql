-- Pruning (`registry-admin prune`, `ControlPlaneBuilder::retention`) keeps the newest
-- revocation or restoration of every tool: finding whether a later one exists, and a tool's
-- latest change, read this index.
CREATE INDEX registry_changes_tool_seq ON registry_changes (tool, seq);
