//! [`CedarPolicies`]: a Cedar policy set as a registry's access rule, call policy and policy
//! set, validated against the registry and reloaded atomically.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use cedar_policy::{
    Authorizer, Context, Decision as CedarDecision, Effect, Entities, EntityId, EntityTypeName,
    EntityUid, PolicyId, PolicySet, Request, Schema, ValidationMode, Validator,
};
use registry_core::access::{AccessRule, AttributeValue, Visibility};
use registry_core::gate::{CallPolicy, CallRequest, Decision, Determined};
use registry_core::policy::PolicySet as RegistryPolicySet;
use registry_core::{Registry, Subject, Tool};
use serde_json::{Value, json};

use crate::schema::{Ty, Vocabulary};

/// The type of a subject attribute the application declares to the schema
/// ([`CedarPolicies::with_subject_attribute`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AttributeType {
    /// A Cedar `String`.
    String,
    /// A Cedar `Long`.
    Long,
    /// A Cedar `Bool`.
    Bool,
    /// A Cedar `Set<String>`.
    Set,
}

/// Why a policy set could not be read or taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CedarError {
    /// A policy text did not parse.
    #[error("{source_name}: {message}")]
    Parse {
        /// The file (or `policies` for [`CedarPolicies::parse`]).
        source_name: String,
        /// Cedar's message, and where.
        message: String,
    },
    /// A directory or file could not be read, or held no policy file.
    #[error("{0}")]
    Read(String),
    /// The set does not hold for the registry it is bound to: every problem, each naming the
    /// policy and what it named.
    #[error("the policy set does not hold for the registry ({} problem{}): {}", .0.len(), if .0.len() == 1 { "" } else { "s" }, .0.join("; "))]
    Invalid(Vec<String>),
}

/// How many distinct subjects the `list` cache keeps decisions for (then the oldest goes).
pub const LIST_CACHE_SUBJECTS: usize = 64;
/// The longest `@reason` the model is shown; a longer one is cut.
const MAX_REASON: usize = 300;

/// One policy's annotations that matter to a decision.
#[derive(Debug, Clone)]
struct Meta {
    effect: Effect,
    reason: Option<String>,
    approval: Option<String>,
}

/// One parsed policy set, as it decides.
#[derive(Debug)]
struct Set {
    policies: PolicySet,
    /// The same without the `@approval` forbids: what decides once a person approves.
    without_approvals: PolicySet,
    meta: HashMap<String, Meta>,
    generation: u64,
}

/// What binding to a registry (its validation) keeps: the schema and the vocabulary.
#[derive(Debug)]
struct Bound {
    schema: Schema,
    vocabulary: Vocabulary,
    list: EntityUid,
    call: EntityUid,
}

/// Cached `list` decisions of one subject, per tool version.
type Decisions = HashMap<registry_core::Fingerprint, Visibility>;

#[derive(Debug)]
struct Inner {
    current: RwLock<Arc<Set>>,
    bound: RwLock<Option<Arc<Bound>>>,
    declared: RwLock<BTreeMap<String, Ty>>,
    /// Per subject (most recent last), with the generation decided under.
    cache: Mutex<Vec<(Subject, u64, Decisions)>>,
    authorizer: Authorizer,
}

/// A Cedar policy set for a registry: an [`AccessRule`] (the action `list`), a
/// [`CallPolicy`] (`call`) and a [`registry_core::policy::PolicySet`] (checked against the
/// registry at build, with Cedar's strict validator and a check that every `Tool::"..."` it
/// names is registered). A handle: clones share the set, so one kept by the application
/// reloads the set the registry decides with.
///
/// Decisions:
///
/// - `list`: a tool is listed only if the registry's own rules and a `permit` allow it; a
///   tool Cedar hides shows in [`Run::explain`](registry_core::Run::explain) with the ids of
///   the policies that hid it;
/// - `call`: Cedar denies by default (no permit, no call). A `forbid` annotated
///   `@reason("...")` gives the model that reason; without one the model is told only that a
///   policy denied the call. A `forbid` annotated `@approval("...")` asks for a person's
///   approval instead of denying, when it is the only thing that forbids the call. The ids of
///   the deciding policies are on the call's audit event.
/// - A policy's id is its `@id("...")` annotation, or else its file and line (`ops.cedar:12`;
///   `line 12` for [`parse`](Self::parse)).
///
/// Fail closed: a call whose arguments Cedar cannot be shown (an integer outside 64 bits, a
/// value not of its type, nesting deeper than 16) is denied; a set not validated against a
/// registry hides every tool and denies every call; an evaluation error never allows.
///
/// See the crate's documentation for an example.
#[derive(Debug, Clone)]
pub struct CedarPolicies {
    inner: Arc<Inner>,
}

