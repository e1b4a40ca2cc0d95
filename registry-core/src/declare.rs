//! Step 1, **declare**: what a tool is made of. `#[tool]` writes a static
//! [`Declaration`](declaration::Declaration); [`DynamicTool`](dynamic::DynamicTool) builds one at
//! run time. Each has a definition (name, description, parameters schema), a policy (scopes,
//! tenants, hints, gate flags) and the place it was declared.

pub(crate) mod declaration;
pub(crate) mod definition;
pub(crate) mod error;
pub(crate) mod header;
pub(crate) mod link;
pub(crate) mod name;
pub(crate) mod schema;
pub(crate) mod settings;
pub(crate) mod source;
