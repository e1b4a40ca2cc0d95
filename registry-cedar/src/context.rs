//! A call's arguments as Cedar values, typed by the vocabulary (`schema.rs`).

use cedar_policy::RestrictedExpression;
use serde_json::Value;

use crate::schema::{MAX_DEPTH, Ty};

impl Ty {
    /// `value` as a Cedar value of this type, keeping only what the type declares; `None`
    /// when the value is not of the type (or not representable: an integer outside i64).
    pub(crate) fn expression(&self, value: &Value, depth: usize) -> Option<RestrictedExpression> {
        if depth > MAX_DEPTH {
            return None;
        }
        match (self, value) {
            (Ty::Long, Value::Number(n)) => n.as_i64().map(RestrictedExpression::new_long),
            (Ty::String, Value::String(text)) => {
                Some(RestrictedExpression::new_string(text.clone()))
            }
            (Ty::Bool, Value::Bool(b)) => Some(RestrictedExpression::new_bool(*b)),
            (Ty::Strings, Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(|text| RestrictedExpression::new_string(text.to_owned()))
                })
                .collect::<Option<Vec<_>>>()
                .map(RestrictedExpression::new_set),
            (Ty::Record(fields), Value::Object(object)) => {
                let mut kept = Vec::with_capacity(fields.len().min(object.len()));
                for (name, (ty, required)) in fields {
                    match object.get(name) {
                        Some(Value::Null) | None if !required => {}
                        Some(value) => kept.push((name.clone(), ty.expression(value, depth + 1)?)),
                        None => return None,
                    }
                }
                // The names are a map's keys, so never twice.
                RestrictedExpression::new_record(kept).ok()
            }
            _ => None,
        }
    }
}
