//! Merging one schema's keywords into another's: an `allOf` branch, or the one branch left of
//! a nullable union (`nullable: true`, Gemini's).

use serde_json::{Map, Value};

/// Merges the keywords of `branch` into `object` (an `allOf` branch into its schema, or the
/// one non-null branch of a nullable union): properties and `required` are united, equal
/// values and annotations the schema already has are kept; otherwise the keyword is returned.
pub(super) fn merge_into(
    object: &mut Map<String, Value>,
    branch: &Map<String, Value>,
) -> Result<(), String> {
    for (keyword, value) in branch {
        match (keyword.as_str(), object.get_mut(keyword)) {
            (_, None) => {
                object.insert(keyword.clone(), value.clone());
            }
            (_, Some(existing)) if existing == value => {}
            ("description" | "title" | "default" | "examples" | "$comment", Some(_)) => {}
            ("properties", Some(Value::Object(existing))) => {
                let Value::Object(more) = value else {
                    return Err(keyword.clone());
                };
                for (name, schema) in more {
                    match existing.get(name) {
                        Some(other) if other != schema => return Err(format!("properties/{name}")),
                        _ => {
                            existing.insert(name.clone(), schema.clone());
                        }
                    }
                }
            }
            ("required", Some(Value::Array(existing))) => {
                for name in value.as_array().into_iter().flatten() {
                    if !existing.contains(name) {
                        existing.push(name.clone());
                    }
                }
            }
            _ => return Err(keyword.clone()),
        }
    }
    Ok(())
}

/// The encoding with `nullable: true` (OpenAPI 3.0's, Gemini's) of a canonical nullable
/// schema: `"null"` out of type arrays, `enum`s and unions, and `nullable: true`; a union left
/// with one branch is merged into the schema. `None` when the schema is not nullable.
pub(super) fn nullable_keyword(object: &Map<String, Value>) -> Option<Map<String, Value>> {
    let null = Value::from("null");
    let is_null_branch = |branch: &Value| {
        branch.get("type") == Some(&null)
            && branch.as_object().is_some_and(|b| {
                b.keys()
                    .all(|k| k == "type" || k == "description" || k == "title")
            })
    };
    let mut out = object.clone();
    let mut nullable = false;
    if let Some(Value::Array(types)) = out.get_mut("type")
        && types.contains(&null)
    {
        types.retain(|t| *t != null);
        nullable = true;
        if types.len() == 1 {
            let single = types[0].clone();
            out.insert("type".into(), single);
        }
    }
    if let Some(Value::Array(values)) = out.get_mut("enum")
        && values.contains(&Value::Null)
    {
        values.retain(|v| !v.is_null());
        nullable = true;
    }
    for keyword in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = out.get(keyword) else {
            continue;
        };
        if !branches.iter().any(is_null_branch) {
            continue;
        }
        nullable = true;
        let rest: Vec<Value> = branches
            .iter()
            .filter(|b| !is_null_branch(b))
            .cloned()
            .collect();
        match rest.as_slice() {
            [Value::Object(single)] => {
                out.remove(keyword);
                let mut merged = out.clone();
                if merge_into(&mut merged, single).is_ok() {
                    out = merged;
                } else {
                    out.insert(keyword.into(), Value::Array(rest));
                }
            }
            [Value::Bool(true)] => {
                out.remove(keyword);
            }
            _ => {
                out.insert(keyword.into(), Value::Array(rest));
            }
        }
    }
    nullable.then(|| {
        out.insert("nullable".into(), Value::Bool(true));
        out
    })
}
