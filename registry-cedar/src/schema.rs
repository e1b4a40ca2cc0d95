//! The Cedar schema of a registry: the fixed vocabulary (`Principal`, `Tool`, the actions
//! `list` and `call`, the `call` context) with every attribute key and argument the registry's
//! tools declare.
//!
//! This file needs nothing but registry-core and serde_json: the `catalog` example compiles it
//! too, by its path, to print the schema with `--cedar-schema` (the examples cannot depend on
//! registry-cedar, whose cedar-policy turns on serde_json's `preserve_order`). What Cedar's
//! values are made of is in `context.rs`.

use std::collections::BTreeMap;
use std::fmt::Write;

use registry_core::Registry;
use serde_json::Value;

/// A Cedar type the vocabulary uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ty {
    Long,
    String,
    Bool,
    Strings,
    Record(BTreeMap<String, (Ty, bool)>),
}

impl Ty {
    fn write(&self, out: &mut String, indent: usize) {
        match self {
            Ty::Long => out.push_str("Long"),
            Ty::String => out.push_str("String"),
            Ty::Bool => out.push_str("Bool"),
            Ty::Strings => out.push_str("Set<String>"),
            Ty::Record(fields) => write_record(out, fields, indent),
        }
    }
}

/// How deep a call's arguments may nest for Cedar to see them; deeper, the call is denied.
pub(crate) const MAX_DEPTH: usize = 16;

fn write_record(out: &mut String, fields: &BTreeMap<String, (Ty, bool)>, indent: usize) {
    if fields.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push_str("{\n");
    for (name, (ty, required)) in fields {
        let _ = write!(
            out,
            "{:indent$}\"{name}\"{}: ",
            "",
            if *required { "" } else { "?" },
            indent = indent + 2
        );
        ty.write(out, indent + 2);
        out.push_str(",\n");
    }
    let _ = write!(out, "{:indent$}}}", "", indent = indent);
}

/// A name Cedar's schema text can hold as it is: letters, digits and `_`.
fn plain(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The type of one JSON Schema, if Cedar can express it.
fn of_schema(schema: &Value, depth: usize) -> Result<Ty, String> {
    if depth > MAX_DEPTH {
        return Err("nested too deep".into());
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => Ok(Ty::Long),
        Some("string") => Ok(Ty::String),
        Some("boolean") => Ok(Ty::Bool),
        Some("array")
            if schema
                .get("items")
                .and_then(|items| items.get("type"))
                .and_then(Value::as_str)
                == Some("string") =>
        {
            Ok(Ty::Strings)
        }
        Some("object") => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut fields = BTreeMap::new();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    if !plain(name) {
                        return Err(format!("the property {name:?} is not a plain name"));
                    }
                    let ty = of_schema(property, depth + 1)?;
                    fields.insert(name.clone(), (ty, required.contains(&name.as_str())));
                }
            }
            Ok(Ty::Record(fields))
        }
        Some(other) => Err(format!("Cedar has no type for JSON Schema's {other:?}")),
        None => Err("no single `type`".into()),
    }
}

/// What the schema of a registry holds, beside its text.
#[derive(Debug, Clone)]
pub(crate) struct Vocabulary {
    /// The principal's attribute keys beyond the fixed ones, with their types.
    pub(crate) subject: BTreeMap<String, Ty>,
    /// The tools' attribute keys (each an optional `Set<String>`).
    pub(crate) tool_keys: Vec<String>,
    /// `context.arguments`: every tool property that every tool declaring it types alike,
    /// each optional.
    pub(crate) arguments: BTreeMap<String, Ty>,
    /// The properties left out of `context.arguments`, each with why (escaped, naming the
    /// tools): a policy that reads one is refused.
    pub(crate) dropped: BTreeMap<String, String>,
    /// Every tool name.
    pub(crate) tools: Vec<String>,
}

/// What one tool makes of a property: the tool's name, and the property's type or why Cedar
/// has none for it.
type Declared = (String, Result<Ty, String>);

/// The Cedar type of `ty`, as the schema text writes it (a record as `Record`).
fn type_name(ty: &Ty) -> &'static str {
    match ty {
        Ty::Long => "Long",
        Ty::String => "String",
        Ty::Bool => "Bool",
        Ty::Strings => "Set<String>",
        Ty::Record(_) => "Record",
    }
}

