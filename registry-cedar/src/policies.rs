//! [`CedarPolicies`]: a Cedar policy set as a registry's access rule, call policy and policy
//! set, validated against the registry and reloaded atomically.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use cedar_policy::{
    Authorizer, Context, Effect, Entities, Entity, EntityId, EntityTypeName, EntityUid, PolicyId,
    PolicySet, Request, RequestBuilder, RestrictedExpression, Schema, ValidationMode,
    ValidationWarning, Validator,
};
use registry_core::access::Access;
use registry_core::access::{AccessRule, AttributeValue, Visibility};
use registry_core::definition::ToolSettings;
use registry_core::gate::{CallPolicy, CallRequest, Decision, Determined};
use registry_core::policy::PolicySet as RegistryPolicySet;
use registry_core::{Fingerprint, Registry, Subject, Tool};
use serde_json::Value;

use crate::schema::{Ty, Vocabulary};
use crate::specialise::Specialised;

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

/// How many distinct subjects the decision cache keeps (then the oldest goes): per subject,
/// the set specialised to it (Cedar's partial evaluation), its `list` decisions per tool
/// version, and the set specialised to it and each tool it called.
pub const LIST_CACHE_SUBJECTS: usize = 64;
/// How many tools a subject's `call` specialisations are kept for (then they are dropped).
const CALL_CACHE_TOOLS: usize = 1024;
/// The longest `@reason` the model is shown; a longer one is cut.
const MAX_REASON: usize = 300;

/// One policy's annotations that matter to a decision.
#[derive(Debug, Clone)]
struct Meta {
    reason: Option<String>,
    approval: Option<String>,
}

/// One parsed policy set, as it decides.
#[derive(Debug)]
struct Set {
    policies: PolicySet,
    /// Its permits alone and its forbids alone: evaluated apart, a decision learns every
    /// satisfied permit and every satisfied forbid (what an `@approval` forbid needs).
    permits: Option<PolicySet>,
    forbids: Option<PolicySet>,
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
    principal_type: EntityTypeName,
    tool_type: EntityTypeName,
}

/// The set in force and the registry vocabulary it was checked against: swapped together,
/// so that a decision never pairs a set with a vocabulary it was not checked against.
#[derive(Debug)]
struct State {
    set: Arc<Set>,
    /// `None` until the set is validated against a registry.
    bound: Option<Arc<Bound>>,
    /// Which swap this is: the decision cache's key, so that a decision made before a swap
    /// is never served after it.
    epoch: u64,
}

/// What the decisions for one subject under one state keep.
#[derive(Debug)]
struct Remembered {
    subject: Subject,
    epoch: u64,
    /// The set specialised to the subject for `list` (the tool unknown).
    list: Option<Arc<Specialised>>,
    /// `list` decisions, per tool version.
    visible: HashMap<Fingerprint, Visibility>,
    /// The set specialised to the subject and a tool for `call` (the arguments unknown), per
    /// tool name; at most [`CALL_CACHE_TOOLS`].
    calls: HashMap<String, Arc<CallEntry>>,
}

/// A tool's `call` decisions for one subject, as far as they are known before the arguments.
#[derive(Debug)]
struct CallEntry {
    /// The settings the tool entity was made from: a tool replaced under the same name with
    /// other settings is specialised again.
    settings: ToolSettings,
    principal: EntityUid,
    resource: EntityUid,
    entities: Entities,
    specialised: Specialised,
}

#[derive(Debug)]
struct Inner {
    state: RwLock<Arc<State>>,
    /// Held across every reload and every validation, from reading the state to swapping
    /// it: two reloads never share a generation, and a reload never checks against a
    /// vocabulary that a validation is replacing.
    update: Mutex<()>,
    declared: RwLock<BTreeMap<String, Ty>>,
    /// Per subject and epoch, the most recent last; at most [`LIST_CACHE_SUBJECTS`].
    cache: Mutex<Vec<Remembered>>,
    authorizer: Authorizer,
}

