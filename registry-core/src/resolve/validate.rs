//! Checks a call's arguments against the schema the model was shown, and words every
//! problem so that the model can fix it: a JSON pointer and what was expected there.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

use crate::shared::tool_error::ArgumentProblem;

/// A compiled arguments schema.
#[derive(Debug)]
pub(crate) struct ArgumentValidator(Validator);

impl ArgumentValidator {
    /// Compiles `schema` (JSON Schema 2020-12); the error says why it is not a valid schema.
    pub(crate) fn new(schema: &Value) -> Result<Self, String> {
        jsonschema::draft202012::new(schema)
            .map(ArgumentValidator)
            .map_err(|error| error.to_string())
    }

    /// Every problem with `arguments`; empty when they are valid.
    pub(crate) fn problems(&self, arguments: &Value) -> Vec<ArgumentProblem> {
        if let Some(problem) = not_an_object(arguments) {
            return vec![problem];
        }
        // Most calls are valid: answer them without collecting errors.
        if self.0.is_valid(arguments) {
            return Vec::new();
        }
        let mut problems = Vec::new();
        for error in self.0.iter_errors(arguments) {
            describe(&error, &mut problems);
        }
        // In document order, whatever the order of the schema's keywords.
        problems.sort_by(|a, b| (&a.pointer, &a.message).cmp(&(&b.pointer, &b.message)));
        problems.dedup();
        problems
    }
}

/// The top-level properties of `schema` that it does not require: `null` for one of them
/// means absent. OpenAI's strict mode makes models send every property, `null` for those they
/// leave out, and a parameter with a default (not only an `Option`) must then get its default.
pub(crate) fn optional_properties(schema: &Value) -> Box<[String]> {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return Box::default();
    };
    let required = schema.get("required").and_then(Value::as_array);
    let is_required = |name: &str| required.is_some_and(|list| list.iter().any(|r| r == name));
    properties
        .keys()
        .filter(|name| !is_required(name))
        .cloned()
        .collect()
}

/// The arguments of a call must be a JSON object.
pub(crate) fn not_an_object(arguments: &Value) -> Option<ArgumentProblem> {
    (!arguments.is_object()).then(|| {
        ArgumentProblem::new(
            "",
            format!(
                "the arguments must be a JSON object, got {}",
                describe_value(arguments)
            ),
        )
    })
}

fn describe(error: &ValidationError<'_>, out: &mut Vec<ArgumentProblem>) {
    let pointer = error.instance_path().as_str().to_owned();
    let instance = error.instance();
    let message = match error.kind() {
        ValidationErrorKind::Type { kind } => {
            format!(
                "expected {}, got {}",
                expected_types(kind),
                describe_value(instance)
            )
        }
        ValidationErrorKind::Required { property } => {
            format!("missing required property {property}")
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            for name in unexpected {
                out.push(ArgumentProblem::new(
                    pointer.clone(),
                    format!("unknown property {name:?}"),
                ));
            }
            return;
        }
        ValidationErrorKind::Enum { options } => {
            format!(
                "expected one of {options}, got {}",
                describe_value(instance)
            )
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!(
                "expected {expected_value}, got {}",
                describe_value(instance)
            )
        }
        ValidationErrorKind::Minimum { limit } => {
            format!("must be at least {limit}, got {instance}")
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("must be at most {limit}, got {instance}")
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("must be greater than {limit}, got {instance}")
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("must be less than {limit}, got {instance}")
        }
        ValidationErrorKind::MinLength { limit } => {
            format!("must be at least {limit} characters long")
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!("must be at most {limit} characters long")
        }
        ValidationErrorKind::MinItems { limit } => format!("must have at least {limit} items"),
        ValidationErrorKind::MaxItems { limit } => format!("must have at most {limit} items"),
        ValidationErrorKind::Pattern { pattern } => format!("must match the pattern {pattern:?}"),
        ValidationErrorKind::Format { format } => format!("must be a valid {format}"),
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            if let Some(branch) = closest_branch(&pointer, context) {
                branch.iter().for_each(|error| describe(error, out));
                return;
            }
            if let Some(choices) = choices(&pointer, context) {
                out.push(ArgumentProblem::new(
                    pointer,
                    format!("expected {choices}, got {}", describe_value(instance)),
                ));
                return;
            }
            format!(
                "{} does not match any of the accepted forms",
                describe_value(instance)
            )
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            "matches more than one of the accepted forms; make it match exactly one".to_owned()
        }
        ValidationErrorKind::FalseSchema => "no value is allowed here".to_owned(),
        _ => error.to_string(),
    };
    let message = match condition(error.schema_path().as_str()) {
        Some(condition) => format!("{message} ({condition})"),
        None => message,
    };
    out.push(ArgumentProblem::new(pointer, message));
}

