//! Step 5.1 of a call (resolve), on every path: the allowed set, suspension, revocation and
//! readiness ([`Run::available`]), then the arguments, within their limits and valid against
//! the schema the model was shown.

use serde_json::Value;

use super::answer::{Decided, Resolved, Ticket, revoked_text, unavailable_text, unknown_tool_text};
use crate::audit::{self};
use crate::discover::run::Run;
use crate::execute::observation::ErrorKind;
use crate::host::context::CallOptions;
use crate::project::discovery::Entry;
use crate::resolve::call::{CallHeader, Given, ToolCall};
use crate::resolve::checked::CheckedArguments;
use crate::resolve::fast;
use crate::shared::audit_key::argument_fingerprint;
use crate::shared::tool_error::{ArgumentProblem, ToolError};

impl Run {
    /// Step 5.1: the allowed set, revocation and readiness, the arguments.
    pub(super) fn resolve(
        &self,
        call: ToolCall,
        options: &CallOptions,
    ) -> Result<Resolved, Box<Decided>> {
        let limits = self.registry.limits();
        let (header, given) = call.into_given();
        let CallHeader {
            id: call_id,
            name,
            generated_id,
            caller,
        } = header;
        // The arguments' shape is checked first (cheaply, without recursion) so that the
        // audit log can record their size and hash for every call, refused ones included.
        // Without an audit log, argument text waits for the tool: its schema may let the
        // typed fast path check it without making a value of it.
        let audit = audit::wanted(self.registry.audit_sink());
        let parse = |given: Given| {
            given.parse(limits).and_then(|arguments| {
                limits.check(&arguments)?;
                Ok(arguments)
            })
        };
        let pending = match given {
            Given::Text(text) if !audit => Pending::Text(text),
            given => Pending::Parsed(parse(given)),
        };
        let fingerprint = match &pending {
            Pending::Parsed(Ok(arguments)) if audit => {
                Some(argument_fingerprint(self.registry.audit_key(), arguments))
            }
            _ => None,
        };
        let refuse = |kind, text, detail, version| {
            let mut decided = Decided::refused(call_id.clone(), name.clone(), kind, text);
            decided.arguments = fingerprint.clone();
            decided.generated_id = generated_id;
            decided.detail = detail;
            decided.tool_version = version;
            Err(Box::new(decided))
        };
        let Some(entry) = self.allowed.find(&name) else {
            let kind = if self.registry.contains(&name) {
                ErrorKind::NotAllowed
            } else {
                ErrorKind::UnknownTool
            };
            return refuse(kind, unknown_tool_text(&name, &self.allowed), None, None);
        };
        let version = Some(entry.tool.version_fingerprint());
        if let Err((kind, text, detail)) = self.available(entry) {
            return refuse(kind, text, detail, version);
        }
        let parsed = match pending {
            Pending::Text(text) => match entry.tool.shape() {
                Some(shape) => {
                    fast::check(shape, text, limits).map_err(|text| parse(Given::Text(text)))
                }
                None => Err(parse(Given::Text(text))),
            },
            Pending::Parsed(parsed) => Err(parsed),
        };
        let arguments = match parsed {
            Ok(fast) => CheckedArguments::fast(fast),
            // The slow path: the text parsed (strictly, under the limits) into a value, then
            // validated by jsonschema, every problem listed.
            Err(parsed) => {
                let mut arguments = match parsed {
                    Ok(arguments) => arguments,
                    Err(problem) => {
                        let mut decided = Decided::invalid(call_id, name, vec![problem]);
                        decided.generated_id = generated_id;
                        decided.tool_version = version;
                        return Err(Box::new(decided));
                    }
                };
                if let Err(problems) = validate(&entry.tool, &mut arguments) {
                    let mut decided = Decided::invalid(call_id, name, problems);
                    decided.arguments = fingerprint;
                    decided.generated_id = generated_id;
                    decided.tool_version = version;
                    return Err(Box::new(decided));
                }
                CheckedArguments::Value(arguments)
            }
        };
        let context = self.context(&call_id, entry, options);
        Ok(Resolved {
            entry: entry.clone(),
            context,
            arguments,
            ticket: Ticket {
                call_id,
                name,
                arguments: fingerprint,
                generated_id,
                structured: entry.tool.output_schema().is_some(),
                approval: None,
                tool_version: version,
                caller,
                policies: Vec::new(),
                task: false,
            },
        })
    }

