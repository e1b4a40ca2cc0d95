//! The MCP form of a Rust type, for asking the user: a flat object of primitive fields.
//!
//! MCP's `elicitation/create` takes a `requestedSchema` restricted to a top-level object whose
//! properties are strings (with `format` email, uri, date or date-time, `minLength`,
//! `maxLength`), numbers and integers (`minimum`, `maximum`), booleans, and enums of strings:
//! one value (`enum`, or `oneOf` of `const`/`title`), or several (an array of such, SEP-1330);
//! each may have a `title`, a `description` and a `default` (SEP-1034). The type's JSON Schema
//! (from `schemars`) is turned into that, or refused with every field that does not fit.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::host::call_host::FormError;
use crate::resolve::validate::ArgumentValidator;

/// The MCP form (`requestedSchema`) that asks for a `T`, or why `T` cannot be one.
///
/// [`ToolContext::elicit`](crate::ToolContext::elicit) calls it for each question; call it
/// in a test or at startup to learn at once that a type cannot be asked for.
///
/// ```
/// use registry_core::host::form_schema;
/// use schemars::JsonSchema;
/// use serde_json::json;
///
/// /// Where to deploy.
/// #[derive(JsonSchema)]
/// #[serde(rename_all = "lowercase")]
/// enum Target { Staging, Production }
///
/// #[derive(JsonSchema)]
/// struct Deploy {
///     /// The environment.
///     target: Target,
///     /// Who to tell.
///     #[schemars(email)]
///     notify: Option<String>,
///     /// Skip the smoke tests.
///     #[serde(default)]
///     fast: bool,
/// }
///
/// assert_eq!(
///     form_schema::<Deploy>().unwrap(),
///     json!({
///         "type": "object",
///         "properties": {
///             "fast": {"type": "boolean", "description": "Skip the smoke tests.", "default": false},
///             "notify": {"type": "string", "format": "email", "description": "Who to tell."},
///             "target": {"type": "string", "enum": ["staging", "production"], "description": "The environment."},
///         },
///         "required": ["target"],
///     })
/// );
/// ```
pub fn form_schema<T: JsonSchema + ?Sized>() -> Result<Value, FormError> {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let schema = generator.into_root_schema_for::<T>().to_value();
    let type_name = T::schema_name();
    form_of(&schema).map_err(|problems| FormError::new(&type_name, problems))
}

/// Checks a user's answer against the form it answers; every problem, worded.
pub(crate) fn check_answer(form: &Value, answer: &Value) -> Result<(), String> {
    let validator = ArgumentValidator::new(form)?;
    let problems = validator.problems(answer);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "))
    }
}

/// The form of a root schema with its `$defs`.
fn form_of(root: &Value) -> Result<Value, Vec<String>> {
    let definitions = root
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let schema = resolve(root, &definitions);
    let Some(object) = schema.as_object() else {
        return Err(vec![
            "any JSON value: the answer must be a struct".to_owned(),
        ]);
    };
    if object.get("type") != Some(&Value::from("object")) {
        return Err(vec![
            "not a struct with named fields: a form is an object".to_owned(),
        ]);
    }
    let mut problems = Vec::new();
    for keyword in object.keys() {
        match keyword.as_str() {
            "type" | "properties" | "required" | "title" | "description" | "$schema" | "$defs"
            | "additionalProperties" | "unevaluatedProperties" => {}
            other => problems.push(format!(
                "the type's schema uses `{other}`, which a form cannot express (a flattened or tagged type?)"
            )),
        }
    }
    let mut properties = Map::new();
    let empty = Map::new();
    let declared = object
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (name, property) in declared {
        match field(property, &definitions) {
            Ok(field) => {
                properties.insert(name.clone(), field);
            }
            Err(problem) => problems.push(format!("{name:?}: {problem}")),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let required: Vec<Value> = object
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|name| {
            name.as_str()
                .is_some_and(|name| properties.contains_key(name))
        })
        .cloned()
        .collect();
    let mut form = Map::new();
    form.insert("type".into(), "object".into());
    form.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        form.insert("required".into(), Value::Array(required));
    }
    if let Some(description) = object.get("description").filter(|d| d.is_string()) {
        form.insert("description".into(), description.clone());
    }
    Ok(Value::Object(form))
}

