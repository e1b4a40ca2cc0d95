//! The registry the `call_text` and `mcp_server` targets call into: representative `#[tool]`
//! functions (strings, integers, floats, enums, nested structs, `Option`, `Vec`, a context
//! parameter, sync and async), a `DynamicTool` with a hand-written schema, a tool the subject
//! may not see, and the gate switched on: a call policy, a `needs_approval` tool, a rate limit
//! and a timeout.
//!
//! The tools never panic (a panicking tool is caught by the run on purpose, but libFuzzer's
//! panic hook would report it): arithmetic saturates, and nothing allocates in proportion to
//! a number the model sends.
//!
//! Included with `#[path]` by each target that needs it, so that the `#[tool]` registrations
//! are in the target's own binary (`Registry::builder().declared_in` finds them by module).

use std::sync::{Arc, Mutex, PoisonError};

use registry_core::{DynamicTool, Registry, Subject, ToolContext, tool, approval::{ApprovalRequest, ApprovalState, ApprovalStore, MemoryApprovalStore, Transition}, definition::BoxFuture, gate::{CallRequest, Decision, StoreError}};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Where a deployment goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Environment {
    /// Checks before release.
    Staging,
    /// Serving users.
    Production,
}

/// The state of a build.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BuildState {
    /// Waiting for a runner.
    Queued,
    /// Finished without errors.
    Passed,
    /// Finished with errors.
    Failed,
}

/// Who owns a build.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Owner {
    /// A display name.
    pub name: String,
    /// An e-mail address, if known.
    pub email: Option<String>,
}

/// A build record.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Build {
    /// The build number.
    pub number: u64,
    /// Its state.
    pub state: BuildState,
    /// Who started it.
    pub owner: Owner,
    /// Free-form labels.
    pub labels: Vec<String>,
    /// How long it took, in seconds.
    pub seconds: Option<f64>,
}

/// How to choose builds: an internally tagged enum (a `oneOf` in the schema).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Filter {
    /// Builds carrying a label.
    Label {
        /// The label.
        label: String,
    },
    /// Builds numbered within a range.
    Range {
        /// The smallest number.
        from: i64,
        /// The largest number.
        to: i64,
    },
    /// Every build.
    All,
}

/// Read the current build status of a project.
#[tool(scopes = "build:read", read_only)]
pub fn get_status(
    /// Project identifier, e.g. `web`.
    project: String,
    /// Include the last log lines.
    verbose: Option<bool>,
) -> Result<String, String> {
    match project.as_str() {
        "web" => Ok(if verbose == Some(true) {
            "passed (12 steps)"
        } else {
            "passed"
        }
        .into()),
        other => Err(format!("no project named {other:?}")),
    }
}

/// List the recent builds of a project.
#[tool(scopes = "build:read", read_only, idempotent)]
pub fn list_builds(
    /// The project.
    project: String,
    /// How many builds, at most (default 3).
    limit: Option<u32>,
    /// Only builds in this state.
    state: Option<BuildState>,
    /// Only builds carrying all these labels.
    labels: Vec<String>,
    /// How to choose them.
    filter: Option<Filter>,
) -> Vec<Build> {
    let count = limit.unwrap_or(3).min(4);
    let state = state.unwrap_or(BuildState::Passed);
    (0..count)
        .map(|i| Build {
            number: u64::from(i).saturating_add(100),
            state,
            owner: Owner {
                name: project.clone(),
                email: None,
            },
            labels: labels.iter().take(4).cloned().collect(),
            seconds: match &filter {
                Some(Filter::Range { from, to }) => Some(to.saturating_sub(*from) as f64),
                Some(Filter::Label { label }) => Some(label.len() as f64),
                Some(Filter::All) | None => None,
            },
        })
        .collect()
}

