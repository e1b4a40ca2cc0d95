//! Why a run cannot see a tool: for operators, never for the model. Its text shows reasons
//! and names escaped: one line per hidden tool, whatever a reason holds.

use std::fmt;

use serde::Serialize;

use crate::access::rule::hidden_by;
use crate::declare::settings::Scope;
use crate::discover::run::Run;
use crate::project::discovery::Snapshot;
use crate::shared::subject::Access;

/// Why each registered tool is not visible to a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Explanation {
    /// How many tools the registry had when the run was opened.
    pub registered: usize,
    /// How many the run may see.
    pub visible: usize,
    /// Every hidden tool, in name order, with every reason that hides it.
    pub hidden: Vec<HiddenTool>,
    /// Scopes the subject was granted that are not valid scope strings (they match nothing).
    pub malformed_scopes: Vec<String>,
    /// Attributes the subject was given and that were refused (their key, escaped, and why):
    /// they match nothing.
    pub refused_attributes: Vec<(String, String)>,
}

/// One hidden tool and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct HiddenTool {
    /// The tool.
    pub name: String,
    /// Every reason, in the order the rules are applied.
    pub reasons: Vec<HiddenReason>,
}

/// A reason a tool is hidden from a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum HiddenReason {
    /// The subject lacks these scopes.
    MissingScopes {
        /// The scopes the tool needs and the subject was not granted.
        missing: Vec<Scope>,
    },
    /// The tool is restricted to other tenants.
    OtherTenant {
        /// The tenants it is restricted to.
        tenants: Vec<String>,
    },
    /// A read-only run, and the tool is not `read_only`.
    WriteToolInReadOnlyRun,
    /// The tool is for other values of one of its attributes (or the subject has none for
    /// it, or had one refused).
    Attribute {
        /// The attribute's key.
        key: String,
        /// The values the tool is for.
        listed: Vec<String>,
    },
    /// The tool is revoked.
    Revoked {
        /// Why, as recorded.
        reason: String,
    },
    /// The tool's readiness check fails (see
    /// [`RegistryBuilder::readiness`](crate::RegistryBuilder::readiness)).
    NotReady {
        /// Why, as the check said.
        reason: String,
    },
    /// An [`AccessRule`](crate::access::AccessRule) of the application hides it.
    HiddenByRule {
        /// The rule's reason.
        reason: String,
    },
}

