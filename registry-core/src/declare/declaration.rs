//! The static record that `#[tool]` submits to the registration list.
//!
//! Generated code builds these; applications read tools through [`Registry`] instead.
//!
//! [`Registry`]: crate::Registry

use schemars::{Schema, SchemaGenerator};

use crate::content::Payload;
use crate::declare::source::Source;
use crate::host::context::ToolContext;
use crate::resolve::arguments::Arguments;
use crate::shared::future::BoxFuture;
use crate::shared::hints::Hints;
use crate::shared::tool_error::ToolError;

/// What running a tool gives: its result (a JSON value, content, or both), or why there is
/// none.
pub type Outcome = Result<Payload, ToolError>;

/// One `#[tool]` function, as the macro declares it.
#[doc(hidden)]
#[derive(Debug)]
pub struct Declaration {
    pub name: &'static str,
    pub description: &'static str,
    pub title: Option<&'static str>,
    /// Why the description lint is overridden (`allow_description = "..."`).
    pub allow_description: Option<&'static str>,
    pub scopes: &'static [&'static str],
    pub tenants: &'static [&'static str],
    /// Visible to every subject of every tenant, on purpose (`public`): a tool with no
    /// scopes and no tenants must say so.
    pub public: bool,
    pub timeout: Option<std::time::Duration>,
    /// Every call waits for a person's approval (`needs_approval`).
    pub needs_approval: bool,
    /// Calls per subject and period (`rate_limit = "10/min"`).
    pub rate_limit: Option<crate::shared::rate_limit::RateLimit>,
    pub hints: Hints,
    /// The namespace (`namespace = "builds"`); `None`: derived from the first scope.
    pub namespace: Option<&'static str>,
    /// In every deferred session's first request (`always_loaded`).
    pub always_loaded: bool,
    /// Long-running: may be started as a task (`task`).
    pub task: bool,
    /// Only as a task (`task = "required"`).
    pub task_required: bool,
    /// A synchronous function that returns at once, run on the caller's task
    /// (`non_blocking`).
    pub non_blocking: bool,
    /// A synchronous function that may block, always run on the pool (`blocking`).
    pub blocking: bool,
    /// The attribute values the tool is for, per key (`attributes(key = "v" | ["v", ...])`).
    pub attributes: &'static [(&'static str, &'static [&'static str])],
    /// A needs-approval tool code may call (`callable_from_code`).
    pub callable_from_code: bool,
    pub params: &'static [Param],
    /// The function takes a `&ToolContext`: a call to one that does not needs no context of
    /// its own.
    pub context: bool,
    /// The schema of the result, when its type has one.
    pub output: fn(&mut SchemaGenerator) -> Option<Schema>,
    pub execute: Execute,
    pub location: Source,
}

/// One parameter of a `#[tool]` function that the model gives (the context is not one).
#[doc(hidden)]
#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    pub description: Option<&'static str>,
    pub required: bool,
    pub schema: fn(&mut SchemaGenerator) -> Schema,
    /// The HTTP header it is mirrored into on MCP (`#[header("Region")]`), if any.
    pub header: Option<&'static str>,
}

/// The generated executor of a `#[tool]` function.
///
/// Both forms take a [`RunToken`], which only registry-core can make, and [`Arguments`],
/// which only registry-core can make too: a program that finds a declaration cannot run
/// its tool outside a run.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum Execute {
    Sync(for<'run> fn(&ToolContext, Arguments, RunToken<'run>) -> Outcome),
    Async(for<'run> fn(ToolContext, Arguments, RunToken<'run>) -> BoxFuture<'static, Outcome>),
}

/// The proof that a run is calling an executor. Its field is private and it has no public
/// constructor, so only registry-core makes one, when a run has resolved, gated and admitted
/// a call; its lifetime is that one call's, so an executor cannot keep it for later.
#[doc(hidden)]
pub struct RunToken<'run>(std::marker::PhantomData<&'run mut ()>);

impl RunToken<'_> {
    /// Made by the run that executes a call, for that call only.
    pub(crate) fn new() -> Self {
        RunToken(std::marker::PhantomData)
    }
}

impl std::fmt::Debug for RunToken<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunToken")
    }
}

inventory::collect!(Declaration);

/// Every `#[tool]` linked into this program, in no particular order.
pub(crate) fn declarations() -> impl Iterator<Item = &'static Declaration> {
    inventory::iter::<Declaration>.into_iter()
}