/// Record a build that ran elsewhere; returns it as stored.
#[tool(scopes = "build:write", timeout = "5s")]
pub async fn record_build(
    /// The build.
    build: Build,
    /// Other builds it replaces.
    replaces: Option<Vec<Build>>,
    /// A note for the log.
    note: Option<String>,
    ctx: &ToolContext,
) -> Result<Build, String> {
    if build.owner.name.is_empty() {
        return Err("a build needs an owner".into());
    }
    let mut stored = build;
    stored.labels.truncate(8);
    stored.labels.push(format!("call:{}", ctx.call_id()));
    if let Some(note) = note {
        stored.labels.push(note.chars().take(32).collect());
    }
    stored.number = stored
        .number
        .saturating_add(replaces.map_or(0, |r| r.len() as u64));
    Ok(stored)
}

/// Deploy a project to an environment.
#[tool(name = "deploy", scopes = "deploy:write", destructive)]
pub fn start_deploy(
    /// The project.
    project: String,
    /// Where.
    env: Environment,
    /// How many instances (default 1).
    replicas: Option<u16>,
    ctx: &ToolContext,
) -> Result<String, String> {
    if project != "web" {
        return Err(format!("{project:?} has no passing build to deploy"));
    }
    Ok(format!(
        "dep-{}-{:?}-{}",
        ctx.call_id(),
        env,
        replicas.unwrap_or(1)
    ))
}

/// Delete a preview environment and everything in it; every call needs a person's approval.
#[tool(scopes = "deploy:write", destructive, needs_approval)]
pub fn drop_preview(
    /// The preview environment, e.g. `pr-1234`.
    name: String,
) -> Result<String, String> {
    if !name.starts_with("pr-") {
        return Err(format!("{name:?} is not a preview environment"));
    }
    Ok(format!("preview {name} deleted"))
}

/// Check that the service answers; at most two calls a second.
#[tool(public, rate_limit = "2/s", read_only)]
pub fn ping(
    /// An arbitrary number echoed back.
    seq: Option<i64>,
) -> i64 {
    seq.unwrap_or(0).saturating_add(1)
}

/// Weighted mean of some numbers.
#[tool(public, read_only, open_world)]
pub fn weighted_mean(
    /// The values.
    values: Vec<f64>,
    /// One weight per value (default: all 1).
    weights: Option<Vec<i32>>,
) -> Result<f64, String> {
    if values.is_empty() {
        return Err("no values".into());
    }
    let weights = weights.unwrap_or_default();
    let mut sum = 0.0;
    let mut total = 0.0;
    for (i, value) in values.iter().enumerate() {
        let weight = f64::from(weights.get(i).copied().unwrap_or(1));
        sum += value * weight;
        total += weight;
    }
    Ok(sum / total)
}

/// Administration; the fuzzed subject lacks its scope, so the tool is hidden from it.
#[tool(scopes = "admin:all", tenants = "acme, globex")]
pub fn purge_all(
    /// Why.
    reason: String,
) -> String {
    reason
}

