//! A tool in a registry: its definition, settings and source. It runs only through a run.

use crate::execute::inline::InlineRecord;
use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::declare::declaration::{Declaration, Execute, Outcome, Param, RunToken};
use crate::declare::definition::ToolDefinition;
use crate::declare::schema;
use crate::declare::settings::ToolSettings;
use crate::declare::source::Source;
use crate::host::context::ToolContext;
use crate::resolve::arguments::Arguments;
use crate::resolve::checked::CheckedArguments;
use crate::resolve::shape::Shape;
use crate::resolve::validate::ArgumentValidator;
use crate::shared::fingerprint::Fingerprint;
use crate::shared::future::BoxFuture;
use crate::shared::profile::{Incompatibility, Profile};
use crate::shared::tool_error::ToolError;

/// A registered tool.
///
/// Cheap to clone (it is shared). Its definition and the compiled validator of its arguments
/// are built the first time they are needed, once.
#[derive(Clone)]
pub struct Tool(Arc<ToolInner>);

struct ToolInner {
    name: Cow<'static, str>,
    description: Cow<'static, str>,
    title: Option<Cow<'static, str>>,
    settings: ToolSettings,
    source: Source,
    parameters: Parameters,
    /// A dynamic tool's parameters mirrored into HTTP headers (a declared tool's are in its
    /// parameters).
    headers: std::collections::BTreeMap<String, String>,
    output: Output,
    definition: OnceLock<Arc<ToolDefinition>>,
    output_schema: OnceLock<Option<Value>>,
    /// What exporting it computes, per profile: allocated the first time it is exported, so
    /// that a tool never exported (most of 10,000, in a run that sees a few) costs a pointer.
    exports: OnceLock<Box<Exports>>,
    fingerprint: OnceLock<Fingerprint>,
    version: OnceLock<Fingerprint>,
    validator: OnceLock<Result<ArgumentValidator, String>>,
    /// The top-level properties that are not required, for which `null` means absent.
    optional: OnceLock<Box<[String]>>,
    /// A declared tool's schema as the typed fast path reads it, if every keyword in it is
    /// one the fast check enforces exactly; decided once.
    shape: OnceLock<Option<Arc<Shape>>>,
    /// Whether the tool reads the context of a call (a `#[tool]` function without a
    /// `&ToolContext` parameter does not).
    context: bool,
    /// How long its last run on the pool took, in nanoseconds (saturating; 0: none yet): a
    /// caller of a tool that returns within microseconds waits for it without sleeping.
    recent: AtomicU32,
    /// Whether it has shown itself quick enough to run on its caller's task.
    inline: InlineRecord,
    handler: Handler,
}

/// What exporting a tool computes, once per profile.
#[derive(Default)]
struct Exports {
    /// The parameters schema lowered for each profile.
    lowered: [OnceLock<Result<Value, Vec<Incompatibility>>>; Profile::COUNT],
    /// The digest of the exported tool object, per profile; `None` where it cannot be exported.
    digests: [OnceLock<Option<String>>; Profile::COUNT],
    /// The exported tool object as JSON text, per profile; `None` where it cannot be exported.
    texts: [OnceLock<Option<Box<str>>>; Profile::COUNT],
}

