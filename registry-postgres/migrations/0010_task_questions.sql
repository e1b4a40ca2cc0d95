-- The questions a running task's tool asks its caller (`registry_core::task::TaskQuestion`,
-- answered or not yet), as JSON in `bytea` like the other columns of a task: any replica
-- shows them on `tasks/get` and any replica may answer them; the replica that runs the task
-- takes the answers. NULL: none.
ALTER TABLE registry_tasks ADD COLUMN questions bytea;
