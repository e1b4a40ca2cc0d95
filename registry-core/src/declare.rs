//! Step 1, **declare**: what a tool is made of. `#[tool]` writes a static
//! [`Declaration`](declaration::Declaration) (a tool built at run time is a
//! [`DynamicTool`](crate::DynamicTool), in `register/dynamic.rs`). Each has a definition (name,
//! description, parameters schema), settings (scopes, tenants, hints, gate flags) and the place
//! it was declared; a build's problems ([`RegistryError`](error::RegistryError)) name them.

pub(crate) mod declaration;
pub(crate) mod definition;
pub(crate) mod error;
pub(crate) mod header;
pub(crate) mod link;
pub(crate) mod name;
pub(crate) mod schema;
pub(crate) mod settings;
pub(crate) mod source;