impl CedarPolicies {
    /// The policies of `text` (ids from `@id`, else `line N`).
    pub fn parse(text: &str) -> Result<Self, CedarError> {
        Ok(Self::of(read(
            &[("policies".to_owned(), text.to_owned())],
            1,
        )?))
    }

    /// The policies of every `*.cedar` file in `dir`, in name order (ids from `@id`, else
    /// `file.cedar:line`).
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, CedarError> {
        Ok(Self::of(read(&files_of(dir.as_ref())?, 1)?))
    }

    fn of(set: Set) -> Self {
        CedarPolicies {
            inner: Arc::new(Inner {
                current: RwLock::new(Arc::new(set)),
                bound: RwLock::new(None),
                declared: RwLock::new(BTreeMap::new()),
                cache: Mutex::new(Vec::new()),
                authorizer: Authorizer::new(),
            }),
        }
    }

    /// Declares a subject attribute the policies may read though no tool declares its key
    /// (`principal.clearance`), with its type. Keys tools declare are Strings unless declared
    /// here. A subject value of another type is left out (`has` is false), never converted.
    /// Declare before the registry is built.
    #[must_use = "returns the policies"]
    pub fn with_subject_attribute(self, key: &str, ty: AttributeType) -> Self {
        let ty = match ty {
            AttributeType::String => Ty::String,
            AttributeType::Long => Ty::Long,
            AttributeType::Bool => Ty::Bool,
            AttributeType::Set => Ty::Strings,
        };
        write(&self.inner.declared).insert(key.to_owned(), ty);
        self
    }

    /// How many times the set was replaced since it was first read (0 at first).
    pub fn generation(&self) -> u64 {
        read_lock(&self.inner.current).generation - 1
    }