/// A Cedar policy set for a registry: an [`AccessRule`] (the action `list`), a
/// [`CallPolicy`] (`call`) and a [`registry_core::policy::PolicySet`] (checked against the
/// registry at build and before every replacement, with Cedar's strict validator, its
/// warnings that a policy can never apply, a check that every `Tool::"..."` it names is
/// registered, and a check that every argument and attribute it reads is one the registry
/// types: an argument the tools type differently or Cedar cannot type is refused, naming
/// the tools). Give it with `RegistryBuilder::policies`; given to `access_rule` or
/// `call_policy`, it fails the build. A handle: clones share the set, so one kept by the
/// application reloads the set the registry decides with.
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
///   `line 12` for [`parse`](Self::parse)), and its column too where policies without `@id`
///   share a line (`line 1:38`).
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
                state: RwLock::new(Arc::new(State {
                    set: Arc::new(set),
                    bound: None,
                    epoch: 0,
                })),
                update: Mutex::new(()),
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
        self.state().set.generation - 1
    }

    /// The ids of the policies in force, sorted.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.state().set.meta.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Replaces the set with the policies of `text`, atomically, once they parse and hold for
    /// the registry the set is bound to (reloads run one at a time, each with a generation of
    /// its own); otherwise the old set stays, the refusal is audited
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
        let _update = self.updating();
        let state = self.state();
        let generation = state.set.generation + 1;
        let result = read(&files, generation).and_then(|set| {
            if let Some(bound) = &state.bound {
                let problems = check(&set.policies, bound);
                if !problems.is_empty() {
                    return Err(CedarError::Invalid(problems));
                }
            }
            Ok(set)
        });
        match result {
            Ok(set) => {
                let ids = set.meta.len();
                self.swap(&state, Arc::new(set), state.bound.clone());
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

    /// The state in force.
    fn state(&self) -> Arc<State> {
        read_lock(&self.inner.state)
    }

    /// Puts `set` and `bound` in force after `old` (the update lock held), and drops every
    /// decision remembered.
    fn swap(&self, old: &State, set: Arc<Set>, bound: Option<Arc<Bound>>) {
        *write(&self.inner.state) = Arc::new(State {
            set,
            bound,
            epoch: old.epoch + 1,
        });
        self.cache().clear();
    }

    /// The remembered decisions of `subject` under `epoch`, made if missing (the oldest
    /// subject goes when the cache is full).
    fn remembered<'c>(
        cache: &'c mut Vec<Remembered>,
        subject: &Subject,
        epoch: u64,
    ) -> &'c mut Remembered {
        let at = cache
            .iter()
            .rposition(|known| known.epoch == epoch && known.subject == *subject);
        let at = match at {
            Some(at) => at,
            None => {
                if cache.len() >= LIST_CACHE_SUBJECTS {
                    cache.remove(0);
                }
                cache.push(Remembered {
                    subject: subject.clone(),
                    epoch,
                    list: None,
                    visible: HashMap::new(),
                    calls: HashMap::new(),
                });
                cache.len() - 1
            }
        };
        &mut cache[at]
    }

    /// The lock every reload and validation holds from reading the state to swapping it.
    fn updating(&self) -> std::sync::MutexGuard<'_, ()> {
        self.inner
            .update
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Vec<Remembered>> {
        self.inner
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn list(&self, subject: &Subject, tool: &Tool) -> Visibility {
        let state = self.state();
        let Some(bound) = state.bound.clone() else {
            return Visibility::Hidden(
                "the Cedar policies were not validated against this registry".into(),
            );
        };
        let set = state.set.clone();
        let epoch = state.epoch;
        let version = tool.version_fingerprint();
        let specialised = {
            let mut cache = self.cache();
            let remembered = Self::remembered(&mut cache, subject, epoch);
            if let Some(visibility) = remembered.visible.get(&version) {
                return visibility.clone();
            }
            remembered.list.clone()
        };
        let specialised = match specialised {
            Some(specialised) => specialised,
            None => {
                let specialised = Arc::new(self.specialise_list(&bound, &set, subject));
                let mut cache = self.cache();
                Self::remembered(&mut cache, subject, epoch).list = Some(specialised.clone());
                specialised
            }
        };
        let visibility = self.decide_list(&bound, &set, &specialised, subject, tool);
        let mut cache = self.cache();
        Self::remembered(&mut cache, subject, epoch)
            .visible
            .insert(version, visibility.clone());
        visibility
    }

    /// The set specialised to `subject` for `list`, the tool unknown.
    fn specialise_list(&self, bound: &Bound, set: &Set, subject: &Subject) -> Specialised {
        let principal = principal_uid(bound, subject);
        let made = principal_entity(bound, subject, principal.clone())
            .and_then(|entity| Entities::from_entities([entity], None).map_err(|e| e.to_string()));
        let Ok(entities) = made else {
            return Specialised::unusable_one();
        };
        let request = RequestBuilder::default()
            .principal(principal)
            .action(bound.list.clone())
            .unknown_resource_with_type(bound.tool_type.clone())
            .context(Context::empty())
            .build();
        Specialised::of(
            &self.inner.authorizer,
            &request,
            &set.policies,
            &entities,
            "resource",
        )
    }

    fn decide_list(
        &self,
        bound: &Bound,
        set: &Set,
        specialised: &Specialised,
        subject: &Subject,
        tool: &Tool,
    ) -> Visibility {
        let whole = [set.permits.as_ref(), set.forbids.as_ref()];
        let answer = specialised.decide(&self.inner.authorizer, whole, || {
            let (principal, resource, entities) = entities(bound, subject, tool)?;
            let request = Request::new(
                principal,
                bound.list.clone(),
                resource,
                Context::empty(),
                None,
            )
            .map_err(|error| error.to_string())?;
            Ok((request, entities))
        });
        match answer {
            Ok(found) if !found.permits.is_empty() && found.forbids.is_empty() => {
                Visibility::Visible
            }
            Ok(found) => Visibility::Hidden(if found.forbids.is_empty() {
                "hidden by Cedar: no policy permits listing it".into()
            } else {
                format!(
                    "hidden by Cedar policies {}",
                    sorted(found.forbids).join(", ")
                )
            }),
            Err(error) => Visibility::Hidden(format!(
                "the Cedar policies could not judge it, so it is hidden: {}",
                registry_core_escape(&error)
            )),
        }
    }

    /// The set specialised to the call's subject and tool (the arguments unknown), from the
    /// cache or made and kept.
    fn call_entry(
        &self,
        bound: &Bound,
        set: &Set,
        epoch: u64,
        call: &CallRequest<'_>,
    ) -> Result<Arc<CallEntry>, String> {
        {
            let mut cache = self.cache();
            let remembered = Self::remembered(&mut cache, call.subject(), epoch);
            if let Some(entry) = remembered.calls.get(call.tool_name())
                && entry.settings == *call.settings()
            {
                return Ok(entry.clone());
            }
        }
        let tool = call_tool(call);
        let (principal, resource, entities) = entities(bound, call.subject(), &tool)?;
        let request = RequestBuilder::default()
            .principal(principal.clone())
            .action(bound.call.clone())
            .resource(resource.clone())
            .build();
        let specialised = Specialised::of(
            &self.inner.authorizer,
            &request,
            &set.policies,
            &entities,
            "context",
        );
        let entry = Arc::new(CallEntry {
            settings: tool.settings,
            principal,
            resource,
            entities,
            specialised,
        });
        let mut cache = self.cache();
        let calls = &mut Self::remembered(&mut cache, call.subject(), epoch).calls;
        if calls.len() >= CALL_CACHE_TOOLS {
            calls.clear();
        }
        calls.insert(call.tool_name().to_owned(), entry.clone());
        Ok(entry)
    }

    fn decide_call(&self, call: &CallRequest<'_>) -> Determined {
        let deny = |reason: String| Determined::new(Decision::Deny(reason), Vec::new());
        let state = self.state();
        let Some(bound) = state.bound.clone() else {
            return deny("the Cedar policies were not validated against this registry".into());
        };
        let set = state.set.clone();
        // Checked whatever the policies read: a call whose arguments the policies could not
        // be shown is refused, so that what is allowed does not hang on what a set reads.
        let Some(arguments) = arguments(&bound, call.arguments()) else {
            return deny(
                "the call's arguments cannot be shown to the policies (a number outside 64 bits, a value of another type, or nesting too deep), so it was refused".into(),
            );
        };
        let judged = self
            .call_entry(&bound, &set, state.epoch, call)
            .and_then(|entry| {
                let whole = [set.permits.as_ref(), set.forbids.as_ref()];
                entry.specialised.decide(&self.inner.authorizer, whole, || {
                    let context = Context::from_pairs([
                        ("arguments".to_owned(), arguments),
                        (
                            "caller".to_owned(),
                            RestrictedExpression::new_string(call.caller().as_str().to_owned()),
                        ),
                        (
                            "run".to_owned(),
                            RestrictedExpression::new_string(call.run_id().to_owned()),
                        ),
                    ])
                    .map_err(|error| error.to_string())?;
                    let request = Request::new(
                        entry.principal.clone(),
                        bound.call.clone(),
                        entry.resource.clone(),
                        context,
                        None,
                    )
                    .map_err(|error| error.to_string())?;
                    Ok((request, &entry.entities))
                })
            });
        let found = match judged {
            Ok(found) => found,
            Err(error) => {
                return deny(format!(
                    "the Cedar policies could not judge the call: {}",
                    registry_core_escape(&error)
                ));
            }
        };
        let permits = sorted(found.permits);
        let forbids = sorted(found.forbids);
        if forbids.is_empty() {
            if permits.is_empty() {
                return Determined::new(
                    Decision::Deny("no policy permits this call".into()),
                    Vec::new(),
                );
            }
            return Determined::new(Decision::Allow, permits);
        }
        let meta = |id: &String| set.meta.get(id);
        let approvals: Vec<&str> = forbids
            .iter()
            .filter_map(|id| meta(id).and_then(|meta| meta.approval.as_deref()))
            .collect();
        if approvals.len() == forbids.len() && !permits.is_empty() {
            return Determined::new(Decision::RequireApproval(bounded(approvals[0])), forbids);
        }
        let reason = forbids
            .iter()
            .find_map(|id| meta(id).and_then(|meta| meta.reason.as_deref()))
            .map_or_else(|| "a policy denied the call".to_owned(), bounded);
        Determined::new(Decision::Deny(reason), forbids)
    }
}

