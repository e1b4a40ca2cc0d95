//! Who a run acts for: tenant, granted scopes, access level, agent, and the person.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use crate::shared::attribute::{AttributeValue, MAX_SUBJECT_ATTRIBUTES, check_attribute_key};

/// How much a run may change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Access {
    /// Every tool the scopes admit.
    #[default]
    ReadWrite,
    /// Only tools declared `read_only`, whatever the scopes.
    ReadOnly,
}

/// The subject of a run: the tenant it acts for, the scopes it was granted, its access level
/// and, optionally, the agent's name and the principal (the person, or the one credential)
/// it acts for.
///
/// The agent is the program calling (under OAuth, the client app, shared by every user of
/// that app); the principal is who it calls for. An approval request belongs to the principal
/// whose run made it: a run of another principal, even of the same tenant and agent, cannot
/// decide it ([`ApprovalError::OtherRun`](crate::approval::ApprovalError::OtherRun)). Rate limits and
/// the bound on pending approvals are kept per principal, and audit events name it.
///
/// ```
/// use registry_core::{access::Access, Subject};
///
/// let subject = Subject::new("tenant-a")
///     .with_scopes(["build:read", "deploy:write"])
///     .with_access(Access::ReadOnly)
///     .with_agent("release-bot")
///     .with_principal("alice@example.com");
/// assert_eq!(subject.tenant(), "tenant-a");
/// assert_eq!(subject.principal(), Some("alice@example.com"));
/// assert!(subject.has_scope("build:read"));
/// assert_eq!(subject.access(), Access::ReadOnly);
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Subject {
    tenant: Arc<str>,
    scopes: BTreeSet<String>,
    access: Access,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<Arc<str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    principal: Option<Arc<str>>,
    /// The attributes given ([`with_attribute`](Self::with_attribute)) that follow the rules.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    attributes: BTreeMap<Arc<str>, AttributeValue>,
    /// The attributes refused: their key (escaped) and why. Each matches nothing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    refused_attributes: Vec<(String, String)>,
}

impl Subject {
    /// A subject of `tenant` with no scopes and read-write access.
    #[must_use]
    pub fn new(tenant: impl Into<Arc<str>>) -> Self {
        Subject {
            tenant: tenant.into(),
            scopes: BTreeSet::new(),
            access: Access::ReadWrite,
            agent: None,
            principal: None,
            attributes: BTreeMap::new(),
            refused_attributes: Vec::new(),
        }
    }

    /// Grants these scopes too. Scopes are matched exactly; a string that is not a valid
    /// scope matches no tool, and [`Run::explain`](crate::Run::explain) points it out.
    #[must_use = "returns the subject; it changes nothing in place"]
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Restricts the run to tools declared `read_only`.
    #[deprecated(note = "use `with_access(Access::ReadOnly)`")]
    #[must_use = "returns the subject; it changes nothing in place"]
    pub fn read_only(self) -> Self {
        self.with_access(Access::ReadOnly)
    }