/// Why a schema applied, when a conditional keyword applied it: the innermost `then`, `else`,
/// `dependentSchemas` or `dependentRequired` on the keyword location `path` of an error, as
/// words for the model ("required because `if` holds: ...").
fn condition(path: &str) -> Option<String> {
    let tokens: Vec<String> = path
        .split('/')
        .skip(1)
        .map(crate::pointer::unescape)
        .collect();
    let mut found = None;
    let mut index = 0;
    while index < tokens.len() {
        let token = tokens[index].as_str();
        let name = tokens.get(index + 1);
        match token {
            "then" => found = Some("the schema's `if` condition holds, so this applies".to_owned()),
            "else" => {
                found =
                    Some("the schema's `if` condition does not hold, so this applies".to_owned())
            }
            "dependentSchemas" | "dependentRequired" => {
                found = Some(match name {
                    Some(name) => format!("this applies when the property {name:?} is present"),
                    // jsonschema locates `dependentRequired` without the property's name.
                    None => {
                        "another property present requires it, by `dependentRequired`".to_owned()
                    }
                });
                index += 1;
            }
            // A name, not a keyword: `{"properties": {"then": ...}}`.
            "properties" | "patternProperties" | "$defs" | "definitions" => index += 1,
            _ => {}
        }
        index += 1;
    }
    found
}

/// Of the alternatives of an `anyOf`/`oneOf`, the one the value was evidently meant to be,
/// if there is one: alternatives whose type, constant or tag the value contradicts are ruled
/// out, and of those left, the one with the fewest problems, if only one has that few.
fn closest_branch<'a>(
    pointer: &str,
    branches: &'a [Vec<ValidationError<'static>>],
) -> Option<&'a [ValidationError<'static>]> {
    let plausible: Vec<&Vec<ValidationError<'static>>> = branches
        .iter()
        .filter(|errors| !errors.iter().any(|error| rules_out(pointer, error)))
        .collect();
    let fewest = plausible.iter().map(|errors| errors.len()).min()?;
    let mut best = plausible.iter().filter(|errors| errors.len() == fewest);
    let branch = best.next()?;
    best.next().is_none().then_some(branch.as_slice())
}

/// Whether `error` shows that the value is not of its alternative's shape at all: a wrong type
/// or constant for the value itself, or a wrong constant (a tag) for one of its properties.
fn rules_out(pointer: &str, error: &ValidationError<'_>) -> bool {
    let at = error.instance_path().as_str();
    let same = at == pointer;
    let child = at
        .strip_prefix(pointer)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|rest| !rest.contains('/'));
    match error.kind() {
        ValidationErrorKind::Type { .. } => same,
        ValidationErrorKind::Constant { .. } | ValidationErrorKind::Enum { .. } => same || child,
        _ => false,
    }
}