impl AccessRule for CedarPolicies {
    fn check(&self, subject: &Subject, tool: &Tool) -> Visibility {
        self.list(subject, tool)
    }

    /// `true`: given to `access_rule`, the set would never be validated, so the build fails
    /// and says to give it with `RegistryBuilder::policies`.
    fn is_policy_set(&self) -> bool {
        true
    }
}

impl CallPolicy for CedarPolicies {
    fn decide(&self, call: &CallRequest<'_>) -> Decision {
        self.decide_call(call).decision
    }

    fn determine(&self, call: &CallRequest<'_>) -> Determined {
        self.decide_call(call)
    }

    /// `true`: given to `call_policy`, the set would never be validated, so the build fails
    /// and says to give it with `RegistryBuilder::policies`.
    fn is_policy_set(&self) -> bool {
        true
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
        let (Ok(principal_type), Ok(tool_type)) = (type_name("Principal"), type_name("Tool"))
        else {
            return Err(vec!["the entity types' names did not parse".into()]);
        };
        let bound = Bound {
            schema,
            vocabulary,
            list,
            call,
            principal_type,
            tool_type,
        };
        // The set in force is checked and bound with no reload in between; binding (again, or
        // to the registry a replacement would leave) drops every remembered decision.
        let _update = self.updating();
        let state = self.state();
        let problems = check(&state.set.policies, &bound);
        if !problems.is_empty() {
            return Err(problems);
        }
        self.swap(&state, state.set.clone(), Some(Arc::new(bound)));
        Ok(())
    }
}