/// Where the arguments schema comes from.
enum Parameters {
    /// Generated from a `#[tool]` function's parameter types, when first needed.
    Declared(&'static [Param]),
    /// Given as JSON (tools built at run time).
    Given(Value),
}

/// Where the result schema comes from.
enum Output {
    /// Generated from a `#[tool]` function's return type, when first needed.
    Declared(fn(&mut schemars::SchemaGenerator) -> Option<schemars::Schema>),
    /// Given as JSON (tools built at run time), or none.
    Given(Option<Value>),
}

/// How a tool runs.
#[derive(Clone)]
pub(crate) enum Handler {
    Declared(Execute),
    Sync(Arc<SyncHandler>),
    Async(Arc<AsyncHandler>),
}

/// The handler of a synchronous tool built at run time.
pub(crate) type SyncHandler = dyn Fn(&ToolContext, Value) -> Outcome + Send + Sync;

/// The handler of an async tool built at run time.
pub(crate) type AsyncHandler =
    dyn Fn(ToolContext, Value) -> BoxFuture<'static, Outcome> + Send + Sync;

/// The parts of a tool, checked by the registry builder before they become a [`Tool`].
pub(crate) struct ToolParts {
    pub(crate) name: Cow<'static, str>,
    pub(crate) description: Cow<'static, str>,
    pub(crate) title: Option<Cow<'static, str>>,
    pub(crate) settings: ToolSettings,
    pub(crate) source: Source,
    pub(crate) parameters: Value,
    /// Parameters mirrored into HTTP headers on MCP ([`DynamicTool::header`]).
    pub(crate) headers: std::collections::BTreeMap<String, String>,
    pub(crate) output_schema: Option<Value>,
    pub(crate) validator: ArgumentValidator,
    pub(crate) handler: Handler,
}

impl Tool {
    /// The tool of a `#[tool]` declaration, whose scopes were checked at compile time.
    pub(crate) fn declared(declaration: &'static Declaration, settings: ToolSettings) -> Self {
        Tool(Arc::new(ToolInner {
            name: Cow::Borrowed(declaration.name),
            description: Cow::Borrowed(declaration.description),
            title: declaration.title.map(Cow::Borrowed),
            settings,
            source: declaration.location,
            parameters: Parameters::Declared(declaration.params),
            headers: Default::default(),
            output: Output::Declared(declaration.output),
            definition: OnceLock::new(),
            output_schema: OnceLock::new(),
            exports: OnceLock::new(),
            fingerprint: OnceLock::new(),
            version: OnceLock::new(),
            validator: OnceLock::new(),
            optional: OnceLock::new(),
            shape: OnceLock::new(),
            context: declaration.context,
            recent: AtomicU32::new(0),
            inline: InlineRecord::default(),
            handler: Handler::Declared(declaration.execute),
        }))
    }

