//! What a tool is declared with, besides its [`ToolDefinition`](crate::ToolDefinition): its
//! settings (scopes, tenants, hints, gate flags), where it was declared, and the rule its
//! name follows.

pub use crate::declare::declaration::Outcome;
pub use crate::declare::header::{MAX_HEADER_NAME, check_header_name};
pub use crate::declare::name::{MAX_NAME_LEN, NameError, check_tool_name};
pub use crate::declare::settings::{Scope, ScopeError, ToolSettings};
pub use crate::declare::source::Source;
pub use crate::shared::future::BoxFuture;
pub use crate::shared::hints::Hints;