/// A call's arguments as `context.arguments`: each argument the vocabulary types (the union
/// of every tool's properties, each optional), looked up one by one so that a call costs what
/// its own arguments cost, not what the registry declares; `None` if one is not of its type.
fn arguments(bound: &Bound, arguments: &Value) -> Option<RestrictedExpression> {
    let object = match arguments {
        Value::Object(object) => object,
        Value::Null => return RestrictedExpression::new_record([]).ok(),
        _ => return None,
    };
    let mut kept = Vec::with_capacity(object.len());
    for (name, value) in object {
        if value.is_null() {
            continue;
        }
        if let Some(ty) = bound.vocabulary.arguments.get(name) {
            kept.push((name.clone(), ty.expression(value, 1)?));
        }
    }
    RestrictedExpression::new_record(kept).ok()
}

/// The tool a call names, as the registry has it: rebuilt from the request (its settings and
/// name), since Cedar needs the tool's attributes.
fn call_tool(call: &CallRequest<'_>) -> ToolFacts {
    ToolFacts {
        name: call.tool_name().to_owned(),
        settings: call.settings().clone(),
    }
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

/// The principal, the tool and the entities that hold them. Built directly, not parsed from
/// JSON against the schema: every value is typed by the vocabulary the schema was written
/// from (a subject value of another type is left out), and an evaluation error denies.
fn entities(
    bound: &Bound,
    subject: &Subject,
    tool: &dyn ToolLike,
) -> Result<(EntityUid, EntityUid, Entities), String> {
    let principal = principal_uid(bound, subject);
    let resource =
        EntityUid::from_type_name_and_id(bound.tool_type.clone(), EntityId::new(tool.name()));
    let entities = Entities::from_entities(
        [
            principal_entity(bound, subject, principal.clone())?,
            tool_entity(tool, resource.clone())?,
        ],
        None,
    )
    .map_err(|error| error.to_string())?;
    Ok((principal, resource, entities))
}

fn principal_uid(bound: &Bound, subject: &Subject) -> EntityUid {
    let id = subject.principal().unwrap_or("anonymous");
    EntityUid::from_type_name_and_id(bound.principal_type.clone(), EntityId::new(id))
}

fn string(text: &str) -> RestrictedExpression {
    RestrictedExpression::new_string(text.to_owned())
}

fn strings<'t>(items: impl Iterator<Item = &'t str>) -> RestrictedExpression {
    RestrictedExpression::new_set(items.map(string).collect::<Vec<_>>())
}