    /// Whether a call's tool may be called now, on every path: the registry is not suspended,
    /// the tool is not revoked, and it is ready (checked by [`resolve`](Self::resolve), and
    /// again for a call a person approved). A refusal is its kind, the text the model reads
    /// and what only the audit log gets.
    #[inline]
    pub(super) fn available(
        &self,
        entry: &Entry,
    ) -> Result<(), (ErrorKind, String, Option<String>)> {
        let name = entry.tool.name();
        if let Some(reason) = self.registry.suspension() {
            return Err((ErrorKind::Unavailable, unavailable_text(name), Some(reason)));
        }
        if self.registry.is_revoked(entry.slot, entry.version) {
            return Err((ErrorKind::Revoked, revoked_text(name), None));
        }
        if let Some(reason) = self.registry.not_ready(entry.slot) {
            return Err((ErrorKind::Unavailable, unavailable_text(name), Some(reason)));
        }
        Ok(())
    }
}

/// Validates `arguments` against `tool`'s schema, after dropping `null` optionals.
pub(crate) fn validate(
    tool: &crate::Tool,
    arguments: &mut Value,
) -> Result<(), Vec<ArgumentProblem>> {
    tool.normalize(arguments);
    // A schema the fast path reads exactly: a value that fits it is valid, without jsonschema.
    if tool
        .shape()
        .is_some_and(|shape| fast::fits(shape, arguments))
    {
        return Ok(());
    }
    tool.validate(arguments).map_err(|error| match error {
        ToolError::InvalidArguments(problems) => problems,
        other => vec![ArgumentProblem::new("", other.to_string())],
    })
}

/// A call's arguments before its tool is known: parsed already, or text for the fast path.
enum Pending {
    Parsed(Result<Value, ArgumentProblem>),
    Text(String),
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use crate::{ErrorKind, Registry, Subject, ToolCall, tool};

    /// Add two small numbers.
    #[tool(public, crate = crate)]
    fn add_small(a: u8, b: Option<u8>) -> u16 {
        u16::from(a) + u16::from(b.unwrap_or(0))
    }

    #[derive(Deserialize, JsonSchema)]
    struct Slug {
        #[schemars(regex(pattern = r"^[a-z]+$"))]
        slug: String,
    }

    /// Echo a slug.
    #[tool(public, crate = crate)]
    fn echo_slug(item: Slug) -> String {
        item.slug
    }

    fn registry() -> Registry {
        Registry::builder()
            .declared_in([module_path!()])
            .build()
            .expect("builds")
    }

    #[test]
    fn only_a_schema_of_exact_keywords_takes_the_fast_path() {
        let registry = registry();
        let shape = |name: &str| registry.get(name).expect("registered").shape().is_some();
        assert!(shape("add_small"));
        // `pattern` is not enforced by typed deserialization: jsonschema checks it.
        assert!(!shape("echo_slug"));
    }

    #[test]
    fn both_paths_give_the_same_answers() {
        let registry = registry();
        let run = registry.open_run("run", &Subject::new("acme"));
        let cases = [
            ("add_small", r#"{"a": 200, "b": 55}"#),
            ("add_small", r#"{"a": 200, "b": null}"#),
            ("add_small", r#"{"a": 256}"#),
            ("add_small", r#"{"a": 1.0}"#),
            ("add_small", r#"{"a": 1, "a": 2}"#),
            ("add_small", r#"{"a": 1, "c": 2}"#),
            ("add_small", r#"{"b": 1}"#),
            ("add_small", r#"{"a": 1} x"#),
            ("echo_slug", r#"{"item": {"slug": "abc"}}"#),
            ("echo_slug", r#"{"item": {"slug": "ABC"}}"#),
        ];
        for (name, text) in cases {
            let fast = run.call_blocking(ToolCall::from_json_text("c", name, text));
            // A `Value` always takes the slow path.
            let slow = match serde_json::from_str(text) {
                Ok(value) => run.call_blocking(ToolCall::new("c", name, value)),
                Err(_) => continue,
            };
            if text.contains(r#""a": 1, "a""#) {
                // serde_json's `Value` keeps the last of repeated keys; the text is refused.
                assert_eq!(fast.error_kind(), Some(ErrorKind::InvalidArguments));
                continue;
            }
            assert_eq!(fast, slow, "{name}({text})");
        }
        let answer = run.call_blocking(ToolCall::from_json_text(
            "c",
            "add_small",
            r#"{"a": 200, "b": 55}"#,
        ));
        assert_eq!(answer.json(), &json!(255));
        let answer = run.call_blocking(ToolCall::from_json_text("c", "add_small", r#"{"a": 256}"#));
        assert_eq!(
            answer.error_text(),
            Some(
                "invalid arguments for \"add_small\": /a: must be at most 255, got 256; call it again with arguments that match its schema"
            )
        );
    }
}
