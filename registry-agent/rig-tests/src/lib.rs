//! registry-agent's rig adapter (`registry_agent::rig`) tested with rig's own agent: see
//! `tests/rig.rs`. Nothing here; a package of its own so that rig-core's serde_json features
//! stay out of the main workspace.