/// The subject as Cedar's `Principal`.
fn principal_entity(bound: &Bound, subject: &Subject, uid: EntityUid) -> Result<Entity, String> {
    let mut attributes = HashMap::with_capacity(4 + subject.attributes().len());
    attributes.insert("tenant".to_owned(), string(subject.tenant()));
    attributes.insert("scopes".to_owned(), strings(subject.scopes()));
    attributes.insert("access".to_owned(), string(&access_name(subject.access())));
    if let Some(agent) = subject.agent() {
        attributes.insert("agent".to_owned(), string(agent));
    }
    for (key, value) in subject.attributes() {
        let typed = match (bound.vocabulary.subject.get(key), value) {
            (Some(Ty::String), AttributeValue::String(text)) => Some(string(text)),
            (Some(Ty::Long), AttributeValue::Number(n)) => Some(RestrictedExpression::new_long(*n)),
            (Some(Ty::Bool), AttributeValue::Bool(b)) => Some(RestrictedExpression::new_bool(*b)),
            (Some(Ty::Strings), AttributeValue::Set(items)) => {
                Some(strings(items.iter().map(String::as_str)))
            }
            _ => None,
        };
        if let Some(typed) = typed {
            attributes.insert(key.to_owned(), typed);
        }
    }
    Entity::new(uid, attributes, HashSet::new()).map_err(|error| error.to_string())
}