/// When every alternative is a single value or type (an enum of strings, maybe nullable),
/// what is accepted: `one of "queued", "running" or null`, or `object or null`.
fn choices(pointer: &str, branches: &[Vec<ValidationError<'static>>]) -> Option<String> {
    let mut accepted: Vec<String> = Vec::new();
    let mut values = false;
    for branch in branches {
        if branch.is_empty() || branch.iter().any(|e| e.instance_path().as_str() != pointer) {
            return None;
        }
        let constant = branch.iter().find_map(|error| match error.kind() {
            ValidationErrorKind::Constant { expected_value } => {
                Some(vec![expected_value.to_string()])
            }
            ValidationErrorKind::Enum { options } => options
                .as_array()
                .map(|options| options.iter().map(ToString::to_string).collect()),
            _ => None,
        });
        let listed = match constant {
            Some(listed) => {
                values = true;
                listed
            }
            None => match branch.as_slice() {
                [error] => match error.kind() {
                    ValidationErrorKind::Type { kind } => vec![expected_types(kind)],
                    _ => return None,
                },
                _ => return None,
            },
        };
        for item in listed {
            if !accepted.contains(&item) {
                accepted.push(item);
            }
        }
    }
    let last = accepted.pop()?;
    let list = if accepted.is_empty() {
        last
    } else {
        format!("{} or {last}", accepted.join(", "))
    };
    Some(if values {
        format!("one of {list}")
    } else {
        list
    })
}

fn expected_types(kind: &TypeKind) -> String {
    match kind {
        TypeKind::Single(json_type) => json_type.to_string(),
        TypeKind::Multiple(types) => {
            // "null" last: `boolean or null` reads as the optional boolean it is.
            let mut names: Vec<String> = types.iter().map(|t| t.to_string()).collect();
            names.sort_by_key(|name| name == "null");
            names.join(" or ")
        }
    }
}

/// `string "yes"`, `integer 5`, `array`, ...: a value as an error message shows it, short.
pub(crate) fn describe_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => format!("boolean {flag}"),
        Value::Number(number) if number.is_f64() => format!("number {number}"),
        Value::Number(number) => format!("integer {number}"),
        Value::String(text) => {
            const MAX: usize = 40;
            match text.char_indices().nth(MAX) {
                Some((end, _)) => format!("string {:?}...", &text[..end]),
                None => format!("string {text:?}"),
            }
        }
        Value::Array(_) => "array".to_owned(),
        Value::Object(_) => "object".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::ArgumentValidator;

    fn problems(schema: &serde_json::Value, arguments: serde_json::Value) -> Vec<String> {
        ArgumentValidator::new(schema)
            .expect("compiles")
            .problems(&arguments)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_conditional_says_why_it_applied() {
        let schema = json!({
            "type": "object",
            "properties": {"method": {"enum": ["phone", "email"]}, "phone": {"type": "string"},
                "email": {"type": "string"}, "then": {"type": "string"}},
            "if": {"properties": {"method": {"const": "phone"}}, "required": ["method"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "dependentRequired": {"phone": ["method"]},
            "dependentSchemas": {"email": {"properties": {"phone": {"minLength": 3}}}}
        });
        assert_eq!(
            problems(&schema, json!({"method": "phone"})),
            [
                "missing required property \"phone\" (the schema's `if` condition holds, so this applies)"
            ]
        );
        assert_eq!(
            problems(&schema, json!({"method": "email"})),
            [
                "missing required property \"email\" (the schema's `if` condition does not hold, so this applies)"
            ]
        );
        assert_eq!(
            problems(&schema, json!({"phone": "123", "email": "a@b"})),
            [
                "missing required property \"method\" (another property present requires it, by `dependentRequired`)"
            ]
        );
        assert_eq!(
            problems(
                &schema,
                json!({"method": "email", "email": "a@b", "phone": "1"})
            ),
            [
                "/phone: must be at least 3 characters long (this applies when the property \"email\" is present)"
            ]
        );
        // A property named `then` is a name, not the keyword.
        assert_eq!(
            problems(&schema, json!({"email": "a@b", "then": 1})),
            ["/then: expected string, got integer 1"]
        );
    }

    #[test]
    fn a_ref_to_an_anchor_is_validated() {
        let schema = json!({
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                "properties": {"city": {"type": "string"}}, "required": ["city"]}},
            "properties": {"home": {"$ref": "#addressDef"}}
        });
        assert_eq!(
            problems(&schema, json!({"home": {"city": "Oslo"}})),
            Vec::<String>::new()
        );
        assert_eq!(
            problems(&schema, json!({"home": {"city": 7}})),
            ["/home/city: expected string, got integer 7"]
        );
    }
}