    /// The ids of the policies in force, sorted.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = read_lock(&self.inner.current)
            .meta
            .keys()
            .cloned()
            .collect();
        ids.sort();
        ids
    }

    /// Replaces the set with the policies of `text`, atomically, once they parse and hold for
    /// the registry the set is bound to; otherwise the old set stays, the refusal is audited
    /// (a `tracing` event on the `registry_core::audit` target) and the error says why.
    /// Calls are decided by the set in force when they are made; a run keeps the tools it
    /// was shown when it opened (a call the new set forbids is refused).
    pub fn reload(&self, text: &str) -> Result<(), CedarError> {
        self.reload_files([("policies".to_owned(), text.to_owned())])
    }

    /// [`reload`](Self::reload) from every `*.cedar` file of `dir`.
    pub fn reload_dir(&self, dir: impl AsRef<Path>) -> Result<(), CedarError> {
        let files = files_of(dir.as_ref()).inspect_err(refused)?;
        self.reload_files(files)
    }

    /// [`reload`](Self::reload) from named texts (a file name and its policies each), as a
    /// replica receives a set pushed through PostgreSQL.
    pub fn reload_files(
        &self,
        files: impl IntoIterator<Item = (String, String)>,
    ) -> Result<(), CedarError> {
        let files: Vec<(String, String)> = files.into_iter().collect();
        let generation = read_lock(&self.inner.current).generation + 1;
        let result = read(&files, generation).and_then(|set| {
            if let Some(bound) = read_lock(&self.inner.bound).clone() {
                let problems = check(&set.policies, &bound);
                if !problems.is_empty() {
                    return Err(CedarError::Invalid(problems));
                }
            }
            Ok(set)
        });
        match result {
            Ok(set) => {
                let ids = set.meta.len();
                *write(&self.inner.current) = Arc::new(set);
                self.inner
                    .cache
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clear();
                tracing::info!(
                    target: "registry_core::audit",
                    event = "policies_reloaded",
                    generation,
                    policies = ids,
                );
                Ok(())
            }
            Err(error) => {
                refused(&error);
                Err(error)
            }
        }
    }

    fn bound(&self) -> Option<Arc<Bound>> {
        read_lock(&self.inner.bound).clone()
    }

    fn list(&self, subject: &Subject, tool: &Tool) -> Visibility {
        let Some(bound) = self.bound() else {
            return Visibility::Hidden(
                "the Cedar policies were not validated against this registry".into(),
            );
        };
        let set = read_lock(&self.inner.current).clone();
        let version = tool.version_fingerprint();
        {
            let cache = self
                .inner
                .cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some((_, _, decisions)) = cache
                .iter()
                .rev()
                .find(|(known, generation, _)| *generation == set.generation && known == subject)
                && let Some(visibility) = decisions.get(&version)
            {
                return visibility.clone();
            }
        }
        let visibility = self.decide_list(&bound, &set, subject, tool);
        let mut cache = self
            .inner
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match cache
            .iter_mut()
            .find(|(known, generation, _)| *generation == set.generation && known == subject)
        {
            Some((_, _, decisions)) => {
                decisions.insert(version, visibility.clone());
            }
            None => {
                if cache.len() >= LIST_CACHE_SUBJECTS {
                    cache.remove(0);
                }
                cache.push((
                    subject.clone(),
                    set.generation,
                    HashMap::from([(version, visibility.clone())]),
                ));
            }
        }
        visibility
    }

    fn decide_list(&self, bound: &Bound, set: &Set, subject: &Subject, tool: &Tool) -> Visibility {
        let answer = entities(bound, subject, tool).and_then(|(principal, resource, entities)| {
            let request = Request::new(
                principal,
                bound.list.clone(),
                resource,
                Context::empty(),
                Some(&bound.schema),
            )
            .map_err(|error| error.to_string())?;
            Ok(self
                .inner
                .authorizer
                .is_authorized(&request, &set.policies, &entities))
        });
        match answer {
            Ok(response) if response.decision() == CedarDecision::Allow => Visibility::Visible,
            Ok(response) => {
                let ids: Vec<String> = response
                    .diagnostics()
                    .reason()
                    .map(ToString::to_string)
                    .collect();
                Visibility::Hidden(if ids.is_empty() {
                    "hidden by Cedar: no policy permits listing it".into()
                } else {
                    format!("hidden by Cedar policies {}", ids.join(", "))
                })
            }
            Err(error) => Visibility::Hidden(format!(
                "the Cedar policies could not judge it, so it is hidden: {error}"
            )),
        }
    }

    fn decide_call(&self, call: &CallRequest<'_>) -> Determined {
        let deny = |reason: String| Determined::new(Decision::Deny(reason), Vec::new());
        let Some(bound) = self.bound() else {
            return deny("the Cedar policies were not validated against this registry".into());
        };
        let set = read_lock(&self.inner.current).clone();
        let Some(tool) = call_tool(call) else {
            return deny("a policy could not see the tool".into());
        };
        let arguments = Ty::Record(
            bound
                .vocabulary
                .arguments
                .iter()
                .map(|(name, ty)| (name.clone(), (ty.clone(), false)))
                .collect(),
        );
        let Some(arguments) = arguments.shape(call.arguments(), 0) else {
            return deny(
                "the call's arguments cannot be shown to the policies (a number outside 64 bits, a value of another type, or nesting too deep), so it was refused".into(),
            );
        };
        let context = json!({
            "arguments": arguments,
            "caller": call.caller().as_str(),
            "run": call.run_id(),
        });
        let answer = |policies: &PolicySet| {
            let (principal, resource, entities) = entities(&bound, call.subject(), &tool)?;
            let context =
                Context::from_json_value(context.clone(), Some((&bound.schema, &bound.call)))
                    .map_err(|error| error.to_string())?;
            let request = Request::new(
                principal,
                bound.call.clone(),
                resource,
                context,
                Some(&bound.schema),
            )
            .map_err(|error| error.to_string())?;
            Ok::<_, String>(
                self.inner
                    .authorizer
                    .is_authorized(&request, policies, &entities),
            )
        };
        let response = match answer(&set.policies) {
            Ok(response) => response,
            Err(error) => {
                return deny(format!(
                    "the Cedar policies could not judge the call: {error}"
                ));
            }
        };
        let ids: Vec<String> = response
            .diagnostics()
            .reason()
            .map(ToString::to_string)
            .collect();
        if response.decision() == CedarDecision::Allow {
            return Determined::new(Decision::Allow, ids);
        }
        let meta = |id: &String| set.meta.get(id);
        let forbids: Vec<&String> = ids
            .iter()
            .filter(|id| meta(id).is_some_and(|meta| meta.effect == Effect::Forbid))
            .collect();
        if forbids.is_empty() {
            return Determined::new(Decision::Deny("no policy permits this call".into()), ids);
        }
        let approvals: Vec<&str> = forbids
            .iter()
            .filter_map(|id| meta(id).and_then(|meta| meta.approval.as_deref()))
            .collect();
        if approvals.len() == forbids.len()
            && let Ok(without) = answer(&set.without_approvals)
            && without.decision() == CedarDecision::Allow
        {
            let asking = forbids.iter().map(|id| (*id).clone()).collect();
            return Determined::new(Decision::RequireApproval(bounded(approvals[0])), asking);
        }
        let reason = forbids
            .iter()
            .find_map(|id| meta(id).and_then(|meta| meta.reason.as_deref()))
            .map_or_else(|| "a policy denied the call".to_owned(), bounded);
        let forbidding = forbids.iter().map(|id| (*id).clone()).collect();
        Determined::new(Decision::Deny(reason), forbidding)
    }
}