/// The tool as Cedar's `Tool`.
fn tool_entity(tool: &dyn ToolLike, uid: EntityUid) -> Result<Entity, String> {
    let settings = tool.settings();
    let mut attributes = HashMap::with_capacity(6 + settings.attributes.len());
    attributes.insert(
        "scopes".to_owned(),
        strings(settings.scopes.iter().map(|scope| scope.as_str())),
    );
    let flags = [
        ("read_only", settings.hints.read_only),
        ("destructive", settings.hints.destructive),
        ("idempotent", settings.hints.idempotent),
        ("open_world", settings.hints.open_world),
        ("needs_approval", settings.needs_approval),
    ];
    for (name, flag) in flags {
        attributes.insert(name.to_owned(), RestrictedExpression::new_bool(flag));
    }
    for (key, values) in &settings.attributes {
        attributes.insert(key.clone(), strings(values.iter().map(String::as_str)));
    }
    Entity::new(uid, attributes, HashSet::new()).map_err(|error| error.to_string())
}

/// `ids` sorted, so that what is audited and shown does not depend on hashing.
fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids.dedup();
    ids
}

/// The access level as the policies read it (its serialized name: `read_write`, `read_only`).
fn access_name(access: Access) -> Cow<'static, str> {
    match access {
        Access::ReadWrite => Cow::Borrowed("read_write"),
        Access::ReadOnly => Cow::Borrowed("read_only"),
        other => Cow::Owned(
            serde_json::to_value(other)
                .ok()
                .and_then(|value| value.as_str().map(str::to_owned))
                .unwrap_or_default(),
        ),
    }
}

fn type_name(name: &str) -> Result<EntityTypeName, String> {
    EntityTypeName::from_str(name).map_err(|error| error.to_string())
}

/// Every problem of `policies` against `bound`: Cedar's strict validation, every warning
/// that a policy can never apply, every `Tool::"..."` that names no registered tool, and
/// every read of an argument or attribute the vocabulary does not hold (Cedar types `has` on
/// a closed record without the attribute as `false`, so such a policy validates and never
/// applies).
fn check(policies: &PolicySet, bound: &Bound) -> Vec<String> {
    let mut problems = Vec::new();
    let result = Validator::new(bound.schema.clone()).validate(policies, ValidationMode::Strict);
    let mut found: Vec<String> = result
        .validation_errors()
        .map(|error| format!("policy {}: {error}", error.policy_id()))
        .collect();
    found.extend(result.validation_warnings().filter_map(|warning| match warning {
        ValidationWarning::ImpossiblePolicy(_) | ValidationWarning::InvalidActionApplication(_) => {
            Some(format!(
                "policy {}: {warning}; a policy that can never apply is refused (does it read an argument or attribute no tool declares?)",
                warning.policy_id()
            ))
        }
        _ => None,
    }));
    for problem in found {
        // Cedar reports a problem once per place it applies (a policy on every action twice).
        if !problems.contains(&problem) {
            problems.push(problem);
        }
    }
    let known: HashSet<&str> = bound.vocabulary.tools.iter().map(String::as_str).collect();
    let mut ids: Vec<&cedar_policy::Policy> = policies.policies().collect();
    ids.sort_by_key(|policy| policy.id().to_string());
    for policy in ids {
        let Ok(json) = policy.to_json() else {
            problems.push(format!(
                "policy {}: cannot be read back to be checked",
                policy.id()
            ));
            continue;
        };
        let mut named = Vec::new();
        tools_named(&json, &mut named);
        for name in named {
            if !known.contains(name.as_str()) {
                problems.push(format!(
                    "policy {}: names the tool {:?}, which is not registered",
                    policy.id(),
                    registry_core_escape(&name)
                ));
            }
        }
        let mut reads = Vec::new();
        reads_of(&json, false, &mut reads);
        for read in reads {
            if let Some(problem) = unread(&read, &bound.vocabulary) {
                let problem = format!("policy {}: {problem}", policy.id());
                if !problems.contains(&problem) {
                    problems.push(problem);
                }
            }
        }
    }
    problems
}

