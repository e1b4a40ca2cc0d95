//! What a running tool knows about the call it serves.

use std::any::Any;
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use crate::discover::subject::Subject;
use crate::register::state::AppState;

/// The context of one call, given to any tool that takes a `&ToolContext` parameter: the run,
/// the call, the subject (tenant and scopes) and the application's shared state.
///
/// It is left out of the tool's schema: the model never sees or sets it.
///
/// ```
/// use registry_core::{tool, ToolContext};
///
/// /// Say which call this is.
/// #[tool]
/// fn whoami(ctx: &ToolContext) -> String {
///     format!("{} for {} in call {}", ctx.tool_name(), ctx.tenant(), ctx.call_id())
/// }
/// ```
#[derive(Debug, Clone)]
pub struct ToolContext {
    scope: Arc<RunScope>,
    call_id: Arc<str>,
    tool_name: Cow<'static, str>,
}

/// What every call of one run shares.
#[derive(Debug)]
pub(crate) struct RunScope {
    pub(crate) run_id: Arc<str>,
    pub(crate) subject: Subject,
    pub(crate) state: AppState,
}

impl RunScope {
    /// The scope of calls made outside any run: no tenant, no scopes, no state.
    fn detached() -> Arc<RunScope> {
        static DETACHED: OnceLock<Arc<RunScope>> = OnceLock::new();
        DETACHED
            .get_or_init(|| {
                Arc::new(RunScope {
                    run_id: Arc::from(""),
                    subject: Subject::new(""),
                    state: AppState::default(),
                })
            })
            .clone()
    }
}

impl ToolContext {
    /// The context of call `call_id` to the tool `tool_name`, outside any run (no tenant, no
    /// scopes, no application state): for unit tests that call a `#[tool]` function as the
    /// plain Rust function it still is. A registered tool runs only through a
    /// [`Run`](crate::Run), which gives its calls their real context.
    pub fn new(call_id: impl Into<Arc<str>>, tool_name: impl Into<String>) -> Self {
        ToolContext {
            scope: RunScope::detached(),
            call_id: call_id.into(),
            tool_name: Cow::Owned(tool_name.into()),
        }
    }

    pub(crate) fn in_run(
        scope: Arc<RunScope>,
        call_id: Arc<str>,
        tool_name: Cow<'static, str>,
    ) -> Self {
        ToolContext {
            scope,
            call_id,
            tool_name,
        }
    }

    /// The run's id (empty outside a run).
    pub fn run_id(&self) -> &str {
        &self.scope.run_id
    }

    /// The id the model gave the call (OpenAI `tool_call_id`, Anthropic `tool_use_id`, ...).
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The name of the tool being called.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// The subject the run acts for.
    pub fn subject(&self) -> &Subject {
        &self.scope.subject
    }

    /// The subject's tenant: scope data access by it.
    pub fn tenant(&self) -> &str {
        self.scope.subject.tenant()
    }

    /// Whether the subject was granted `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scope.subject.has_scope(scope)
    }

    /// The application state of type `T` registered with
    /// [`RegistryBuilder::state`](crate::RegistryBuilder::state), if any.
    pub fn state<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.scope.state.get::<T>()
    }
}