impl Explanation {
    /// Whether the registry had no tool at all (as opposed to every tool being filtered out).
    pub fn nothing_registered(&self) -> bool {
        self.registered == 0
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.registered == 0 {
            return f.write_str("no tool is registered at all");
        }
        if self.visible == 0 {
            writeln!(
                f,
                "all {} registered tools were filtered out:",
                self.registered
            )?;
        } else {
            writeln!(
                f,
                "{} of {} registered tools are visible; hidden:",
                self.visible, self.registered
            )?;
        }
        for tool in &self.hidden {
            let reasons: Vec<String> = tool.reasons.iter().map(ToString::to_string).collect();
            writeln!(f, "  - {}: {}", shown(&tool.name), reasons.join("; "))?;
        }
        for (key, why) in &self.refused_attributes {
            writeln!(
                f,
                "  ! attribute {} was refused and matches nothing: {}",
                shown(key),
                shown(why)
            )?;
        }
        for scope in &self.malformed_scopes {
            writeln!(
                f,
                "  ! granted scope {scope:?} is not a valid scope and matches nothing"
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for HiddenReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HiddenReason::MissingScopes { missing } => {
                let list: Vec<&str> = missing.iter().map(Scope::as_str).collect();
                write!(f, "missing scopes {}", list.join(", "))
            }
            HiddenReason::OtherTenant { tenants } => {
                let list: Vec<String> = tenants.iter().map(|tenant| shown(tenant)).collect();
                write!(f, "only for tenants {}", list.join(", "))
            }
            HiddenReason::WriteToolInReadOnlyRun => {
                f.write_str("not read-only, and the run is read-only")
            }
            HiddenReason::Attribute { key, listed } => {
                let list: Vec<String> = listed.iter().map(|value| shown(value)).collect();
                write!(
                    f,
                    "for {} {}, which the subject does not hold",
                    shown(key),
                    list.join(" or ")
                )
            }
            HiddenReason::Revoked { reason } => write!(f, "revoked: {}", shown(reason)),
            HiddenReason::NotReady { reason } => write!(f, "not ready: {}", shown(reason)),
            HiddenReason::HiddenByRule { reason } => {
                write!(f, "hidden by an access rule: {}", shown(reason))
            }
        }
    }
}

/// A text from outside (a reason a store or a check gave, a name) as an explanation shows
/// it: a line break as `\n` and every invisible or control character as `\u{...}`, so that it
/// can neither start a line of its own nor read differently from what it is.
fn shown(text: &str) -> String {
    registry_lint::escape(text)
}

impl Run {
    /// Why each registered tool this run cannot see is hidden; for operators, not the model.
    #[must_use]
    pub fn explain(&self) -> Explanation {
        explain(self, self.snapshot())
    }
}

/// Applies each rule to each tool of `snapshot`, collecting every reason.
pub(crate) fn explain(run: &Run, snapshot: &Snapshot) -> Explanation {
    let subject = run.subject();
    let registry = run.origin();
    let mut hidden = Vec::new();
    for (slot, tool) in snapshot.tools().enumerate() {
        if run.allowed().permits(tool.name()) {
            continue;
        }
        let settings = tool.settings();
        let mut reasons = Vec::new();
        let missing: Vec<Scope> = settings
            .scopes
            .iter()
            .filter(|scope| !subject.has_scope(scope.as_str()))
            .cloned()
            .collect();
        if !missing.is_empty() {
            reasons.push(HiddenReason::MissingScopes { missing });
        }
        if !settings.admits_tenant(subject.tenant()) {
            reasons.push(HiddenReason::OtherTenant {
                tenants: settings.tenants.clone(),
            });
        }
        if subject.access() == Access::ReadOnly && !settings.hints.read_only {
            reasons.push(HiddenReason::WriteToolInReadOnlyRun);
        }
        if let Some(key) = settings.attribute_hiding(subject) {
            reasons.push(HiddenReason::Attribute {
                key: key.to_owned(),
                listed: settings.attributes.get(key).cloned().unwrap_or_default(),
            });
        }
        if registry.is_revoked(slot, snapshot.version(slot)) {
            reasons.push(HiddenReason::Revoked {
                reason: registry
                    .revocation_reason(tool.name(), snapshot.version(slot))
                    .unwrap_or_else(|| "no reason recorded".into()),
            });
        }
        if let Some(reason) = registry.not_ready(slot) {
            reasons.push(HiddenReason::NotReady { reason });
        }
        if reasons.is_empty()
            && let Some(reason) = hidden_by(registry.access_rules(), subject, tool)
        {
            reasons.push(HiddenReason::HiddenByRule { reason });
        }
        if reasons.is_empty() {
            // Admitted by every rule now, but not when the run was opened (revoked then and
            // replaced since, or a rule that changed its mind): the run keeps its set.
            reasons.push(HiddenReason::HiddenByRule {
                reason: "not visible when the run was opened".into(),
            });
        }
        hidden.push(HiddenTool {
            name: tool.name().to_owned(),
            reasons,
        });
    }
    let malformed_scopes = subject
        .scopes()
        .filter(|scope| Scope::new(scope.to_string()).is_err())
        .map(str::to_owned)
        .collect();
    let refused_attributes = subject
        .refused_attributes()
        .map(|(key, why)| (key.to_owned(), why.to_owned()))
        .collect();
    Explanation {
        registered: snapshot.len(),
        visible: run.allowed().len(),
        hidden,
        malformed_scopes,
        refused_attributes,
    }
}

impl Run {
    /// See [`RunExt::needs_only_scopes`](crate::server::RunExt::needs_only_scopes).
    pub(crate) fn missing_scopes(&self, name: &str) -> Option<Vec<Scope>> {
        if self.allowed().permits(name) {
            return None;
        }
        let snapshot = self.snapshot();
        let registry = self.origin();
        let subject = self.subject();
        let (slot, tool) = snapshot
            .tools()
            .enumerate()
            .find(|(_, tool)| tool.name() == name)?;
        let settings = tool.settings();
        let lacks_scopes = settings
            .scopes
            .iter()
            .any(|scope| !subject.has_scope(scope.as_str()));
        let hidden_otherwise = !settings.admits_tenant(subject.tenant())
            || (subject.access() == Access::ReadOnly && !settings.hints.read_only)
            || settings.attribute_hiding(subject).is_some()
            || registry.is_revoked(slot, snapshot.version(slot))
            || registry.not_ready(slot).is_some();
        if !lacks_scopes || hidden_otherwise {
            return None;
        }
        if !registry.access_rules().is_empty() {
            let widened = subject.clone().with_scopes(
                settings
                    .scopes
                    .iter()
                    .map(|scope| scope.as_str().to_owned()),
            );
            if hidden_by(registry.access_rules(), &widened, tool).is_some() {
                return None;
            }
        }
        Some(settings.scopes.clone())
    }
}
