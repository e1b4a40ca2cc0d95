//! Checks around a result: what a tool gave back, seen before the model reads it.
//!
//! Tests: `tests/tests/integration/gate_result_checks.rs`.

use serde_json::{Map, Value};

use crate::content::{Content, Embedded};
use crate::declare::settings::ToolSettings;
use crate::shared::caller::Caller;
use crate::shared::subject::Subject;

/// Sees every result of a tool before the model does, and passes it, redacts parts of it, or
/// withholds it. Any `Fn(&mut ToolResult<'_>) -> ResultDecision + Send + Sync + 'static` is
/// one.
///
/// Add checks with [`RegistryBuilder::result_check`](crate::RegistryBuilder::result_check);
/// they run in the order given, each on the result the one before left, on every path that
/// produces a result: [`Run::call`](crate::Run::call), [`Run::call_blocking`](crate::Run::call_blocking),
/// the server hooks ([`RunExt::call_with`](crate::server::RunExt::call_with)), a call run
/// after a person's approval ([`Run::decide`](crate::Run::decide)) and a task's result.
///
/// - **Pass**: return [`ResultDecision::Pass`] without touching the result.
/// - **Redact**: change the result through [`ToolResult`]'s methods
///   ([`redact_strings`](ToolResult::redact_strings), [`replace_json`](ToolResult::replace_json),
///   [`replace_content`](ToolResult::replace_content)) and return `Pass`: the model gets the
///   changed result, and the call's audit event says `redacted`.
/// - **Withhold**: return [`ResultDecision::Withhold`] with a reason: the model gets an error
///   ([`ErrorKind::Denied`](crate::ErrorKind::Denied)) saying a check withheld the result,
///   with the reason; the tool has run (its effects are done), and the audit event says
///   `withheld`. The checks after it are not asked.
///
/// A check that panics withholds (fail closed). Checks see the results of calls that
/// succeeded; an error's text is the registry's or the tool's own and is not shown to them.
///
/// ```
/// use registry_core::gate::{ResultDecision, ToolResult};
/// use registry_core::{DynamicTool, ErrorKind, Registry, Subject, ToolCall};
/// use serde_json::json;
///
/// let registry = Registry::builder()
///     .tool(DynamicTool::new("lookup_customer", "Look a customer up.")
///         .public()
///         .handler(|_, _| Ok::<_, String>(json!({"name": "Ada", "card": "4111 1111 1111 1111"}))))
///     // Mask card numbers in every string of every result.
///     .result_check(|result: &mut ToolResult<'_>| {
///         result.redact_strings(|text| text.contains("4111").then(|| "[card]".to_owned()));
///         ResultDecision::Pass
///     })
///     // Nothing of the customers' table reaches a run of another tenant.
///     .result_check(|result: &mut ToolResult<'_>| {
///         if result.subject().tenant() == "guest" {
///             ResultDecision::Withhold("guests do not see customer records".into())
///         } else {
///             ResultDecision::Pass
///         }
///     })
///     .build()?;
///
/// let run = registry.open_run("r1", &Subject::new("acme"));
/// let answer = run.call_blocking(ToolCall::new("c1", "lookup_customer", json!({})));
/// assert_eq!(answer.json(), &json!({"name": "Ada", "card": "[card]"}));
///
/// let guest = registry.open_run("r2", &Subject::new("guest"));
/// let answer = guest.call_blocking(ToolCall::new("c1", "lookup_customer", json!({})));
/// assert_eq!(answer.error_kind(), Some(ErrorKind::Denied));
/// assert!(answer.error_text().unwrap().contains("guests do not see customer records"));
/// # Ok::<(), registry_core::RegistryError>(())
/// ```
pub trait ResultCheck: Send + Sync + 'static {
    /// Looks at one result: passes it (changed or not) or withholds it.
    fn check(&self, result: &mut ToolResult<'_>) -> ResultDecision;
}

impl<F> ResultCheck for F
where
    F: Fn(&mut ToolResult<'_>) -> ResultDecision + Send + Sync + 'static,
{
    fn check(&self, result: &mut ToolResult<'_>) -> ResultDecision {
        self(result)
    }
}

/// What a [`ResultCheck`] decides for one result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultDecision {
    /// The result goes on (with whatever the check redacted), to the next check, then to the
    /// model.
    Pass,
    /// The model does not get the result: it reads an error saying a check withheld it, with
    /// this reason. The tool has run.
    Withhold(String),
}

/// One result of a tool, as a [`ResultCheck`] sees it: the call (subject, run, call id, tool,
/// who made it), the result's JSON value and its content blocks, and the means to redact them.
///
/// A plain result (a `#[tool]` function's return value) is a JSON value without blocks; a
/// result of content alone has blocks and no value; a `ToolOutput` has both.
#[derive(Debug)]
pub struct ToolResult<'a> {
    pub(crate) subject: &'a Subject,
    pub(crate) run_id: &'a str,
    pub(crate) call_id: &'a str,
    pub(crate) tool_name: &'a str,
    pub(crate) settings: &'a ToolSettings,
    pub(crate) caller: Caller,
    pub(crate) value: &'a mut Option<Value>,
    pub(crate) blocks: &'a mut Vec<Content>,
    pub(crate) redacted: bool,
}

