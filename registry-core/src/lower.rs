//! Lowering: from a tool's canonical parameters schema to what one profile accepts.
//!
//! STUB: to be written (see the module docs of `profile`). Every rule of a profile that the
//! canonical schema breaks is either rewritten (inlining `$defs`, closing objects, strict
//! required-plus-nullable, `oneOf` to `anyOf`, nullable encodings, ...) or, for a constraint
//! the profile cannot express, moved into the description text (it is still enforced when
//! the call arrives, against the canonical schema). What cannot be expressed at all (a
//! recursive type where `$ref` is not allowed) is an [`Incompatibility`].

use serde_json::Value;

use crate::profile::{Incompatibility, Profile};

/// The parameters schema of the tool `tool` as `profile` takes it.
pub(crate) fn lower(
    profile: Profile,
    tool: &str,
    parameters: &Value,
) -> Result<Value, Vec<Incompatibility>> {
    let _ = (profile, tool);
    Ok(parameters.clone())
}
