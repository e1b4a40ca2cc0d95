//! The attributes a run is judged by beside its tenant and scopes (`environment`,
//! `data_domain`, `workspace`...), and the one rule their keys and values follow.
//!
//! A subject carries attribute values ([`Subject::with_attribute`]); a tool declares, per key,
//! the values it is for (`#[tool(attributes(data_domain = "finance"))]`,
//! [`DynamicTool::attribute`](crate::DynamicTool::attribute)). A tool is visible to a subject
//! only if, for every key the tool declares, the subject's value is one of the listed values
//! (for a set value: one of its members is).
//!
//! [`Subject::with_attribute`]: crate::Subject::with_attribute

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;

/// At most this many attributes on one subject; past it, the further ones are refused (and
/// match nothing).
pub const MAX_SUBJECT_ATTRIBUTES: usize = 32;
/// At most this many attribute keys declared by one tool.
pub const MAX_TOOL_ATTRIBUTES: usize = registry_lint::MAX_TOOL_ATTRIBUTES;
/// At most this many values in one set value, or listed for one key by a tool.
pub const MAX_ATTRIBUTE_VALUES: usize = registry_lint::MAX_ATTRIBUTE_VALUES;
/// At most this many bytes in one key.
pub const MAX_ATTRIBUTE_KEY: usize = registry_lint::MAX_ATTRIBUTE_KEY;
/// At most this many bytes in one string value (or one member of a set).
pub const MAX_ATTRIBUTE_VALUE: usize = registry_lint::MAX_ATTRIBUTE_VALUE;

/// The value of one attribute of a subject: a string, a whole number, a bool, or a set of
/// strings.
///
/// ```
/// use registry_core::access::AttributeValue;
///
/// assert_eq!(AttributeValue::from("finance"), AttributeValue::String("finance".into()));
/// assert_eq!(AttributeValue::from(3), AttributeValue::Number(3));
/// assert_eq!(AttributeValue::from(["eu", "us"]).to_string(), r#"["eu", "us"]"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum AttributeValue {
    /// A string, such as `"production"`.
    String(String),
    /// A whole number.
    Number(i64),
    /// A bool.
    Bool(bool),
    /// A set of strings, such as the workspaces a person belongs to.
    Set(BTreeSet<String>),
}

impl AttributeValue {
    /// Whether this value is one of `listed` (a tool's values for its key): a string equal to
    /// one of them, a set with a member equal to one, a number or a bool written as one
    /// (`3`, `true`). Compared exactly, byte for byte: nothing is trimmed, folded or
    /// normalised.
    pub fn is_one_of<S: AsRef<str>>(&self, listed: &[S]) -> bool {
        let listed = |value: &str| listed.iter().any(|item| item.as_ref() == value);
        match self {
            AttributeValue::String(value) => listed(value),
            AttributeValue::Number(value) => listed(&value.to_string()),
            AttributeValue::Bool(value) => listed(if *value { "true" } else { "false" }),
            AttributeValue::Set(values) => values.iter().any(|value| listed(value)),
        }
    }

    /// Why this value may not be a subject's attribute, if it may not: too long, too many
    /// members, or a character that is not shown as itself ([`check_attribute_text`]).
    pub fn problem(&self) -> Option<String> {
        match self {
            AttributeValue::String(value) => check_attribute_text(value).err(),
            AttributeValue::Number(_) | AttributeValue::Bool(_) => None,
            AttributeValue::Set(values) if values.len() > MAX_ATTRIBUTE_VALUES => Some(format!(
                "a set of {} values (at most {MAX_ATTRIBUTE_VALUES})",
                values.len()
            )),
            AttributeValue::Set(values) => values
                .iter()
                .find_map(|value| check_attribute_text(value).err()),
        }
    }
}

impl fmt::Display for AttributeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttributeValue::String(value) => write!(f, "{value:?}"),
            AttributeValue::Number(value) => write!(f, "{value}"),
            AttributeValue::Bool(value) => write!(f, "{value}"),
            AttributeValue::Set(values) => {
                f.write_str("[")?;
                for (i, value) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{value:?}")?;
                }
                f.write_str("]")
            }
        }
    }
}

impl From<&str> for AttributeValue {
    fn from(value: &str) -> Self {
        AttributeValue::String(value.to_owned())
    }
}

impl From<String> for AttributeValue {
    fn from(value: String) -> Self {
        AttributeValue::String(value)
    }
}

impl From<i64> for AttributeValue {
    fn from(value: i64) -> Self {
        AttributeValue::Number(value)
    }
}

impl From<i32> for AttributeValue {
    fn from(value: i32) -> Self {
        AttributeValue::Number(value.into())
    }
}

