//! What a tool requires and promises: scopes and behaviour hints.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Serialize, Serializer};

use crate::shared::hints::Hints;
use crate::shared::rate_limit::RateLimit;

/// A permission a subject must hold to use a tool, such as `build:read`.
///
/// A scope is one or more non-empty segments of ASCII letters, digits, `_`, `.` and `-`,
/// joined by `:`. Scopes are compared exactly; there are no wildcards.
///
/// ```
/// use registry_core::definition::Scope;
///
/// let scope: Scope = "deploy:write".parse().unwrap();
/// assert_eq!(scope.as_str(), "deploy:write");
/// assert!("deploy::write".parse::<Scope>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Scope(Cow<'static, str>);

impl Scope {
    /// Checks `scope` and makes a [`Scope`] of it.
    pub fn new(scope: impl Into<Cow<'static, str>>) -> Result<Self, ScopeError> {
        let scope = scope.into();
        if scope.split(':').any(str::is_empty) {
            return Err(ScopeError(format!(
                "the scope {scope:?} has an empty segment; write segments joined by `:`, e.g. `build:read`"
            )));
        }
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | ':');
        if let Some(bad) = scope.chars().find(|c| !allowed(*c)) {
            return Err(ScopeError(format!(
                "the scope {scope:?} contains `{bad}`; a scope uses ASCII letters, digits, `_`, `.` and `-`, with `:` between segments"
            )));
        }
        Ok(Scope(scope))
    }

    /// The scope as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Scope {
    type Err = ScopeError;

    fn from_str(scope: &str) -> Result<Self, Self::Err> {
        Scope::new(scope.to_owned())
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Scope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// A string that is not a valid [`Scope`]; the message says why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScopeError(String);

/// What a tool requires of a subject, and what it promises about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolSettings {
    /// The scopes a subject must hold, all of them, to see and call the tool.
    pub scopes: Vec<Scope>,
    /// The tenants whose subjects may see it; empty: every tenant.
    pub tenants: Vec<String>,
    /// The tool restricts nothing on purpose: every subject of every tenant may see and call
    /// it (`#[tool(public)]`, [`DynamicTool::public`](crate::DynamicTool::public)). A tool
    /// without scopes or tenants must say so; one with them cannot.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub public: bool,
    /// The behaviour hints.
    pub hints: Hints,
    /// How long a call may take before it is answered `TimedOut`; `None`: no limit of its
    /// own (a run's limit may still apply).
    #[serde(skip_serializing_if = "Option::is_none", with = "millis")]
    pub timeout: Option<Duration>,
    /// Every call waits for a person's approval before it runs (`needs_approval`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub needs_approval: bool,
    /// At most this many calls per subject and period (`rate_limit = "10/min"`); `None`: the
    /// registry's default limit, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// Why the description lint (but its secret rules) and the tenant-data rule
    /// ([`BuildProblem::TenantInText`](crate::BuildProblem::TenantInText)) do not apply to
    /// this tool: the reason given with `#[tool(allow_description = "...")]` or
    /// [`DynamicTool::allow_description`](crate::DynamicTool::allow_description), written to
    /// the lock file ([`Registry::lock`](crate::Registry::lock)) for review; `None` when its
    /// texts passed them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_description: Option<Cow<'static, str>>,
    /// The group the tool is shown in where a provider groups deferred tools (OpenAI's
    /// namespaces): `#[tool(namespace = "builds")]` or
    /// [`DynamicTool::namespace`](crate::DynamicTool::namespace), else the first scope's
    /// first segment (`builds` for `builds:read`, a `.` written as `_`), else none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<Cow<'static, str>>,
    /// The tool is in every deferred session's first request, not found by search
    /// (`#[tool(always_loaded)]`, [`DynamicTool::always_loaded`](crate::DynamicTool::always_loaded)).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub always_loaded: bool,
    /// The tool is long-running: a caller may start it as a task and follow it
    /// ([`Run::start_task`](crate::Run::start_task); over MCP, the tasks extension), instead of
    /// waiting for its answer (`#[tool(task)]`, [`DynamicTool::task`](crate::DynamicTool::task)).
    /// It can still be called as an ordinary call.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub task: bool,
    /// The tool runs only as a task (`#[tool(task = "required")]`,
    /// [`DynamicTool::task_required`](crate::DynamicTool::task_required); implies
    /// [`task`](Self::task)): over MCP, a `tools/call` from a client that did not declare the
    /// tasks extension is refused with -32021 (missing required client capability) rather
    /// than run as an ordinary call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub task_required: bool,
    /// The tool is synchronous and returns at once, without blocking: an async call
    /// ([`Run::call`](crate::Run::call)) runs it on the caller's task, as it would an
    /// `async fn`, instead of on a thread of the registry's pool (`#[tool(non_blocking)]`,
    /// [`DynamicTool::non_blocking`](crate::DynamicTool::non_blocking)). That saves the two
    /// thread wake-ups of the hop to the pool and back, about 14 µs of CPU per call, which
    /// is most of the cost of calling a small function. A deadline cannot interrupt it: a
    /// call that returns past its deadline is answered `TimedOut`, its result discarded.
    /// Always `false` for an async tool, which never runs on the pool.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub non_blocking: bool,
    /// The tool is synchronous and may block (`#[tool(blocking)]`): an async call always runs
    /// it on a thread of the registry's pool. Without it, a synchronous `#[tool]` function
    /// that takes no `&ToolContext` runs on its caller's task once it has shown itself quick
    /// (its runs on the pool within 50 µs). An inline run over 50 µs sends that version of it
    /// back to the pool, in every registry of the process, for a time that doubles with each
    /// such run (100 ms, 200 ms, 400 ms... at most an hour), and one over 5 ms (a stall) for good: at
    /// most one stall of its caller's worker per tool version per process; see the guide's
    /// `call.md`, "Async and blocking". Tools built at run time
    /// ([`DynamicTool`](crate::DynamicTool)) run on the pool unless `non_blocking`. Always
    /// `false` for an async tool.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocking: bool,
    /// The attribute values the tool is for, per key (`#[tool(attributes(environment =
    /// ["staging", "production"]))]`, [`DynamicTool::attribute`](crate::DynamicTool::attribute)):
    /// a subject sees it only if, for every key, its value is one of those listed. Empty: no
    /// attribute restricts it.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub attributes: std::collections::BTreeMap<String, Vec<String>>,
    /// Code the model wrote (a provider's programmatic tool calling) may call the tool even
    /// though its calls wait for a person's approval (`#[tool(callable_from_code)]`,
    /// [`DynamicTool::callable_from_code`](crate::DynamicTool::callable_from_code)). Without
    /// it, such a call from code is refused: code cannot pause for a person.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub callable_from_code: bool,
}