    /// Sets the access level: [`Access::ReadOnly`] restricts the run to tools declared
    /// `read_only`.
    #[must_use = "returns the subject; it changes nothing in place"]
    pub fn with_access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// Names the agent acting (for the audit log and policies).
    #[must_use = "returns the subject; it changes nothing in place"]
    pub fn with_agent(mut self, agent: impl Into<Arc<str>>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// Names the principal the run acts for: the person (or the one credential) behind the
    /// calls, as an id unique across every source of principals the application has (prefix
    /// it with its source; `registry-mcp` writes `oauth:{n}:{issuer}#{sub}` (`n` the issuer's length) for an OAuth
    /// token and `token:<name>` for a static one). Compared exactly, byte for byte.
    ///
    /// Two subjects that differ only in their principal are different subjects: an approval
    /// request made by one cannot be decided by the other, each has its own rate-limit
    /// buckets and its own share of
    /// [`max_pending_approvals`](crate::RegistryBuilder::max_pending_approvals).
    ///
    /// ```
    /// use registry_core::Subject;
    ///
    /// let alice = Subject::new("acme").with_agent("cli").with_principal("token:alice");
    /// let bob = Subject::new("acme").with_agent("cli").with_principal("token:bob");
    /// assert_ne!(alice, bob);
    /// assert_eq!(bob.principal(), Some("token:bob"));
    /// assert_eq!(Subject::new("acme").principal(), None);
    /// ```
    #[must_use = "returns the subject; it changes nothing in place"]
    pub fn with_principal(mut self, principal: impl Into<Arc<str>>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// Sets the attribute `key` (`environment`, `data_domain`, `workspace`...): a string, a
    /// whole number, a bool or a set of strings ([`AttributeValue`]). A tool declared with
    /// `attributes(key = ...)` is visible only to subjects whose value for each of its keys is
    /// one it lists.
    ///
    /// It stays a builder: a key that breaks the rule
    /// ([`check_attribute_key`](crate::access::check_attribute_key)), a value too long or
    /// holding a control, bidi or format character
    /// ([`check_attribute_text`](crate::access::check_attribute_text)), or an attribute past
    /// [`MAX_SUBJECT_ATTRIBUTES`](crate::access::MAX_SUBJECT_ATTRIBUTES) is not kept: it is
    /// listed by [`refused_attributes`](Self::refused_attributes) (and in the projection event
    /// of every run opened for the subject), and matches nothing, so every tool that declares
    /// its key is hidden. Setting a key again replaces its value.
    ///
    /// ```
    /// use registry_core::{access::AttributeValue, Subject};
    ///
    /// let subject = Subject::new("acme")
    ///     .with_attribute("environment", "staging")
    ///     .with_attribute("workspaces", ["ledger", "payroll"])
    ///     .with_attribute("clearance", 3)
    ///     .with_attribute("environment", "prod\u{202e}");
    /// assert_eq!(subject.attribute("clearance"), Some(&AttributeValue::Number(3)));
    /// // The hostile value was refused, and the key holds nothing.
    /// assert_eq!(subject.attribute("environment"), None);
    /// assert_eq!(subject.refused_attributes().count(), 1);
    /// ```
    #[must_use = "returns the subject; it changes nothing in place"]
    pub fn with_attribute(
        mut self,
        key: impl Into<Arc<str>>,
        value: impl Into<AttributeValue>,
    ) -> Self {
        let key = key.into();
        let value = value.into();
        let problem = check_attribute_key(&key)
            .err()
            .or_else(|| value.problem())
            .or_else(|| {
                (!self.attributes.contains_key(&key)
                    && self.attributes.len() >= MAX_SUBJECT_ATTRIBUTES)
                    .then(|| format!("more than {MAX_SUBJECT_ATTRIBUTES} attributes"))
            });
        match problem {
            None => {
                self.refused_attributes
                    .retain(|(refused, _)| refused.as_str() != &*key);
                self.attributes.insert(key, value);
            }
            Some(problem) => {
                // A refused value never stands in for the key's earlier one: the key matches
                // nothing.
                self.attributes.remove(&key);
                if self.refused_attributes.len() < MAX_SUBJECT_ATTRIBUTES {
                    self.refused_attributes
                        .push((registry_lint::escape(&key), problem));
                }
            }
        }
        self
    }

    /// The value of the attribute `key`, if one was given and kept.
    pub fn attribute(&self, key: &str) -> Option<&AttributeValue> {
        self.attributes.get(key)
    }

    /// Every attribute kept, by key.
    pub fn attributes(&self) -> impl ExactSizeIterator<Item = (&str, &AttributeValue)> + '_ {
        self.attributes.iter().map(|(key, value)| (&**key, value))
    }

    /// The attributes given and refused: each key (escaped, so it prints as what it is) and
    /// why. A refused attribute matches no tool.
    pub fn refused_attributes(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.refused_attributes
            .iter()
            .map(|(key, why)| (key.as_str(), why.as_str()))
    }

    /// The principal, if given ([`with_principal`](Self::with_principal)).
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// The tenant.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The granted scopes, sorted.
    pub fn scopes(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.scopes.iter().map(String::as_str)
    }

    /// Whether `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }

    /// The access level.
    pub fn access(&self) -> Access {
        self.access
    }

    /// The agent's name, if given.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }
}

impl fmt::Debug for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Subject");
        debug
            .field("tenant", &self.tenant)
            .field("scopes", &self.scopes)
            .field("access", &self.access)
            .field("agent", &self.agent)
            .field("principal", &self.principal);
        // Only when given, so that a subject without attributes prints as it did.
        if !self.attributes.is_empty() {
            debug.field("attributes", &self.attributes);
        }
        if !self.refused_attributes.is_empty() {
            debug.field("refused_attributes", &self.refused_attributes);
        }
        debug.finish()
    }
}