/// What a policy reads of the request, as a path from a variable (`["context", "arguments",
/// "cents"]`), or a whole variable or record (`["context"]`, `["context", "arguments"]`) used
/// as a value.
#[derive(Debug, PartialEq, Eq)]
enum Read {
    Path(Vec<String>),
    Whole(Vec<String>),
}

/// The path of an attribute chain from a variable (`context.arguments` is `["context",
/// "arguments"]`), if `expr` is one.
fn path_of(expr: &Value) -> Option<Vec<String>> {
    let object = expr.as_object()?;
    if let Some(var) = object.get("Var").and_then(Value::as_str) {
        return Some(vec![var.to_owned()]);
    }
    let access = object.get(".")?;
    let mut path = path_of(access.get("left")?)?;
    path.push(access.get("attr")?.as_str()?.to_owned());
    Some(path)
}

/// Every read of a policy's JSON form (Cedar's EST): each `.` and `has` on a chain from a
/// variable, and each use of `context` or `context.arguments` as a whole value (`as_left`:
/// `value` is the left side of an attribute access, not a value of its own).
fn reads_of(value: &Value, as_left: bool, out: &mut Vec<Read>) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object {
                match key.as_str() {
                    "." | "has" => {
                        if let Some(left) = inner.get("left") {
                            if let Some(mut path) = path_of(left) {
                                match inner.get("attr") {
                                    Some(Value::String(attr)) => path.push(attr.clone()),
                                    // `has a.b.c`: every attribute of the chain is read.
                                    Some(Value::Array(attrs)) => path.extend(
                                        attrs.iter().filter_map(Value::as_str).map(str::to_owned),
                                    ),
                                    _ => {}
                                }
                                out.push(Read::Path(path));
                            }
                            reads_of(left, true, out);
                        } else {
                            reads_of(inner, false, out);
                        }
                    }
                    "Var" if !as_left && inner.as_str() == Some("context") => {
                        out.push(Read::Whole(vec!["context".to_owned()]));
                    }
                    _ => reads_of(inner, false, out),
                }
            }
            if !as_left
                && let Some(path) = path_of(value)
                && path == ["context", "arguments"]
            {
                out.push(Read::Whole(path));
            }
        }
        Value::Array(items) => items.iter().for_each(|item| reads_of(item, false, out)),
        _ => {}
    }
}