mod millis {
    use std::time::Duration;

    use serde::Serializer;

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }
}

impl ToolSettings {
    /// A policy with no scopes and no hints.
    pub fn new() -> Self {
        ToolSettings::default()
    }

    /// Whether the tool was declared `public`: visible to every subject of every tenant,
    /// since it requires no scope and names no tenant. Hiding a tool is not authorization:
    /// a public tool must be safe for anyone to call.
    pub fn is_public(&self) -> bool {
        self.public
    }

    /// Whether the tool is declared `read_only`.
    pub fn is_read_only(&self) -> bool {
        self.hints.read_only
    }

    /// The first attribute key the tool declares whose listed values `subject` does not
    /// hold (a subject without the key holds none); `None` when every key admits it.
    pub fn attribute_hiding(&self, subject: &crate::Subject) -> Option<&str> {
        self.attributes.iter().find_map(|(key, listed)| {
            let admitted = subject
                .attribute(key)
                .is_some_and(|value| value.is_one_of(listed));
            (!admitted).then_some(key.as_str())
        })
    }

    /// Whether subjects of `tenant` may see the tool.
    pub fn admits_tenant(&self, tenant: &str) -> bool {
        self.tenants.is_empty() || self.tenants.iter().any(|t| t == tenant)
    }
}

/// The namespace of a tool that names none: the first segment of its first scope, with `.`
/// written as `_`, if that is a valid namespace (see [`check_namespace`]).
pub(crate) fn default_namespace(scopes: &[Scope]) -> Option<Cow<'static, str>> {
    let first = scopes.first()?.as_str();
    let segment = first.split(':').next().unwrap_or(first).replace('.', "_");
    check_namespace(&segment)
        .is_ok()
        .then_some(Cow::Owned(segment))
}

/// Why `namespace` is not a valid namespace, if it is not. A namespace follows the rule of
/// tool names that every provider accepts, `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`, since OpenAI
/// shows it to the model as a name.
pub(crate) fn check_namespace(namespace: &str) -> Result<(), String> {
    crate::declare::name::check_tool_name(namespace)
        .map_err(|error| error.to_string().replacen("tool name", "namespace", 1))
}

/// Every problem of a tool's declared attributes: keys by the key rule, values by the text
/// rule (no NUL, control, bidi or format character), no key without values, no value twice,
/// and the limits on keys and values.
pub(crate) fn attribute_problems<'a>(
    attributes: impl ExactSizeIterator<Item = (&'a str, &'a [String])>,
) -> Vec<String> {
    use crate::shared::attribute::{
        MAX_ATTRIBUTE_VALUES, MAX_TOOL_ATTRIBUTES, check_attribute_key, check_attribute_text,
    };
    let mut problems = Vec::new();
    if attributes.len() > MAX_TOOL_ATTRIBUTES {
        problems.push(format!(
            "declares {} attribute keys (at most {MAX_TOOL_ATTRIBUTES})",
            attributes.len()
        ));
    }
    for (key, values) in attributes {
        if let Err(reason) = check_attribute_key(key) {
            problems.push(reason);
        }
        let key = registry_lint::escape(key);
        if values.is_empty() {
            problems.push(format!(
                "the attribute `{key}` lists no value, so no subject could see the tool; list the values it is for"
            ));
        }
        if values.len() > MAX_ATTRIBUTE_VALUES {
            problems.push(format!(
                "the attribute `{key}` lists {} values (at most {MAX_ATTRIBUTE_VALUES})",
                values.len()
            ));
        }
        for (i, value) in values.iter().enumerate() {
            if let Err(reason) = check_attribute_text(value) {
                problems.push(format!("attribute `{key}`: {reason}"));
            } else if values[..i].contains(value) {
                problems.push(format!(
                    "the attribute `{key}` lists {:?} twice; list each value once",
                    value
                ));
            }
        }
    }
    problems
}