impl<'a> ToolResult<'a> {
    /// The subject the run acts for.
    pub fn subject(&self) -> &'a Subject {
        self.subject
    }

    /// The run's id.
    pub fn run_id(&self) -> &'a str {
        self.run_id
    }

    /// The model's id for the call.
    pub fn call_id(&self) -> &'a str {
        self.call_id
    }

    /// The tool that ran.
    pub fn tool_name(&self) -> &'a str {
        self.tool_name
    }

    /// The tool's settings: scopes, attributes, hints...
    pub fn settings(&self) -> &'a ToolSettings {
        self.settings
    }

    /// Who made the call: the model, or code it wrote.
    pub fn caller(&self) -> Caller {
        self.caller
    }

    /// The result's JSON value (for a `ToolOutput`, its structured value); `None` for a
    /// result of content blocks alone.
    pub fn json(&self) -> Option<&Value> {
        self.value.as_ref()
    }

    /// The result's content blocks, in order (empty for a plain value).
    pub fn content(&self) -> &[Content] {
        self.blocks
    }

    /// Whether a check has changed the result so far.
    pub fn is_redacted(&self) -> bool {
        self.redacted
    }

    /// Replaces the JSON value (`None` leaves content alone); the result counts as redacted.
    pub fn replace_json(&mut self, value: Option<Value>) {
        *self.value = value;
        self.redacted = true;
    }

    /// Replaces the content blocks; the result counts as redacted.
    pub fn replace_content(&mut self, blocks: Vec<Content>) {
        *self.blocks = blocks;
        self.redacted = true;
    }

    /// Offers every text of the result to `redact`, which returns the text to put in its place
    /// (`None`: keep it): every string of the JSON value, object keys included, the text of
    /// every text block and of every embedded text resource. Returns how many texts were
    /// replaced; any replacement makes the result count as redacted.
    ///
    /// ```
    /// use registry_core::content::Content;
    /// use registry_core::gate::{ResultDecision, ToolResult};
    /// use registry_core::{DynamicTool, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// let registry = Registry::builder()
    ///     .tool(DynamicTool::new("read_env", "Read the environment.")
    ///         .public()
    ///         .handler(|_, _| Ok::<_, String>(vec![Content::text("HOME=/root"), Content::text("PASSWORD=hunter2")])))
    ///     .result_check(|result: &mut ToolResult<'_>| {
    ///         result.redact_strings(|text| {
    ///             text.split_once("PASSWORD=").map(|(before, _)| format!("{before}PASSWORD=[redacted]"))
    ///         });
    ///         ResultDecision::Pass
    ///     })
    ///     .build()?;
    /// let run = registry.open_run("r1", &Subject::new("acme"));
    /// let answer = run.call_blocking(ToolCall::new("c1", "read_env", json!({})));
    /// assert_eq!(answer.blocks()[1].as_text(), Some("PASSWORD=[redacted]"));
    /// # Ok::<(), registry_core::RegistryError>(())
    /// ```
    pub fn redact_strings(&mut self, mut redact: impl FnMut(&str) -> Option<String>) -> usize {
        let mut replaced = 0;
        if let Some(value) = self.value.as_mut() {
            replaced += redact_value(value, &mut redact);
        }
        for block in self.blocks.iter_mut() {
            replaced += redact_block(block, &mut redact);
        }
        if replaced > 0 {
            self.redacted = true;
        }
        replaced
    }
}

