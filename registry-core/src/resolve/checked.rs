//! A call's arguments once checked: a JSON value (the slow path), or the text that passed the
//! typed fast path's check, made a value only if something asks for one (a call policy, an
//! approval request, a tool built at run time).

use std::ops::Range;
use std::sync::OnceLock;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::resolve::fast::FastArguments;
use crate::resolve::slice::Slice;

/// The checked arguments of a call.
#[derive(Debug)]
pub(crate) enum CheckedArguments {
    Value(Value),
    Fast {
        fast: FastArguments,
        /// The arguments as a value, once asked for.
        value: OnceLock<Value>,
    },
}

impl From<Value> for CheckedArguments {
    fn from(value: Value) -> Self {
        CheckedArguments::Value(value)
    }
}

impl CheckedArguments {
    /// Arguments that passed the fast path's check, not yet a value.
    pub(crate) fn fast(fast: FastArguments) -> Self {
        CheckedArguments::Fast {
            fast,
            value: OnceLock::new(),
        }
    }

    /// The arguments as a value, as the slow path has them: `null` given for an optional
    /// argument left out. Made once, the first time something asks.
    pub(crate) fn value(&self) -> &Value {
        match self {
            CheckedArguments::Value(value) => value,
            CheckedArguments::Fast { fast, value } => value.get_or_init(|| to_value(fast)),
        }
    }

    /// [`value`](Self::value), by value.
    pub(crate) fn into_value(self) -> Value {
        match self {
            CheckedArguments::Value(value) => value,
            CheckedArguments::Fast { fast, value } => {
                value.into_inner().unwrap_or_else(|| to_value(&fast))
            }
        }
    }

    /// The argument `name` decoded into `T`, without making the whole value: `None` when the
    /// call left it out or gave `null`. Decoded as `T::deserialize` decodes it from
    /// [`value`](Self::value), error included.
    pub(crate) fn argument<T: DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<Option<T>, serde_json::Error> {
        let text = match self {
            CheckedArguments::Fast { fast, value } if value.get().is_none() => {
                let located = (fast.shape.root.index(name))
                    .and_then(|index| fast.values.as_slice().get(index)?.as_ref());
                match located {
                    None => return Ok(None),
                    Some(range) => fast.slice(range),
                }
            }
            _ => return argument_of(self.value(), name),
        };
        // Straight from the text (its plain values without `serde_json`'s parser: `Slice`);
        // what fails there is decoded again from the value, so that the error is the
        // value's to the letter.
        match T::deserialize(Slice(text)) {
            Ok(decoded) => Ok(Some(decoded)),
            Err(_) => argument_of(self.value(), name),
        }
    }
}

/// The property `name` of `arguments` decoded into `T`: `None` when absent or `null`.
pub(crate) fn argument_of<T: DeserializeOwned>(
    arguments: &Value,
    name: &str,
) -> Result<Option<T>, serde_json::Error> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => T::deserialize(value).map(Some),
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
    // Inserted one by one: for the few properties of a call, cheaper than collecting into a
    // map (which sorts and bulk-builds).
    let mut object = Map::new();
    for (range, name) in given {
        // The fast check parsed each of them already: they are JSON.
        let value = Value::deserialize(Slice(fast.slice(range))).unwrap_or(Value::Null);
        object.insert(name.to_owned(), value);
    }
    Value::Object(object)
}
