//! The tool object: the consumer's shape around the schema.

use super::*;

/// The tool object's shape, its name, and its schemas.
pub(super) fn check_object(report: &mut Report, tool: &Value) {
    let profile = report.profile;
    let who = profile.consumer();
    let Value::Object(object) = tool else {
        report.add(
            "",
            format!("{who}: a tool must be a JSON object"),
            "export with `Run::export`",
        );
        return;
    };
    let (holder, holder_pointer): (Option<&Map<String, Value>>, &str) = match profile {
        Profile::OpenAiChat { .. } => {
            if object.get("type") != Some(&Value::from("function")) {
                report.add(
                    "/type",
                    "OpenAI: a function tool has `type: \"function\"`",
                    "set `type`",
                );
            }
            (
                object.get("function").and_then(Value::as_object),
                "/function",
            )
        }
        Profile::OpenAiResponses { .. } => {
            if object.get("type") != Some(&Value::from("function")) {
                report.add(
                    "/type",
                    "OpenAI: a function tool has `type: \"function\"`",
                    "set `type`",
                );
            }
            (Some(object), "")
        }
        Profile::Mcp | Profile::Anthropic | Profile::Gemini => (Some(object), ""),
    };
    let Some(holder) = holder else {
        report.add(
            "/function",
            "OpenAI Chat Completions: a tool holds its definition under `function`",
            "export with `Run::export`",
        );
        return;
    };
    check_name(
        report,
        holder.get("name"),
        &format!("{holder_pointer}/name"),
    );
    if let Some(description) = holder.get("description")
        && !description.is_string()
    {
        report.add(
            &format!("{holder_pointer}/description"),
            format!("{who}: a tool's description is a string"),
            "give the tool a text description",
        );
    }
    let strict_flag = holder.get("strict");
    let (schema_key, required_schema) = match profile {
        Profile::Mcp => ("inputSchema", true),
        Profile::OpenAiChat { .. } | Profile::OpenAiResponses { .. } => ("parameters", true),
        Profile::Anthropic => ("input_schema", true),
        Profile::Gemini => ("parameters", false),
    };
    let mut anthropic_strict = false;
    match profile {
        Profile::OpenAiChat { strict } | Profile::OpenAiResponses { strict } => {
            let flagged = strict_flag == Some(&Value::Bool(true));
            if flagged != strict {
                report.add(
                    &format!("{holder_pointer}/strict"),
                    if strict {
                        "OpenAI strict mode: the tool must say `strict: true`"
                    } else {
                        "OpenAI (non-strict): the tool must not say `strict: true`, or its schema \
                         must follow strict mode's rules"
                    },
                    "export with the matching profile",
                );
            }
        }
        Profile::Anthropic => anthropic_strict = strict_flag == Some(&Value::Bool(true)),
        Profile::Mcp | Profile::Gemini => {}
    }
    let schema_pointer = format!("{holder_pointer}/{schema_key}");
    match holder.get(schema_key) {
        Some(schema) => {
            let mut checker = Checker {
                report,
                root: schema,
                base: schema_pointer,
                strict: profile.is_strict(),
                anthropic_strict,
                recursive: BTreeSet::new(),
            };
            checker.check_root();
            checker.walk(schema, "");
            checker.check_references();
            if profile.is_strict() {
                checker.check_limits();
            }
        }
        None if required_schema => report.add(
            &schema_pointer,
            format!("{who}: a tool has its arguments schema under `{schema_key}`"),
            "export with `Run::export`",
        ),
        None => {}
    }
    if profile == Profile::Mcp
        && let Some(output) = holder.get("outputSchema")
        && output.get("type") != Some(&Value::from("object"))
    {
        report.add(
            "/outputSchema",
            "MCP: an `outputSchema` has `type: \"object\"` at its root",
            "return a struct, or leave the output schema out",
        );
    }
}