impl Vocabulary {
    /// The vocabulary of `registry`, with the application's own subject keys.
    pub(crate) fn of(registry: &Registry, declared: &BTreeMap<String, Ty>) -> Vocabulary {
        let mut subject: BTreeMap<String, Ty> = BTreeMap::new();
        let mut tool_keys: Vec<String> = Vec::new();
        // Every property name, with what each tool declaring it makes of it.
        let mut typed: BTreeMap<String, Vec<Declared>> = BTreeMap::new();
        let mut tools = Vec::new();
        for tool in registry.iter() {
            tools.push(tool.name().to_owned());
            for key in tool.settings().attributes.keys() {
                subject.entry(key.clone()).or_insert(Ty::String);
                if !tool_keys.contains(key) {
                    tool_keys.push(key.clone());
                }
            }
            let parameters = &tool.definition().parameters;
            let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
                continue;
            };
            for (name, property) in properties {
                let ty = if plain(name) {
                    of_schema(property, 1)
                } else {
                    Err("not a plain name (letters, digits and `_`)".to_owned())
                };
                typed
                    .entry(name.clone())
                    .or_default()
                    .push((tool.name().to_owned(), ty));
            }
        }
        let mut arguments = BTreeMap::new();
        let mut dropped = BTreeMap::new();
        for (name, declarations) in typed {
            let first = declarations.first().and_then(|(_, ty)| ty.as_ref().ok());
            let agreed = declarations
                .iter()
                .all(|(_, ty)| ty.as_ref().ok() == first && first.is_some());
            match first {
                Some(ty) if agreed => {
                    arguments.insert(name, ty.clone());
                }
                _ => {
                    let why: Vec<String> = declarations
                        .iter()
                        .map(|(tool, ty)| match ty {
                            Ok(ty) => format!("{tool}: {}", type_name(ty)),
                            Err(reason) => format!("{tool}: Cedar cannot type it ({reason})"),
                        })
                        .collect();
                    let why = if declarations.iter().all(|(_, ty)| ty.is_err()) {
                        why.join(", ")
                    } else {
                        format!("the tools disagree: {}", why.join(", "))
                    };
                    dropped.insert(name, why);
                }
            }
        }
        for (key, ty) in declared {
            subject.insert(key.clone(), ty.clone());
        }
        tool_keys.sort();
        Vocabulary {
            subject,
            tool_keys,
            arguments,
            dropped,
            tools,
        }
    }

    /// The schema in Cedar's schema syntax.
    pub(crate) fn text(&self) -> String {
        let mut out = String::from(
            "// The Cedar schema of a tool registry (registry-cedar). Generated; do not edit.\n",
        );
        // Escaped (`Debug`): a name with a line break must not end the comment (T5-6).
        for (name, why) in &self.dropped {
            let _ = writeln!(out, "// left out of context.arguments: {name:?}: {why:?}");
        }
        let mut principal: BTreeMap<String, (Ty, bool)> = BTreeMap::from([
            ("tenant".to_owned(), (Ty::String, true)),
            ("scopes".to_owned(), (Ty::Strings, true)),
            ("access".to_owned(), (Ty::String, true)),
            ("agent".to_owned(), (Ty::String, false)),
        ]);
        for (key, ty) in &self.subject {
            principal.insert(key.clone(), (ty.clone(), false));
        }
        out.push_str("entity Principal = ");
        write_record(&mut out, &principal, 0);
        out.push_str(";\n");
        let mut tool: BTreeMap<String, (Ty, bool)> = BTreeMap::from([
            ("scopes".to_owned(), (Ty::Strings, true)),
            ("read_only".to_owned(), (Ty::Bool, true)),
            ("destructive".to_owned(), (Ty::Bool, true)),
            ("idempotent".to_owned(), (Ty::Bool, true)),
            ("open_world".to_owned(), (Ty::Bool, true)),
            ("needs_approval".to_owned(), (Ty::Bool, true)),
        ]);
        for key in &self.tool_keys {
            tool.insert(key.clone(), (Ty::Strings, false));
        }
        out.push_str("entity Tool = ");
        write_record(&mut out, &tool, 0);
        out.push_str(";\n");
        out.push_str(
            "action \"list\" appliesTo {\n  principal: Principal,\n  resource: Tool,\n  context: {}\n};\n",
        );
        let arguments: BTreeMap<String, (Ty, bool)> = self
            .arguments
            .iter()
            .map(|(name, ty)| (name.clone(), (ty.clone(), false)))
            .collect();
        out.push_str("action \"call\" appliesTo {\n  principal: Principal,\n  resource: Tool,\n  context: {\n    \"arguments\": ");
        write_record(&mut out, &arguments, 4);
        out.push_str(",\n    \"caller\": String,\n    \"run\": String,\n  }\n};\n");
        out
    }
}

/// The Cedar schema of `registry`, in Cedar's schema syntax: the entity types `Principal` (the
/// subject) and `Tool`, the actions `list` and `call`, and the `call` context
/// (`arguments`, `caller`, `run`). Deterministic: the same registry gives the same text. The
/// tools' argument properties left out of `context.arguments` (those Cedar cannot type, and
/// those tools type differently) are listed as comments at its top, escaped, each with why;
/// a policy that reads one of them is refused when the registry is built.
///
/// ```
/// use registry_core::{DynamicTool, Registry};
/// use serde_json::json;
///
/// let registry = Registry::builder()
///     .tool(
///         DynamicTool::new("refund", "Refund an order.")
///             .scopes(["billing:write"])
///             .attribute("data_domain", ["finance"])
///             .parameters(json!({
///                 "type": "object",
///                 "properties": {"cents": {"type": "integer"}, "ratio": {"type": "number"}},
///                 "required": ["cents"],
///             }))
///             .handler(|_, _| Ok::<_, String>(json!(null))),
///     )
///     .build()?;
/// let schema = registry_cedar::schema(&registry);
/// assert!(schema.contains("\"data_domain\"?: Set<String>"));
/// assert!(schema.contains("\"cents\"?: Long"));
/// assert!(schema.contains(r#"left out of context.arguments: "ratio": "refund: Cedar cannot type it"#));
/// # Ok::<(), registry_core::RegistryError>(())
/// ```
pub fn schema(registry: &Registry) -> String {
    Vocabulary::of(registry, &BTreeMap::new()).text()
}