impl AccessRule for CedarPolicies {
    fn check(&self, subject: &Subject, tool: &Tool) -> Visibility {
        self.list(subject, tool)
    }
}

impl CallPolicy for CedarPolicies {
    fn decide(&self, call: &CallRequest<'_>) -> Decision {
        self.decide_call(call).decision
    }

    fn determine(&self, call: &CallRequest<'_>) -> Determined {
        self.decide_call(call)
    }
}

impl RegistryPolicySet for CedarPolicies {
    fn validate(&self, registry: &Registry) -> Result<(), Vec<String>> {
        let vocabulary = Vocabulary::of(registry, &read_lock(&self.inner.declared));
        let text = vocabulary.text();
        let schema = Schema::from_cedarschema_str(&text)
            .map(|(schema, _warnings)| schema)
            .map_err(|error| {
                vec![format!(
                    "the registry's Cedar schema did not parse: {error}"
                )]
            })?;
        let uid = |id: &str| EntityUid::from_str(&format!("Action::\"{id}\"")).ok();
        let (Some(list), Some(call)) = (uid("list"), uid("call")) else {
            return Err(vec!["the actions' ids did not parse".into()]);
        };
        let bound = Bound {
            schema,
            vocabulary,
            list,
            call,
        };
        let problems = check(&read_lock(&self.inner.current).policies, &bound);
        if !problems.is_empty() {
            return Err(problems);
        }
        *write(&self.inner.bound) = Some(Arc::new(bound));
        Ok(())
    }
}

/// The tool a call names, as the registry has it: rebuilt from the request (its settings and
/// name), since Cedar needs the tool's attributes.
fn call_tool(call: &CallRequest<'_>) -> Option<ToolFacts> {
    Some(ToolFacts {
        name: call.tool_name().to_owned(),
        settings: call.settings().clone(),
    })
}

/// What Cedar's `Tool` entity is made of.
struct ToolFacts {
    name: String,
    settings: registry_core::definition::ToolSettings,
}

/// Either a registry tool or the facts of a call's tool.
trait ToolLike {
    fn name(&self) -> &str;
    fn settings(&self) -> &registry_core::definition::ToolSettings;
}

impl ToolLike for Tool {
    fn name(&self) -> &str {
        Tool::name(self)
    }
    fn settings(&self) -> &registry_core::definition::ToolSettings {
        Tool::settings(self)
    }
}

impl ToolLike for ToolFacts {
    fn name(&self) -> &str {
        &self.name
    }
    fn settings(&self) -> &registry_core::definition::ToolSettings {
        &self.settings
    }
}