/// Offers every string of `value` (object keys included) to `redact`; how many it replaced.
fn redact_value(value: &mut Value, redact: &mut dyn FnMut(&str) -> Option<String>) -> usize {
    match value {
        Value::String(text) => match redact(text) {
            Some(new) => {
                *text = new;
                1
            }
            None => 0,
        },
        Value::Array(items) => items
            .iter_mut()
            .map(|item| redact_value(item, redact))
            .sum(),
        Value::Object(object) => {
            let mut replaced = 0;
            let renamed: Vec<(String, String)> = object
                .keys()
                .filter_map(|key| redact(key).map(|new| (key.clone(), new)))
                .collect();
            if !renamed.is_empty() {
                let mut rebuilt = Map::new();
                for (key, item) in std::mem::take(object) {
                    let key = match renamed.iter().find(|(old, _)| *old == key) {
                        Some((_, new)) => new.clone(),
                        None => key,
                    };
                    rebuilt.insert(key, item);
                }
                *object = rebuilt;
                replaced += renamed.len();
            }
            replaced
                + object
                    .values_mut()
                    .map(|item| redact_value(item, redact))
                    .sum::<usize>()
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}

/// Offers the text of a text block or of an embedded text resource to `redact`.
fn redact_block(block: &mut Content, redact: &mut dyn FnMut(&str) -> Option<String>) -> usize {
    match block {
        Content::Text(text) => match redact(text) {
            Some(new) => {
                *text = new;
                1
            }
            None => 0,
        },
        Content::Resource(resource) => match resource.contents() {
            Embedded::Text { mime_type, text } => match redact(text) {
                Some(new) => {
                    *block = Content::embedded_text(resource.uri(), mime_type.clone(), new);
                    1
                }
                None => 0,
            },
            Embedded::Blob(_) => 0,
        },
        Content::Image(_) | Content::Audio(_) | Content::ResourceLink(_) => 0,
    }
}

/// The built-in check that cuts secrets out of results: every private key, bearer token, API
/// token of a known shape (`sk-...`, `ghp_...`, `AKIA...`, ...), JSON Web Token and password
/// in a URL that [`registry-lint`](registry_lint)'s secret rules find, in every string of the
/// JSON value (keys included) and in the text of every text block and embedded text
/// resource, is replaced by a marker naming the rule: `[redacted: secret/api-token]`. A
/// result it changed is audited as redacted.
///
/// Add it with [`RegistryBuilder::redact_secrets`](crate::RegistryBuilder::redact_secrets)
/// (or as any check, with [`result_check`](crate::RegistryBuilder::result_check)). The rules
/// look for the shapes of real secrets: a placeholder (`sk-xxxx...`) is left alone, and a
/// secret of a shape they do not know passes; it is a net, not a guarantee.
///
/// ```
/// use registry_core::{DynamicTool, Registry, Subject, ToolCall};
/// use serde_json::json;
///
/// let registry = Registry::builder()
///     .tool(DynamicTool::new("read_config", "Read the deployment's configuration.")
///         .public()
///         .handler(|_, _| Ok::<_, String>(json!({
///             "region": "eu-west-1",
///             "token": "ghp_Zq8vN2xR5tL9wK3mB7cJ1fH4dG6sP0aY2eU8",
///         }))))
///     .redact_secrets()
///     .build()?;
/// let run = registry.open_run("r1", &Subject::new("acme"));
/// let answer = run.call_blocking(ToolCall::new("c1", "read_config", json!({})));
/// assert_eq!(answer.json(), &json!({"region": "eu-west-1", "token": "[redacted: secret/api-token]"}));
/// # Ok::<(), registry_core::RegistryError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct RedactSecrets;

impl RedactSecrets {
    /// The check.
    pub fn new() -> Self {
        RedactSecrets
    }
}

impl ResultCheck for RedactSecrets {
    fn check(&self, result: &mut ToolResult<'_>) -> ResultDecision {
        result.redact_strings(redact_secrets);
        ResultDecision::Pass
    }
}

/// `text` with every secret replaced by `[redacted: <rule id>]`; `None` when it has none.
pub(crate) fn redact_secrets(text: &str) -> Option<String> {
    let found = registry_lint::secrets(text);
    if found.is_empty() {
        return None;
    }
    let mut redacted = String::with_capacity(text.len());
    let mut at = 0;
    for finding in found {
        // Sorted by start, none inside another; overlapping ones are cut from where the one
        // before ended.
        if finding.range.end <= at {
            continue;
        }
        let start = finding.range.start.max(at);
        redacted.push_str(&text[at..start]);
        redacted.push_str("[redacted: ");
        redacted.push_str(finding.rule.id());
        redacted.push(']');
        at = finding.range.end;
    }
    redacted.push_str(&text[at..]);
    Some(redacted)
}

#[cfg(test)]
mod tests {
    use super::redact_secrets;

    #[test]
    fn every_secret_becomes_a_marker_naming_its_rule() {
        assert_eq!(redact_secrets("nothing secret here"), None);
        let text = "a sk-4fG7hJ2kL9mN3pQ8rS1tU6vW and postgres://app:hunter2hunter2@db/x, \
                    Authorization: Bearer 4fG7hJ2kL9mN3pQ8rS1tU6vWx9Yz0aB2 end";
        let redacted = redact_secrets(text).unwrap();
        assert!(
            redacted.starts_with("a [redacted: secret/api-token] and "),
            "{redacted}"
        );
        assert!(
            redacted.contains("[redacted: secret/url-password]"),
            "{redacted}"
        );
        assert!(
            redacted.contains("[redacted: secret/bearer-token]"),
            "{redacted}"
        );
        assert!(redacted.ends_with(" end"), "{redacted}");
        for secret in ["4fG7hJ2kL9mN3pQ8rS1tU6vW", "hunter2hunter2"] {
            assert!(!redacted.contains(secret), "{redacted}");
        }
    }
}