impl From<u32> for AttributeValue {
    fn from(value: u32) -> Self {
        AttributeValue::Number(value.into())
    }
}

impl From<bool> for AttributeValue {
    fn from(value: bool) -> Self {
        AttributeValue::Bool(value)
    }
}

impl<S: Into<String>, const N: usize> From<[S; N]> for AttributeValue {
    fn from(values: [S; N]) -> Self {
        AttributeValue::Set(values.into_iter().map(Into::into).collect())
    }
}

impl From<Vec<String>> for AttributeValue {
    fn from(values: Vec<String>) -> Self {
        AttributeValue::Set(values.into_iter().collect())
    }
}

impl From<BTreeSet<String>> for AttributeValue {
    fn from(values: BTreeSet<String>) -> Self {
        AttributeValue::Set(values)
    }
}

/// Checks an attribute key: a lowercase ASCII letter, then lowercase ASCII letters, digits
/// and `_`, at most [`MAX_ATTRIBUTE_KEY`] bytes (`environment`, `data_domain`), and not one
/// of the names a policy reads already (`tenant`, `scopes`, `access`, `agent`, `principal`,
/// the hints `read_only`, `destructive`, `idempotent`, `open_world`, `needs_approval`) nor a
/// word Cedar reserves (`true`, `false`, `if`, `then`, `else`, `in`, `like`, `has`, `is`).
/// The same rule as `#[tool(attributes(...))]`'s, which refuses such a key at compile time.
///
/// ```
/// use registry_core::access::check_attribute_key;
///
/// assert!(check_attribute_key("data_domain").is_ok());
/// assert!(check_attribute_key("Environment").is_err());
/// assert!(check_attribute_key("scopes").is_err());
/// ```
pub fn check_attribute_key(key: &str) -> Result<(), String> {
    registry_lint::check_attribute_key(key)
}

