-- Version 13: the database is not the authority. Replicas connect with a role that can do a
-- replica's work and nothing more; operators (`registry-admin`) with a role of their own.
--
-- The two roles are cluster-wide in PostgreSQL, so their names are kept here, per database:
-- derived from the database's name (`<database>_replica`, `<database>_admin`) unless
-- `registry-admin init-roles --replica-role R --admin-role A` named them. Their grants are
-- written in src/roles.rs and applied after every migration (so a table created by a later
-- migration gets its grants too) and by `registry-admin init-roles`. A role that does not
-- exist yet is created (NOLOGIN) when the migrating user may create roles; login roles are
-- made members of it (`GRANT <database>_replica TO api_1`).
CREATE TABLE registry_roles (
    kind text PRIMARY KEY CHECK (kind IN ('replica', 'admin')),
    role text NOT NULL
);

-- The definition an upstream offers, as JSON text, for the operator to review before
-- accepting it (`registry-admin upstream list`); NULL when the replica did not report it.
ALTER TABLE upstream_offers ADD COLUMN offered text;