/// The principal, the tool and the entities that hold them, typed by the schema.
fn entities(
    bound: &Bound,
    subject: &Subject,
    tool: &dyn ToolLike,
) -> Result<(EntityUid, EntityUid, Entities), String> {
    let principal_id = subject.principal().unwrap_or("anonymous");
    let principal =
        EntityUid::from_type_name_and_id(type_name("Principal")?, EntityId::new(principal_id));
    let resource = EntityUid::from_type_name_and_id(type_name("Tool")?, EntityId::new(tool.name()));
    let mut attributes = serde_json::Map::new();
    attributes.insert("tenant".into(), subject.tenant().into());
    attributes.insert("scopes".into(), subject.scopes().collect::<Vec<_>>().into());
    attributes.insert(
        "access".into(),
        serde_json::to_value(subject.access()).unwrap_or(Value::Null),
    );
    if let Some(agent) = subject.agent() {
        attributes.insert("agent".into(), agent.into());
    }
    for (key, value) in subject.attributes() {
        let typed = match (bound.vocabulary.subject.get(key), value) {
            (Some(Ty::String), AttributeValue::String(text)) => Some(Value::from(text.as_str())),
            (Some(Ty::Long), AttributeValue::Number(n)) => Some(Value::from(*n)),
            (Some(Ty::Bool), AttributeValue::Bool(b)) => Some(Value::from(*b)),
            (Some(Ty::Strings), AttributeValue::Set(items)) => {
                Some(items.iter().map(String::as_str).collect::<Vec<_>>().into())
            }
            _ => None,
        };
        if let Some(typed) = typed {
            attributes.insert(key.to_owned(), typed);
        }
    }
    let settings = tool.settings();
    let mut tool_attributes = serde_json::Map::new();
    tool_attributes.insert(
        "scopes".into(),
        settings
            .scopes
            .iter()
            .map(|scope| scope.as_str())
            .collect::<Vec<_>>()
            .into(),
    );
    tool_attributes.insert("read_only".into(), settings.hints.read_only.into());
    tool_attributes.insert("destructive".into(), settings.hints.destructive.into());
    tool_attributes.insert("idempotent".into(), settings.hints.idempotent.into());
    tool_attributes.insert("open_world".into(), settings.hints.open_world.into());
    tool_attributes.insert("needs_approval".into(), settings.needs_approval.into());
    for (key, values) in &settings.attributes {
        tool_attributes.insert(key.clone(), values.clone().into());
    }
    let json = json!([
        {"uid": {"type": "Principal", "id": principal_id}, "attrs": attributes, "parents": []},
        {"uid": {"type": "Tool", "id": tool.name()}, "attrs": tool_attributes, "parents": []},
    ]);
    let entities =
        Entities::from_json_value(json, Some(&bound.schema)).map_err(|error| error.to_string())?;
    Ok((principal, resource, entities))
}

fn type_name(name: &str) -> Result<EntityTypeName, String> {
    EntityTypeName::from_str(name).map_err(|error| error.to_string())
}

/// Every problem of `policies` against `bound`: Cedar's strict validation, and every
/// `Tool::"..."` that names no registered tool.
fn check(policies: &PolicySet, bound: &Bound) -> Vec<String> {
    let mut problems = Vec::new();
    let result = Validator::new(bound.schema.clone()).validate(policies, ValidationMode::Strict);
    for error in result.validation_errors() {
        problems.push(format!("policy {}: {error}", error.policy_id()));
    }
    let known: HashSet<&str> = bound.vocabulary.tools.iter().map(String::as_str).collect();
    let mut ids: Vec<&cedar_policy::Policy> = policies.policies().collect();
    ids.sort_by_key(|policy| policy.id().to_string());
    for policy in ids {
        let mut named = Vec::new();
        if let Ok(json) = policy.to_json() {
            tools_named(&json, &mut named);
        }
        for name in named {
            if !known.contains(name.as_str()) {
                problems.push(format!(
                    "policy {}: names the tool {:?}, which is not registered",
                    policy.id(),
                    registry_core_escape(&name)
                ));
            }
        }
    }
    problems
}