/// The dynamic tool: a hand-written schema with the keywords a tool schema may use.
fn lookup_tool() -> DynamicTool {
    DynamicTool::new("lookup", "Look a record up by key in a namespace.")
        .public()
        .title("Lookup")
        .parameters(json!({
            "type": "object",
            "properties": {
                "key": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[a-z][a-z0-9_-]*$"},
                "namespace": {"enum": ["users", "builds", "teams"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "score": {"type": "number", "exclusiveMinimum": 0},
                "fields": {"type": "array", "items": {"type": "string"}, "maxItems": 8, "uniqueItems": true},
                "range": {
                    "type": "object",
                    "properties": {"from": {"type": "integer"}, "to": {"type": ["integer", "null"]}},
                    "required": ["from"],
                    "additionalProperties": false
                },
                "flag": {"anyOf": [{"type": "boolean"}, {"const": "auto"}]}
            },
            "required": ["key", "namespace"],
            "additionalProperties": false
        }))
        .output_schema(json!({
            "type": "object",
            "properties": {"key": {"type": "string"}, "found": {"type": "boolean"}},
            "required": ["key", "found"]
        }))
        .read_only()
        .idempotent()
        .rate_limit("50/s")
        .handler(|ctx: &ToolContext, args: Value| {
            let key = args["key"].as_str().unwrap_or_default();
            if key == "missing" {
                return Err(format!("no record {key:?} in call {}", ctx.call_id()));
            }
            Ok::<_, String>(json!({"key": key, "found": true}))
        })
}

/// The call policy: production deploys wait for a person, some projects are refused, and a
/// lookup in `teams` needs approval too.
pub fn policy(call: &CallRequest<'_>) -> Decision {
    let args = call.arguments();
    match call.tool_name() {
        "deploy" => match (args["project"].as_str(), args["env"].as_str()) {
            (Some("legacy"), _) => Decision::Deny("legacy is frozen; deploy `web`".into()),
            (_, Some("production")) => Decision::RequireApproval("a deploy to production".into()),
            _ => Decision::Allow,
        },
        "lookup" if args["namespace"] == "teams" => {
            Decision::RequireApproval("team records are private".into())
        }
        "record_build" if args["build"]["state"] == "failed" => {
            Decision::Deny("failed builds are recorded by CI".into())
        }
        _ => Decision::Allow,
    }
}

/// An approval store that forgets everything at each input: the library's
/// `MemoryApprovalStore` never drops a request, so a long run would grow without end (and a
/// fresh store per input keeps inputs independent).
#[derive(Clone, Default)]
pub struct ResettableApprovals(Arc<Mutex<Arc<MemoryApprovalStore>>>);

impl ResettableApprovals {
    /// Starts a fresh, empty store.
    pub fn reset(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Arc::default();
    }

    fn current(&self) -> Arc<MemoryApprovalStore> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl ApprovalStore for ResettableApprovals {
    fn insert<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Result<(), StoreError>> {
        let store = self.current();
        Box::pin(async move { store.insert(request).await })
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<(ApprovalRequest, ApprovalState)>, StoreError>> {
        let store = self.current();
        Box::pin(async move { store.get(id).await })
    }

    fn decide<'a>(
        &'a self,
        id: &'a str,
        state: ApprovalState,
    ) -> BoxFuture<'a, Result<Transition, StoreError>> {
        let store = self.current();
        Box::pin(async move { store.decide(id, state).await })
    }

    fn pending_count<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<usize, StoreError>> {
        let store = self.current();
        Box::pin(async move { store.pending_count(request).await })
    }
}

/// The registry: every tool above, the dynamic one, the call policy and the approval store.
pub fn registry(approvals: ResettableApprovals) -> Registry {
    Registry::builder()
        .declared_in([module_path!()])
        .tool(lookup_tool())
        .call_policy(policy)
        .approval_store(approvals)
        .build()
        .expect("the fuzz registry builds")
}

/// The subject of input number `n`: every scope but `admin:all`, and an agent of its own,
/// so that each input starts with full rate-limit buckets (the memory quota store sweeps full
/// buckets, so this does not grow).
pub fn subject(n: u64) -> Subject {
    Subject::new("acme")
        .with_scopes(["build:read", "build:write", "deploy:write"])
        .with_agent(format!("fuzz-{n}"))
}

/// What a target keeps across inputs: the registry of the tools above (built once), its
/// approval store (emptied between inputs) and a count of the inputs run.
pub struct Fixture {
    pub registry: registry_core::Registry,
    pub approvals: ResettableApprovals,
    pub inputs: std::sync::atomic::AtomicU64,
}

/// The process's one fixture.
pub fn fixture() -> &'static Fixture {
    static FIXTURE: std::sync::OnceLock<Fixture> = std::sync::OnceLock::new();
    FIXTURE.get_or_init(|| {
        let approvals = ResettableApprovals::default();
        Fixture {
            registry: registry(approvals.clone()),
            approvals,
            inputs: std::sync::atomic::AtomicU64::new(0),
        }
    })
}
