//! The tool object: the consumer's shape around the schema.

use super::*;

/// The tool object's shape, its name, and its schemas.
pub(super) fn check_object(report: &mut Report, tool: &Value) {
    let rules = report.rules;
    let who = rules.consumer;
    let Value::Object(object) = tool else {
        report.add(
            "",
            format!("{who}: a tool must be a JSON object"),
            "export with `Run::export`",
        );
        return;
    };
    if let Some(rule) = rules.tool.function_type
        && object.get("type") != Some(&Value::from("function"))
    {
        report.add("/type", rule, "set `type`");
    }
    let holder_pointer = rules.tool.holder.pointer();
    let holder = match rules.tool.holder {
        Holder::Tool => object,
        Holder::Member { key, rule } => match object.get(key).and_then(Value::as_object) {
            Some(holder) => holder,
            None => {
                report.add(&holder_pointer, rule, "export with `Run::export`");
                return;
            }
        },
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
    let flagged_strict = check_strict_flag(report, holder, &holder_pointer);
    let schema_key = rules.tool.schema_key;
    let schema_pointer = format!("{holder_pointer}/{schema_key}");
    match holder.get(schema_key) {
        Some(schema) => {
            let mut checker = Checker {
                report,
                root: schema,
                base: schema_pointer,
                rules,
                flagged_strict,
                recursive: BTreeSet::new(),
            };
            checker.check_root();
            checker.walk(schema, "");
            checker.check_references();
            if let Some(limits) = &rules.strict {
                checker.check_limits(limits);
            }
        }
        None if rules.tool.schema_required => report.add(
            &schema_pointer,
            format!("{who}: a tool has its arguments schema under `{schema_key}`"),
            "export with `Run::export`",
        ),
        None => {}
    }
    if rules.tool.output_schema
        && let Some(output) = holder.get("outputSchema")
        && output.get("type") != Some(&Value::from("object"))
    {
        report.add(
            &format!("{holder_pointer}/outputSchema"),
            format!("{who}: an `outputSchema` has `type: \"object\"` at its root"),
            "return a struct, or leave the output schema out",
        );
    }
}

/// The `strict` flag as the consumer wants it; whether it turns on an optional strict mode.
fn check_strict_flag(
    report: &mut Report,
    holder: &Map<String, Value>,
    holder_pointer: &str,
) -> bool {
    let flagged = holder.get("strict") == Some(&Value::Bool(true));
    match report.rules.strict_flag {
        StrictFlag::Ignored => false,
        StrictFlag::Says { value, rule } => {
            if flagged != value {
                report.add(
                    &format!("{holder_pointer}/strict"),
                    rule,
                    "export with the matching profile",
                );
            }
            false
        }
        StrictFlag::Optional => flagged,
    }
}