/// Follows `$ref`s into `definitions` (a few levels at most: a recursive type is no form).
fn resolve<'a>(schema: &'a Value, definitions: &'a Map<String, Value>) -> &'a Value {
    let mut schema = schema;
    for _ in 0..8 {
        let target = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix("#/$defs/"))
            .and_then(|name| definitions.get(name));
        match target {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// The words about a field that a form keeps, from the field's own schema first, then from
/// what it refers to.
const WORDS: [&str; 3] = ["title", "description", "default"];

/// Keywords that only annotate, dropped from a form.
const ANNOTATIONS: [&str; 6] = [
    "$comment",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$schema",
];

/// One field of a form, or why it cannot be one.
fn field(property: &Value, definitions: &Map<String, Value>) -> Result<Value, String> {
    let own = property.as_object().cloned().unwrap_or_default();
    let target = not_null(resolve(property, definitions), definitions)?;
    let Some(target) = target.as_object() else {
        return Err("any JSON value (a form field has a type)".to_owned());
    };
    // The field's own words win over those of the type it refers to.
    let mut schema = target.clone();
    for word in WORDS {
        if let Some(value) = own.get(word) {
            schema.insert(word.to_owned(), value.clone());
        }
    }
    for annotation in ANNOTATIONS {
        schema.remove(annotation);
    }
    if schema.contains_key("oneOf") || schema.contains_key("anyOf") {
        return titled_choice(&schema, definitions);
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        Some(other) => return Err(format!("one of several types ({other})")),
        None if schema.contains_key("const") => return Err("a constant".to_owned()),
        None => return Err("any JSON value (a form field has a type)".to_owned()),
    };
    match kind.as_str() {
        "string" => string_field(&schema),
        "number" | "integer" => number_field(&schema, &kind),
        "boolean" => simple_field(&schema, &["type"], |default| default.is_boolean()),
        "array" => multi_select(&schema, definitions),
        "object" => Err("a nested object".to_owned()),
        "null" => Err("always null".to_owned()),
        other => Err(format!("of type {other:?}")),
    }
}

/// The schema without its `null`: `Option<T>` is a field that may be left empty.
fn not_null<'a>(
    schema: &'a Value,
    definitions: &'a Map<String, Value>,
) -> Result<std::borrow::Cow<'a, Value>, String> {
    use std::borrow::Cow;
    if let Some(Value::Array(types)) = schema.get("type") {
        let rest: Vec<&Value> = types.iter().filter(|kind| *kind != "null").collect();
        let [only] = rest.as_slice() else {
            return Err(format!(
                "one of several types ({})",
                Value::from(types.clone())
            ));
        };
        let mut schema = schema.clone();
        schema["type"] = (*only).clone();
        if let Some(Value::Array(values)) = schema.get_mut("enum") {
            values.retain(|value| !value.is_null());
        }
        return Ok(Cow::Owned(schema));
    }
    for keyword in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = schema.get(keyword) else {
            continue;
        };
        let rest: Vec<&Value> = branches
            .iter()
            .filter(|branch| branch.get("type") != Some(&Value::from("null")))
            .collect();
        if rest.len() + 1 == branches.len()
            && let [only] = rest.as_slice()
        {
            let mut merged = resolve(only, definitions).clone();
            if let (Value::Object(merged), Value::Object(outer)) = (&mut merged, schema) {
                for word in WORDS {
                    if let Some(value) = outer.get(word) {
                        merged.insert(word.to_owned(), value.clone());
                    }
                }
            }
            return Ok(Cow::Owned(merged));
        }
    }
    Ok(Cow::Borrowed(schema))
}