    /// A tool built at run time, already checked.
    pub(crate) fn from_parts(parts: ToolParts) -> Self {
        Tool(Arc::new(ToolInner {
            name: parts.name,
            description: parts.description,
            title: parts.title,
            settings: parts.settings,
            source: parts.source,
            parameters: Parameters::Given(parts.parameters),
            headers: parts.headers,
            output: Output::Given(parts.output_schema),
            definition: OnceLock::new(),
            output_schema: OnceLock::new(),
            exports: OnceLock::new(),
            fingerprint: OnceLock::new(),
            version: OnceLock::new(),
            validator: OnceLock::from(Ok(parts.validator)),
            optional: OnceLock::new(),
            shape: OnceLock::new(),
            context: true,
            recent: AtomicU32::new(0),
            inline: InlineRecord::default(),
            handler: parts.handler,
        }))
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// What a model is shown: name, description, title and arguments schema.
    ///
    /// Built the first time it is asked for, then shared.
    pub fn definition(&self) -> Arc<ToolDefinition> {
        self.definition_ref().clone()
    }

    pub(crate) fn definition_ref(&self) -> &Arc<ToolDefinition> {
        self.0.definition.get_or_init(|| {
            let parameters = match &self.0.parameters {
                Parameters::Declared([]) => schema::empty_parameters_schema(),
                Parameters::Declared(params) => schema::parameters_schema(params),
                Parameters::Given(schema) => schema.clone(),
            };
            let headers = match &self.0.parameters {
                Parameters::Declared(params) => params
                    .iter()
                    .filter_map(|param| Some((param.name.to_owned(), param.header?.to_owned())))
                    .collect(),
                Parameters::Given(_) => self.0.headers.clone(),
            };
            Arc::new(ToolDefinition {
                name: self.0.name.to_string(),
                description: self.0.description.to_string(),
                title: self.0.title.as_deref().map(str::to_owned),
                parameters,
                headers,
            })
        })
    }

    /// A stable fingerprint of what a model is shown of the tool (its definition and its
    /// behaviour hints): it changes whenever that does. The fingerprint of a run's allowed
    /// set is made of these. What would run, scopes and gate flags included, is
    /// [`version_fingerprint`](Self::version_fingerprint).
    pub fn fingerprint(&self) -> Fingerprint {
        *self.0.fingerprint.get_or_init(|| {
            let shown = (&**self.definition_ref(), &self.0.settings.hints);
            // A definition is strings and JSON values: it always serializes.
            let json = serde_json::to_vec(&shown).unwrap_or_default();
            Fingerprint::of_bytes(&json)
        })
    }

    /// A stable fingerprint of this version of the tool: its definition, its output schema
    /// and its whole [`ToolSettings`] (scopes, tenants, behaviour hints, and every gate flag:
    /// `needs_approval`, `rate_limit`, `timeout`, and also `namespace`, `always_loaded` and
    /// `allow_description`, which change what is shown where and what was checked). Two
    /// versions that differ in any of these differ here, even when a model is shown the
    /// same ([`fingerprint`](Self::fingerprint)).
    ///
    /// It is what call, approval and projection events record of the tool that ran or was
    /// shown, what an [`ApprovalRequest`](crate::approval::ApprovalRequest) is bound to, and what the
    /// PostgreSQL control plane compares replacements by. It does not cover the handler
    /// (code has no stable identity), nor the registry's own settings (its default rate
    /// limit, call and access policies), which are not the tool's.
    ///
    /// ```
    /// use registry_core::{DynamicTool, Registry};
    /// use serde_json::json;
    ///
    /// let tool = |scope: &str| {
    ///     DynamicTool::new("ping", "Answer pong.")
    ///         .scopes([scope])
    ///         .handler(|_, _| Ok::<_, String>(json!("pong")))
    /// };
    /// let a = Registry::builder().tool(tool("ops:read")).build()?.get("ping").unwrap();
    /// let b = Registry::builder().tool(tool("ops:admin")).build()?.get("ping").unwrap();
    /// assert_eq!(a.fingerprint(), b.fingerprint()); // the model is shown the same
    /// assert_ne!(a.version_fingerprint(), b.version_fingerprint()); // not the same tool
    /// # Ok::<(), registry_core::RegistryError>(())
    /// ```
    pub fn version_fingerprint(&self) -> Fingerprint {
        *self.0.version.get_or_init(|| {
            #[derive(serde::Serialize)]
            struct Version<'a> {
                definition: &'a ToolDefinition,
                output_schema: Option<&'a Value>,
                // The name a version has been fingerprinted with since the first release: renamed,
                // every stored approval would be revoked.
                #[serde(rename = "policy")]
                settings: &'a ToolSettings,
            }
            let version = Version {
                definition: self.definition_ref(),
                output_schema: self.output_schema(),
                settings: &self.0.settings,
            };
            // Strings, numbers and JSON values: it always serializes.
            let json = serde_json::to_vec(&version).unwrap_or_default();
            Fingerprint::of_bytes(&json)
        })
    }

    /// Where [`Tool::digest`] keeps the digest for `profile` once computed.
    pub(crate) fn digest_cell(&self, profile: Profile) -> &OnceLock<Option<String>> {
        &self.exports().digests[profile.index()]
    }

    /// The JSON Schema of the result, when it is a structured type (an object): MCP's
    /// `outputSchema`. Derived from a `#[tool]` function's return type when that implements
    /// `JsonSchema`.
    pub fn output_schema(&self) -> Option<&Value> {
        self.0
            .output_schema
            .get_or_init(|| match &self.0.output {
                Output::Declared(output) => schema::output_schema(*output),
                Output::Given(schema) => schema.clone(),
            })
            .as_ref()
    }

    /// Where the exported tool object's JSON text for `profile` is kept once computed.
    pub(crate) fn text_cell(&self, profile: Profile) -> &OnceLock<Option<Box<str>>> {
        &self.exports().texts[profile.index()]
    }