/// Checks one attribute text (a string value, a set member, or a value a tool lists): at
/// most [`MAX_ATTRIBUTE_VALUE`] bytes, not empty, and no NUL, control, bidi or format
/// character, which would show as something else than it is in an audit row or an
/// operator's output.
///
/// ```
/// use registry_core::access::check_attribute_text;
///
/// assert!(check_attribute_text("production").is_ok());
/// assert!(check_attribute_text("prod\u{202e}uction").is_err());
/// assert!(check_attribute_text("a\0b").is_err());
/// ```
pub fn check_attribute_text(text: &str) -> Result<(), String> {
    registry_lint::check_attribute_text(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_match_exactly() {
        let listed = ["staging", "production"];
        assert!(AttributeValue::from("staging").is_one_of(&listed));
        assert!(!AttributeValue::from("Staging").is_one_of(&listed));
        assert!(!AttributeValue::from("staging ").is_one_of(&listed));
        assert!(AttributeValue::from(["dev", "production"]).is_one_of(&listed));
        assert!(!AttributeValue::from(["dev"]).is_one_of(&listed));
        assert!(AttributeValue::from(3).is_one_of(&["3"]));
        assert!(AttributeValue::from(true).is_one_of(&["true"]));
    }

    #[test]
    fn hostile_texts_are_refused() {
        for text in ["a\0b", "a\nb", "a\u{202e}b", "a\u{200b}b", "a\u{2028}b", ""] {
            assert!(check_attribute_text(text).is_err(), "{text:?}");
        }
        assert!(check_attribute_text(&"x".repeat(MAX_ATTRIBUTE_VALUE + 1)).is_err());
        assert!(check_attribute_text("finance-eu_1.2").is_ok());
    }

    use std::sync::{Arc, Mutex};

    use serde_json::json;

    use crate::audit::AuditEvent;
    use crate::call::Caller;
    use crate::gate::{CallPolicy, CallRequest, Decision, Determined};
    use crate::{DynamicTool, ErrorKind, Registry, Subject, ToolCall, tool};

    /// Read a ledger's balance.
    #[tool(
        crate = crate,
        scopes = "ledger:read",
        read_only,
        attributes(data_domain = "finance", environment = ["staging", "production"])
    )]
    fn ledger_balance() -> u64 {
        7
    }

    fn events() -> (
        Arc<Mutex<Vec<AuditEvent>>>,
        impl Fn(&AuditEvent) + Send + Sync + 'static,
    ) {
        let events = Arc::new(Mutex::new(Vec::new()));
        let kept = events.clone();
        (events, move |event: &AuditEvent| {
            kept.lock().unwrap().push(event.clone())
        })
    }

    fn ledger() -> Registry {
        Registry::builder()
            .declared_in(["registry_core::shared::attribute"])
            .build()
            .unwrap()
    }

    fn finance(environment: &str) -> Subject {
        Subject::new("acme")
            .with_scopes(["ledger:read"])
            .with_attribute("data_domain", "finance")
            .with_attribute("environment", environment)
    }

    #[test]
    fn a_tool_is_visible_only_when_every_key_admits_the_subject() {
        let registry = ledger();
        let sees = |subject: &Subject| {
            registry
                .open_run("r", subject)
                .allowed()
                .permits("ledger_balance")
        };
        assert!(sees(&finance("staging")));
        assert!(sees(&finance("production")));
        assert!(!sees(&finance("development")));
        // A set value admits when one of its members is listed.
        assert!(sees(
            &finance("x").with_attribute("environment", ["dev", "production"])
        ));
        // Without the key, or with only one of the two keys: hidden.
        assert!(!sees(
            &Subject::new("acme")
                .with_scopes(["ledger:read"])
                .with_attribute("data_domain", "finance")
        ));
        // Scopes still apply.
        assert!(!sees(
            &Subject::new("acme")
                .with_attribute("data_domain", "finance")
                .with_attribute("environment", "staging")
        ));
        // Exact bytes only: nothing is trimmed, folded or normalised.
        for near in ["Finance", "finance ", "fin\u{200b}ance", "finance\u{202e}"] {
            let subject = finance("staging").with_attribute("data_domain", near);
            assert!(!sees(&subject), "{near:?}");
        }
        // Hidden from the model's view is also refused as a call.
        let run = registry.open_run("r", &finance("development"));
        let call = run.call_blocking(ToolCall::new("c", "ledger_balance", json!({})));
        assert_eq!(call.error_kind(), Some(ErrorKind::NotAllowed));
    }

    #[test]
    fn explain_names_the_attribute_and_the_refused_values() {
        let registry = ledger();
        let subject = finance("development").with_attribute("workspace", "ops\nadmin=1");
        let explanation = registry.open_run("r", &subject).explain();
        let text = explanation.to_string();
        assert!(
            text.contains("for environment staging or production,"),
            "{text}"
        );
        assert!(text.contains("attribute workspace was refused"), "{text}");
        // The hostile value never reaches the text as a line of its own.
        assert!(!text.contains("\nadmin=1"), "{text}");
        assert_eq!(explanation.refused_attributes.len(), 1);
    }

    #[test]
    fn the_projection_event_records_keys_never_values_and_the_refusals() {
        let (events, sink) = events();
        let registry = Registry::builder()
            .declared_in(["registry_core::shared::attribute"])
            .audit_sink(sink)
            .build()
            .unwrap();
        let subject = finance("staging").with_attribute("workspace", "a\0b");
        let _run = registry.open_run("r", &subject);
        let events = events.lock().unwrap();
        let Some(AuditEvent::Projection(projection)) = events.last() else {
            panic!("no projection event: {events:?}");
        };
        assert_eq!(projection.attribute_keys, ["data_domain", "environment"]);
        assert_eq!(projection.refused_attributes.len(), 1);
        assert_eq!(projection.refused_attributes[0].0, "workspace");
        let json = serde_json::to_string(projection).unwrap();
        assert!(
            !json.contains("finance") && !json.contains("staging"),
            "{json}"
        );
    }

    #[test]
    fn attributes_are_part_of_a_tools_version_its_lockfile_and_capability() {
        let tool = |attributed: bool| {
            let tool = DynamicTool::new("balance", "Read a balance.")
                .scopes(["ledger:read"])
                .handler(|_, _| Ok::<_, String>(json!(1)));
            let tool = if attributed {
                tool.attribute("data_domain", ["finance"])
            } else {
                tool
            };
            Registry::builder().tool(tool).build().unwrap()
        };
        let (plain, attributed) = (tool(false), tool(true));
        assert_ne!(
            plain.get("balance").unwrap().version_fingerprint(),
            attributed.get("balance").unwrap().version_fingerprint()
        );
        assert!(!plain.lock().contains("attribute."));
        assert!(
            attributed
                .lock()
                .contains("attribute.data_domain = finance\n"),
            "{}",
            attributed.lock()
        );
        let subject = Subject::new("acme")
            .with_scopes(["ledger:read"])
            .with_attribute("data_domain", "finance");
        let run = attributed.open_run("r", &subject);
        let capability = run.capabilities().next().unwrap();
        assert_eq!(capability.attributes["data_domain"], ["finance"]);
    }

    #[test]
    fn the_build_lists_every_hostile_or_malformed_tool_attribute() {
        let error = Registry::builder()
            .tool(
                DynamicTool::new("balance", "Read a balance.")
                    .scopes(["ledger:read"])
                    .attribute("Data-Domain", ["finance"])
                    .attribute("environment", ["prod\u{202e}", "staging", "staging"])
                    .attribute("workspace", Vec::<String>::new())
                    .attribute("tenant", ["acme"])
                    .handler(|_, _| Ok::<_, String>(json!(1))),
            )
            .build()
            .unwrap_err()
            .to_string();
        for expected in [
            "Data-Domain",
            "U+202E",
            "\"staging\" twice",
            "`workspace` lists no value",
            "`tenant` is reserved",
        ] {
            assert!(error.contains(expected), "{expected}: {error}");
        }
    }

    #[test]
    fn a_subject_keeps_a_bounded_number_of_attributes() {
        let mut subject = Subject::new("acme");
        for i in 0..MAX_SUBJECT_ATTRIBUTES + 5 {
            subject = subject.with_attribute(format!("k{i}"), "v");
        }
        assert_eq!(subject.attributes().count(), MAX_SUBJECT_ATTRIBUTES);
        assert_eq!(subject.refused_attributes().count(), 5);
        let long = Subject::new("acme").with_attribute("k", "x".repeat(MAX_ATTRIBUTE_VALUE + 1));
        assert_eq!(long.attribute("k"), None);
    }

    fn approval_tool(callable_from_code: bool) -> DynamicTool {
        let tool = DynamicTool::new("restart", "Restart a service.")
            .scopes(["ops:write"])
            .needs_approval()
            .handler(|_, _| Ok::<_, String>(json!("restarted")));
        if callable_from_code {
            tool.callable_from_code()
        } else {
            tool
        }
    }

    #[test]
    fn code_cannot_wait_for_a_person_unless_the_tool_says_so() {
        for callable in [false, true] {
            let (events, sink) = events();
            let registry = Registry::builder()
                .tool(approval_tool(callable))
                .audit_sink(sink)
                .build()
                .unwrap();
            let run = registry.open_run("r", &Subject::new("acme").with_scopes(["ops:write"]));
            let from_code = run
                .call_blocking(ToolCall::new("c1", "restart", json!({})).with_caller(Caller::Code));
            if callable {
                assert_eq!(from_code.error_kind(), Some(ErrorKind::ApprovalRequired));
            } else {
                assert_eq!(from_code.error_kind(), Some(ErrorKind::Denied));
                assert!(
                    from_code.error_text().unwrap().contains("cannot wait"),
                    "{from_code:?}"
                );
            }
            // The model itself may still ask.
            let direct = run.call_blocking(ToolCall::new("c2", "restart", json!({})));
            assert_eq!(direct.error_kind(), Some(ErrorKind::ApprovalRequired));
            let events = events.lock().unwrap();
            let callers: Vec<Caller> = events
                .iter()
                .filter_map(|event| match event {
                    AuditEvent::Call(call) => Some(call.caller),
                    _ => None,
                })
                .collect();
            assert_eq!(callers, [Caller::Code, Caller::Model]);
        }
    }

    /// A policy that names itself, as a policy engine does.
    struct Named(&'static str, Decision);

    impl CallPolicy for Named {
        fn decide(&self, _: &CallRequest<'_>) -> Decision {
            self.1.clone()
        }
        fn determine(&self, call: &CallRequest<'_>) -> Determined {
            assert_eq!(call.caller(), Caller::Code);
            Determined::new(self.decide(call), vec![self.0.to_owned()])
        }
    }

    #[test]
    fn a_policys_approval_from_code_is_refused_and_the_deciding_ids_are_audited() {
        let (events, sink) = events();
        let registry = Registry::builder()
            .tool(
                DynamicTool::new("restart", "Restart a service.")
                    .scopes(["ops:write"])
                    .handler(|_, _| Ok::<_, String>(json!("ok"))),
            )
            .call_policy(Named("permit-ops", Decision::Allow))
            .call_policy(Named(
                "ask-on-restart",
                Decision::RequireApproval("a restart".into()),
            ))
            .audit_sink(sink)
            .build()
            .unwrap();
        let run = registry.open_run("r", &Subject::new("acme").with_scopes(["ops:write"]));
        let call =
            run.call_blocking(ToolCall::new("c1", "restart", json!({})).with_caller(Caller::Code));
        assert_eq!(call.error_kind(), Some(ErrorKind::Denied));
        let events = events.lock().unwrap();
        let Some(AuditEvent::Call(event)) = events.last() else {
            panic!("{events:?}")
        };
        assert_eq!(event.policies, ["ask-on-restart"]);
        assert_eq!(event.caller, Caller::Code);
    }
}
