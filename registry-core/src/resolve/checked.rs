//! A call's arguments once checked: a JSON value (the slow path), or the text that passed the
//! typed fast path's check, made a value only if something asks for one (a call policy, an
//! approval request, a tool built at run time).

use std::ops::Range;

use serde_json::{Map, Value};

use crate::resolve::fast::FastArguments;

/// The checked arguments of a call.
#[derive(Debug)]
pub(crate) enum CheckedArguments {
    Value(Value),
    Fast {
        fast: FastArguments,
        /// The arguments as a value, once asked for.
        value: Option<Value>,
    },
}

impl From<Value> for CheckedArguments {
    fn from(value: Value) -> Self {
        CheckedArguments::Value(value)
    }
}

impl CheckedArguments {
    /// The arguments as a value, as the slow path has them: `null` given for an optional
    /// argument left out.
    pub(crate) fn value(&mut self) -> &Value {
        match self {
            CheckedArguments::Value(value) => value,
            CheckedArguments::Fast { fast, value } => value.get_or_insert_with(|| to_value(fast)),
        }
    }

    /// [`value`](Self::value), by value.
    pub(crate) fn into_value(self) -> Value {
        match self {
            CheckedArguments::Value(value)
            | CheckedArguments::Fast {
                value: Some(value), ..
            } => value,
            CheckedArguments::Fast { fast, value: None } => to_value(&fast),
        }
    }
}

/// The value of arguments that passed the fast check: each given property parsed from its
/// slice, in the order of the text (the order the slow path's parse keeps).
fn to_value(fast: &FastArguments) -> Value {
    let mut given: Vec<(&Range<u32>, &str)> =
        (fast.values.as_slice().iter().zip(&fast.shape.root.names))
            .filter_map(|(range, name)| Some((range.as_ref()?, &**name)))
            .collect();
    given.sort_unstable_by_key(|(range, _)| range.start);
    let object: Map<String, Value> = given
        .into_iter()
        // The fast check parsed each of them already: they are JSON.
        .map(|(range, name)| {
            let value = serde_json::from_str(fast.slice(range)).unwrap_or(Value::Null);
            (name.to_owned(), value)
        })
        .collect();
    Value::Object(object)
}