    /// Where the parameters schema lowered for `profile` is kept once computed.
    pub(crate) fn lowered_cell(
        &self,
        profile: Profile,
    ) -> &OnceLock<Result<Value, Vec<Incompatibility>>> {
        &self.exports().lowered[profile.index()]
    }

    /// What exporting it computes, allocated when first needed.
    fn exports(&self) -> &Exports {
        self.0.exports.get_or_init(Box::default)
    }

    /// The name as stored: borrowed for declared tools, so that contexts need no copy.
    pub(crate) fn name_cow(&self) -> std::borrow::Cow<'static, str> {
        self.0.name.clone()
    }

    /// The scopes it requires and the behaviour hints it declares.
    pub fn settings(&self) -> &ToolSettings {
        &self.0.settings
    }

    /// Where it was declared.
    pub fn source(&self) -> Source {
        self.0.source
    }

    /// Whether the tool is `async` (an `async fn`, or a run-time tool with an async handler).
    pub fn is_async(&self) -> bool {
        matches!(
            self.0.handler,
            Handler::Async(_) | Handler::Declared(Execute::Async(_))
        )
    }

    /// Checks `arguments` against the tool's schema; the error lists every problem.
    pub fn validate(&self, arguments: &Value) -> Result<(), ToolError> {
        let validator = self
            .0
            .validator
            .get_or_init(|| ArgumentValidator::new(&self.definition_ref().parameters));
        let validator = validator.as_ref().map_err(|error| {
            ToolError::Failed(format!(
                "the tool {:?} cannot be called: its schema does not compile: {error}",
                self.name()
            ))
        })?;
        let problems = validator.problems(arguments);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ToolError::InvalidArguments(problems))
        }
    }

    /// Removed: a tool runs only through a run. This signature exists so that the compiler
    /// says what to write instead.
    #[doc(hidden)]
    #[allow(unreachable_code)] // no type implements `CallThroughARun`
    pub fn call<C: CallThroughARun>(
        &self,
        ctx: C,
        _arguments: Value,
    ) -> std::future::Ready<Outcome> {
        match ctx.never() {}
    }

    /// Removed: a tool runs only through a run. This signature exists so that the compiler
    /// says what to write instead.
    #[doc(hidden)]
    #[allow(unreachable_code)] // no type implements `CallThroughARun`
    pub fn call_blocking<C: CallThroughARun>(&self, ctx: C, _arguments: Value) -> Outcome {
        match ctx.never() {}
    }

    /// Treats `null` for an optional top-level argument as absent, as strict-mode models
    /// send it; done before validation.
    pub(crate) fn normalize(&self, arguments: &mut Value) {
        let optional = self.0.optional.get_or_init(|| {
            crate::resolve::validate::optional_properties(&self.definition_ref().parameters)
        });
        if let (false, Value::Object(arguments)) = (optional.is_empty(), arguments) {
            for name in optional {
                if arguments.get(name).is_some_and(Value::is_null) {
                    arguments.remove(name);
                }
            }
        }
    }

    /// Whether the tool reads the context of its calls: a `#[tool]` function that takes a
    /// `&ToolContext` (its id, cancellation, and the host it may ask questions, sample or
    /// report progress through), or a [`DynamicTool`](crate::DynamicTool), whose handler
    /// always takes one. A tool that does not needs nothing of its caller but the arguments:
    /// a transport may answer its calls without the channel back to the client (the MCP HTTP
    /// server does so for synchronous ones).
    ///
    /// ```standalone_crate
    /// use registry_core::{Registry, ToolContext, tool};
    ///
    /// /// Adds two numbers.
    /// #[tool(public)]
    /// fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// /// Says who called.
    /// #[tool(public)]
    /// fn whoami(ctx: &ToolContext) -> String {
    ///     ctx.call_id().to_owned()
    /// }
    ///
    /// let registry = Registry::builder().declared_in([module_path!()]).build()?;
    /// assert!(!registry.get("add").unwrap().uses_context());
    /// assert!(registry.get("whoami").unwrap().uses_context());
    /// # Ok::<(), registry_core::RegistryError>(())
    /// ```
    pub fn uses_context(&self) -> bool {
        self.0.context
    }

    /// Whether it has shown itself quick enough to run on its caller's task.
    pub(crate) fn inline_record(&self) -> &InlineRecord {
        &self.0.inline
    }

    /// How long the tool's last run on the registry's pool took, if it has run there.
    pub(crate) fn recent_run(&self) -> Option<Duration> {
        match self.0.recent.load(Ordering::Relaxed) {
            0 => None,
            nanos => Some(Duration::from_nanos(u64::from(nanos))),
        }
    }

    /// Notes how long a run on the pool took (at least a nanosecond, at most about 4 s).
    pub(crate) fn note_run(&self, took: Duration) {
        let nanos = u32::try_from(took.as_nanos()).unwrap_or(u32::MAX).max(1);
        self.0.recent.store(nanos, Ordering::Relaxed);
    }

    /// The typed fast path's reading of the arguments schema, for a `#[tool]` function whose
    /// schema uses only keywords that the fast check enforces exactly (decided the first time
    /// it is asked, once); `None` keeps the tool on the slow path (a `Value` and jsonschema).
    /// Tools built at run time take a `Value`, so they have none.
    pub(crate) fn shape(&self) -> Option<&Arc<Shape>> {
        self.0
            .shape
            .get_or_init(|| match self.0.handler {
                Handler::Declared(_) => {
                    Shape::compile(&self.definition_ref().parameters).map(Arc::new)
                }
                Handler::Sync(_) | Handler::Async(_) => None,
            })
            .as_ref()
    }

    /// Runs a synchronous tool now, or starts an async one, with arguments already validated.
    pub(crate) fn invoke(&self, ctx: ToolContext, arguments: CheckedArguments) -> Invocation {
        let declared = |arguments| match arguments {
            CheckedArguments::Fast { fast, .. } => Arguments::fast(fast),
            CheckedArguments::Value(value) => Arguments::new(object(value)),
        };
        match &self.0.handler {
            Handler::Declared(Execute::Sync(execute)) => {
                Invocation::Done(execute(&ctx, declared(arguments), RunToken::new()))
            }
            Handler::Declared(Execute::Async(execute)) => {
                Invocation::Pending(execute(ctx, declared(arguments), RunToken::new()))
            }
            Handler::Sync(handler) => Invocation::Done(handler(&ctx, arguments.into_value())),
            Handler::Async(handler) => Invocation::Pending(handler(ctx, arguments.into_value())),
        }
    }
}

/// Implemented by nothing: `Tool::call` and `Tool::call_blocking` cannot be called, and the
/// compiler's message says how to call a tool instead.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a tool cannot be called directly: every execution goes through a run",
    label = "`Tool::call` and `Tool::call_blocking` were removed",
    note = "open a run for the subject, then call the tool in it: `registry.open_run(run_id, &subject).call_blocking(ToolCall::new(call_id, name, arguments))`, or `.call(..).await`",
    note = "a run checks the allowed set, revocation, readiness, the arguments and the call policy before the tool runs"
)]
pub trait CallThroughARun: sealed::Sealed {
    #[doc(hidden)]
    fn never(self) -> std::convert::Infallible;
}

mod sealed {
    pub trait Sealed {}
}

/// A started tool: finished (synchronous tools), or a future to drive.
pub(crate) enum Invocation {
    Done(Outcome),
    Pending(BoxFuture<'static, Outcome>),
}

/// The arguments object; validation has made sure it is one.
fn object(arguments: Value) -> serde_json::Map<String, Value> {
    match arguments {
        Value::Object(object) => object,
        _ => serde_json::Map::new(),
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.0.name)
            .field("settings", &self.0.settings)
            .field("source", &self.0.source)
            .finish_non_exhaustive()
    }
}