fn string_field(schema: &Map<String, Value>) -> Result<Value, String> {
    if let Some(format) = schema.get("format") {
        let known = ["email", "uri", "date", "date-time"];
        if !format
            .as_str()
            .is_some_and(|format| known.contains(&format))
        {
            return Err(format!(
                "a string of format {format}, which a form cannot ask for (email, uri, date, date-time)"
            ));
        }
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        if !values.iter().all(Value::is_string) {
            return Err("an enum of values other than strings".to_owned());
        }
        // The titles of the values the way before SEP-1330 (`enumNames`, still accepted):
        // one string per value.
        if let Some(names) = schema.get("enumNames") {
            let fits = names.as_array().is_some_and(|names| {
                names.len() == values.len() && names.iter().all(Value::is_string)
            });
            if !fits {
                return Err(format!(
                    "`enumNames` ({names}) that is not one title (a string) per value of its enum"
                ));
            }
        }
        return simple_field(schema, &["type", "enum", "enumNames"], |default| {
            values.contains(default)
        });
    }
    for bound in ["minLength", "maxLength"] {
        if let Some(value) = schema.get(bound)
            && value.as_u64().is_none_or(|n| u32::try_from(n).is_err())
        {
            return Err(format!("a {bound} of {value}"));
        }
    }
    simple_field(
        schema,
        &["type", "format", "minLength", "maxLength"],
        Value::is_string,
    )
}

fn number_field(schema: &Map<String, Value>, kind: &str) -> Result<Value, String> {
    let mut schema = schema.clone();
    // schemars writes the Rust width (`int32`, `uint64`, `double`): not a form's business.
    schema.remove("format");
    for bound in ["minimum", "maximum"] {
        if schema.get(bound).is_some_and(|value| !value.is_number()) {
            return Err(format!("a {bound} that is not a number"));
        }
    }
    let integer = kind == "integer";
    simple_field(&schema, &["type", "minimum", "maximum"], |default| {
        if integer {
            default.is_i64() || default.is_u64()
        } else {
            default.is_number()
        }
    })
}

/// `schema` with only `keep` and the words, every other keyword a problem; the default kept
/// only if `fits`.
fn simple_field(
    schema: &Map<String, Value>,
    keep: &[&str],
    fits: impl Fn(&Value) -> bool,
) -> Result<Value, String> {
    let mut field = Map::new();
    let mut refused = Vec::new();
    for (keyword, value) in schema {
        if keep.contains(&keyword.as_str()) || WORDS[..2].contains(&keyword.as_str()) {
            field.insert(keyword.clone(), value.clone());
        } else if keyword == "default" {
            if !fits(value) {
                return Err(format!("a default ({value}) that does not fit its type"));
            }
            field.insert(keyword.clone(), value.clone());
        } else {
            refused.push(format!("`{keyword}`"));
        }
    }
    if refused.is_empty() {
        Ok(Value::Object(field))
    } else {
        Err(format!(
            "uses {}, which a form cannot express",
            refused.join(", ")
        ))
    }
}

/// The options of a choice: each a string, with a title. From `oneOf`/`anyOf` branches that
/// are `const` strings (serde's unit variants with doc comments) or `enum`s of strings.
fn options(schema: &Map<String, Value>, definitions: &Map<String, Value>) -> Option<Vec<Value>> {
    if let Some(Value::Array(values)) = schema.get("enum") {
        return values
            .iter()
            .map(|value| {
                value
                    .as_str()
                    .map(|text| json!({"const": text, "title": text}))
            })
            .collect();
    }
    let branches = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))?
        .as_array()?;
    let mut options = Vec::new();
    for branch in branches {
        let branch = resolve(branch, definitions);
        if let Some(Value::Array(values)) = branch.get("enum") {
            for value in values {
                let text = value.as_str()?;
                options.push(json!({"const": text, "title": text}));
            }
            continue;
        }
        let value = branch.get("const")?.as_str()?;
        let title = branch
            .get("title")
            .or_else(|| branch.get("description"))
            .and_then(Value::as_str)
            .unwrap_or(value);
        options.push(json!({"const": value, "title": title}));
    }
    Some(options)
}