/// Why `read` reads something the vocabulary does not hold, if it does.
fn unread(read: &Read, vocabulary: &Vocabulary) -> Option<String> {
    let path = match read {
        Read::Whole(path) => {
            return (!vocabulary.dropped.is_empty()).then(|| {
                let names: Vec<String> = vocabulary
                    .dropped
                    .keys()
                    .map(|name| format!("{:?}", registry_core_escape(name)))
                    .collect();
                format!(
                    "uses {} as a whole value, which lacks the arguments left out of context.arguments ({}); read each argument by name (`context.arguments has NAME && context.arguments.NAME ...`)",
                    path.join("."),
                    names.join(", ")
                )
            });
        }
        Read::Path(path) => path,
    };
    let shown = || {
        path.iter()
            .map(|part| registry_core_escape(part))
            .collect::<Vec<_>>()
            .join(".")
    };
    match path.as_slice() {
        [var, key] if var == "principal" => {
            let fixed = ["tenant", "scopes", "access", "agent"];
            (!fixed.contains(&key.as_str()) && !vocabulary.subject.contains_key(key)).then(|| {
                format!(
                    "reads {}, which no tool declares as an attribute and which was not declared with CedarPolicies::with_subject_attribute",
                    shown()
                )
            })
        }
        [var, key] if var == "resource" => {
            let fixed = [
                "scopes",
                "read_only",
                "destructive",
                "idempotent",
                "open_world",
                "needs_approval",
            ];
            (!fixed.contains(&key.as_str()) && !vocabulary.tool_keys.contains(key))
                .then(|| format!("reads {}, an attribute no tool declares", shown()))
        }
        [var, key] if var == "context" => (!["arguments", "caller", "run"].contains(&key.as_str()))
            .then(|| {
                format!(
                    "reads {}; the call context holds only arguments, caller and run",
                    shown()
                )
            }),
        [var, arguments, name, rest @ ..] if var == "context" && arguments == "arguments" => {
            if let Some(why) = vocabulary.dropped.get(name) {
                return Some(format!(
                    "reads the argument {:?}, which is left out of context.arguments ({why}), so the policy would never see it; give it one type Cedar has in every tool, or rename it in the tools that differ",
                    registry_core_escape(name)
                ));
            }
            let Some(mut ty) = vocabulary.arguments.get(name) else {
                return Some(format!(
                    "reads the argument {:?}, which no tool declares",
                    registry_core_escape(name)
                ));
            };
            for field in rest {
                match ty {
                    Ty::Record(fields) => match fields.get(field) {
                        Some((inner, _)) => ty = inner,
                        None => {
                            return Some(format!(
                                "reads {}, which the tools' schema of the argument {:?} does not have",
                                shown(),
                                registry_core_escape(name)
                            ));
                        }
                    },
                    // Cedar's validator refuses an attribute of a value that is not a record.
                    _ => return None,
                }
            }
            None
        }
        _ => None,
    }
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
    let mut permits = PolicySet::new();
    let mut forbids = PolicySet::new();
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
        // Where each policy starts: its line and its column (in characters, from 1).
        let mut from = 0;
        let mut placed = Vec::with_capacity(found.len());
        for policy in found {
            let source = policy.to_string();
            let at = text[from..]
                .find(&source)
                .map_or(from, |offset| from + offset);
            from = at + source.len().min(text.len() - at);
            let line = text[..at].matches('\n').count() + 1;
            let line_start = text[..at].rfind('\n').map_or(0, |newline| newline + 1);
            let column = text[line_start..at].chars().count() + 1;
            placed.push((policy, line, column));
        }
        for &(policy, line, column) in &placed {
            // Policies that share a line (Cedar takes them) are told apart by their column.
            let shared = placed.iter().filter(|(_, other, _)| *other == line).count() > 1;
            let place = if shared {
                format!("{line}:{column}")
            } else {
                line.to_string()
            };
            let id = match policy.annotation("id") {
                Some(id) => id.to_owned(),
                None if files.len() == 1 && name == "policies" => format!("line {place}"),
                None => format!("{name}:{place}"),
            };
            if meta.contains_key(&id) {
                return Err(parse_error(format!(
                    "two policies have the id {id:?}; give each its own @id"
                )));
            }
            let renamed = policy.new_id(PolicyId::new(&id));
            let approval = policy.annotation("approval").map(str::to_owned);
            match policy.effect() {
                Effect::Permit => permits.add(renamed.clone()),
                Effect::Forbid => forbids.add(renamed.clone()),
            }
            .map_err(|error| parse_error(error.to_string()))?;
            policies
                .add(renamed)
                .map_err(|error| parse_error(error.to_string()))?;
            meta.insert(
                id,
                Meta {
                    reason: policy.annotation("reason").map(str::to_owned),
                    approval,
                },
            );
        }
    }
    Ok(Set {
        policies,
        permits: (!permits.is_empty()).then_some(permits),
        forbids: (!forbids.is_empty()).then_some(forbids),
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