fn registry_core_escape(text: &str) -> String {
    text.chars().flat_map(char::escape_debug).collect()
}

/// Every `Tool` entity id a policy's JSON form names.
fn tools_named(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            if object.get("type").and_then(Value::as_str) == Some("Tool")
                && let Some(id) = object.get("id").and_then(Value::as_str)
                && !out.iter().any(|known| known == id)
            {
                out.push(id.to_owned());
            }
            object.values().for_each(|value| tools_named(value, out));
        }
        Value::Array(items) => items.iter().for_each(|value| tools_named(value, out)),
        _ => {}
    }
}

/// The named texts as one set, each policy's id its `@id` or its file and line.
fn read(files: &[(String, String)], generation: u64) -> Result<Set, CedarError> {
    let mut policies = PolicySet::new();
    let mut without_approvals = PolicySet::new();
    let mut meta = HashMap::new();
    for (name, text) in files {
        let parse_error = |message: String| CedarError::Parse {
            source_name: name.clone(),
            message,
        };
        let parsed = PolicySet::from_str(text).map_err(|error| parse_error(error.to_string()))?;
        let mut found: Vec<&cedar_policy::Policy> = parsed.policies().collect();
        // Cedar numbers the policies of a text in order: `policy0`, `policy1`...
        found.sort_by_key(|policy| {
            policy
                .id()
                .to_string()
                .trim_start_matches("policy")
                .parse::<usize>()
                .unwrap_or(usize::MAX)
        });
        let mut from = 0;
        for policy in found {
            let source = policy.to_string();
            let at = text[from..]
                .find(&source)
                .map_or(from, |offset| from + offset);
            from = at + source.len().min(text.len() - at);
            let line = text[..at].matches('\n').count() + 1;
            let id = match policy.annotation("id") {
                Some(id) => id.to_owned(),
                None if files.len() == 1 && name == "policies" => format!("line {line}"),
                None => format!("{name}:{line}"),
            };
            if meta.contains_key(&id) {
                return Err(parse_error(format!(
                    "two policies have the id {id:?}; give each its own @id"
                )));
            }
            let renamed = policy.new_id(PolicyId::new(&id));
            let approval = policy.annotation("approval").map(str::to_owned);
            if !(policy.effect() == Effect::Forbid && approval.is_some()) {
                without_approvals
                    .add(renamed.clone())
                    .map_err(|error| parse_error(error.to_string()))?;
            }
            policies
                .add(renamed)
                .map_err(|error| parse_error(error.to_string()))?;
            meta.insert(
                id,
                Meta {
                    effect: policy.effect(),
                    reason: policy.annotation("reason").map(str::to_owned),
                    approval,
                },
            );
        }
    }
    Ok(Set {
        policies,
        without_approvals,
        meta,
        generation,
    })
}

/// Every `*.cedar` file of `dir`, in name order, with its text.
fn files_of(dir: &Path) -> Result<Vec<(String, String)>, CedarError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|error| CedarError::Read(format!("cannot read {}: {error}", dir.display())))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|error| CedarError::Read(format!("cannot read {}: {error}", dir.display())))?
            .path();
        if path.extension().is_some_and(|ext| ext == "cedar") && path.is_file() {
            let name = path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = std::fs::read_to_string(&path).map_err(|error| {
                CedarError::Read(format!("cannot read {}: {error}", path.display()))
            })?;
            files.push((name, text));
        }
    }
    if files.is_empty() {
        return Err(CedarError::Read(format!(
            "{} holds no *.cedar file; an empty set would deny everything",
            dir.display()
        )));
    }
    files.sort();
    Ok(files)
}

/// A refused reload, audited.
fn refused(error: &CedarError) {
    tracing::warn!(
        target: "registry_core::audit",
        event = "policies_refused",
        error = %registry_core_escape(&error.to_string()),
        "the policy set was refused; the set in force stays"
    );
}

/// `text` cut to what the model is shown of a reason.
fn bounded(text: &str) -> String {
    if text.len() <= MAX_REASON {
        return text.to_owned();
    }
    let mut end = MAX_REASON;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn read_lock<T: Clone>(lock: &RwLock<T>) -> T {
    lock.read().unwrap_or_else(PoisonError::into_inner).clone()
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