/// One value of several, each with a title (`oneOf` of `const`/`title`).
fn titled_choice(
    schema: &Map<String, Value>,
    definitions: &Map<String, Value>,
) -> Result<Value, String> {
    let options = options(schema, definitions).ok_or_else(|| {
        "one of several shapes (an enum with data, or an untagged union)".to_owned()
    })?;
    let values: Vec<&Value> = options.iter().map(|option| &option["const"]).collect();
    let mut field = Map::new();
    field.insert("type".into(), "string".into());
    words(schema, &mut field);
    field.insert("oneOf".into(), Value::Array(options.clone()));
    if let Some(default) = schema.get("default") {
        if !values.contains(&default) {
            return Err(format!(
                "a default ({default}) that is not one of its values"
            ));
        }
        field.insert("default".into(), default.clone());
    }
    Ok(Value::Object(field))
}

/// Several values of an enum of strings (SEP-1330): an array whose items are the enum.
fn multi_select(
    schema: &Map<String, Value>,
    definitions: &Map<String, Value>,
) -> Result<Value, String> {
    let items = schema
        .get("items")
        .map(|items| resolve(items, definitions))
        .and_then(Value::as_object)
        .ok_or("a list of anything")?;
    let not_enum = || "a list of something other than an enum of strings".to_owned();
    let mut field = Map::new();
    field.insert("type".into(), "array".into());
    words(schema, &mut field);
    let values: Vec<Value> = match items.get("enum") {
        Some(Value::Array(values)) if values.iter().all(Value::is_string) => {
            field.insert(
                "items".into(),
                json!({"type": "string", "enum": values.clone()}),
            );
            values.clone()
        }
        Some(_) => return Err(not_enum()),
        None => {
            let options = options(items, definitions).ok_or_else(not_enum)?;
            let values = options
                .iter()
                .map(|option| option["const"].clone())
                .collect();
            field.insert("items".into(), json!({"anyOf": options}));
            values
        }
    };
    for (keyword, value) in schema {
        match keyword.as_str() {
            "type" | "items" | "title" | "description" | "uniqueItems" => {}
            "minItems" | "maxItems" => {
                if !value.is_u64() {
                    return Err(format!("a {keyword} of {value}"));
                }
                field.insert(keyword.clone(), value.clone());
            }
            "default" => {
                let fits = value
                    .as_array()
                    .is_some_and(|chosen| chosen.iter().all(|value| values.contains(value)));
                if !fits {
                    return Err(format!(
                        "a default ({value}) that is not a list of its values"
                    ));
                }
                field.insert(keyword.clone(), value.clone());
            }
            other => {
                return Err(format!(
                    "a list that uses `{other}`, which a form cannot express"
                ));
            }
        }
    }
    Ok(Value::Object(field))
}

/// Copies the title and description.
fn words(schema: &Map<String, Value>, field: &mut Map<String, Value>) {
    for word in &WORDS[..2] {
        if let Some(value) = schema.get(*word) {
            field.insert((*word).to_owned(), value.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, HashMap};

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Plain {
        Red,
        Green,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    enum Documented {
        /// The small one.
        Small,
        /// The big one.
        #[schemars(title = "Big!")]
        Big,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    /// Everything a form can hold.
    struct Everything {
        /// A name.
        #[schemars(length(min = 1, max = 20))]
        name: String,
        #[schemars(url)]
        site: Option<String>,
        #[schemars(range(min = 1, max = 10))]
        count: u8,
        ratio: f64,
        #[serde(default = "yes")]
        agree: bool,
        color: Plain,
        maybe_color: Option<Plain>,
        size: Documented,
        colors: Vec<Plain>,
        sizes: BTreeSet<Documented>,
    }

    fn yes() -> bool {
        true
    }

    #[test]
    fn every_kind_of_field_becomes_a_form_field() {
        let form = form_schema::<Everything>().unwrap();
        let properties = &form["properties"];
        assert_eq!(form["description"], "Everything a form can hold.");
        assert_eq!(
            properties["name"],
            json!({"type": "string", "description": "A name.", "minLength": 1, "maxLength": 20})
        );
        assert_eq!(
            properties["site"],
            json!({"type": "string", "format": "uri"})
        );
        assert_eq!(
            properties["count"],
            json!({"type": "integer", "minimum": 1, "maximum": 10})
        );
        assert_eq!(properties["ratio"], json!({"type": "number"}));
        assert_eq!(
            properties["agree"],
            json!({"type": "boolean", "default": true})
        );
        assert_eq!(
            properties["color"],
            json!({"type": "string", "enum": ["red", "green"]})
        );
        assert_eq!(properties["maybe_color"], properties["color"]);
        assert_eq!(
            properties["size"],
            json!({"type": "string", "oneOf": [
                {"const": "Small", "title": "The small one."},
                {"const": "Big", "title": "Big!"},
            ]})
        );
        assert_eq!(
            properties["colors"],
            json!({"type": "array", "items": {"type": "string", "enum": ["red", "green"]}})
        );
        assert_eq!(
            properties["sizes"],
            json!({"type": "array", "items": {"anyOf": [
                {"const": "Small", "title": "The small one."},
                {"const": "Big", "title": "Big!"},
            ]}})
        );
        let required: BTreeSet<&str> = form["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|name| name.as_str().unwrap())
            .collect();
        assert_eq!(
            required,
            BTreeSet::from(["name", "count", "ratio", "color", "size", "colors", "sizes"])
        );
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Inner {
        a: u32,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    enum WithData {
        A(u32),
        B { b: String },
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Nope {
        inner: Inner,
        numbers: Vec<u32>,
        map: HashMap<String, String>,
        any: serde_json::Value,
        data: WithData,
        #[schemars(regex(pattern = "^a+$"))]
        pattern: String,
        id: Uuid,
    }

    /// A string of format uuid.
    struct Uuid;

    impl JsonSchema for Uuid {
        fn schema_name() -> std::borrow::Cow<'static, str> {
            "Uuid".into()
        }
        fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
            schemars::json_schema!({"type": "string", "format": "uuid"})
        }
    }

    #[test]
    fn fields_a_form_cannot_hold_are_each_named() {
        let error = form_schema::<Nope>().unwrap_err();
        assert_eq!(error.type_name, "Nope");
        let problems = error.problems.join("\n");
        for expected in [
            "\"inner\": a nested object",
            "\"numbers\": a list of something other than an enum of strings",
            "\"map\": a nested object",
            "\"any\": any JSON value",
            "\"data\": one of several shapes",
            "\"pattern\": uses `pattern`, which a form cannot express",
            "\"id\": a string of format \"uuid\"",
        ] {
            assert!(problems.contains(expected), "{expected} in:\n{problems}");
        }
        assert_eq!(error.problems.len(), 7, "{problems}");
        assert!(
            error
                .to_string()
                .starts_with("Nope cannot be asked for as a form (")
        );
    }

    #[test]
    fn types_that_are_not_structs_are_refused() {
        assert!(form_schema::<String>().is_err());
        assert!(form_schema::<Vec<Plain>>().is_err());
        assert!(form_schema::<Plain>().is_err());
        assert!(form_schema::<serde_json::Value>().is_err());
        assert!(form_schema::<WithData>().is_err());
    }

    #[test]
    fn answers_are_checked_against_the_form() {
        let form = form_schema::<Everything>().unwrap();
        let error = check_answer(&form, &json!({"name": "", "count": 11})).unwrap_err();
        assert!(error.contains("/count"), "{error}");
        assert!(error.contains("/name"), "{error}");
        assert!(
            error.contains("missing required property \"ratio\""),
            "{error}"
        );
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    #[schemars(extend("enumNames" = ["Option One", "Option Two"]))]
    enum Legacy {
        One,
        Two,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    #[schemars(extend("enumNames" = ["Only one title"]))]
    enum TooFewNames {
        One,
        Two,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct LegacyForm {
        pick: Legacy,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct BadLegacyForm {
        pick: TooFewNames,
    }

    #[test]
    fn enum_names_title_the_values_the_old_way() {
        let form = form_schema::<LegacyForm>().unwrap();
        assert_eq!(
            form["properties"]["pick"],
            json!({"type": "string", "enum": ["One", "Two"], "enumNames": ["Option One", "Option Two"]})
        );
        let error = form_schema::<BadLegacyForm>().unwrap_err().to_string();
        assert!(
            error.contains("`enumNames`") && error.contains("one title (a string) per value"),
            "{error}"
        );
    }
}
