//! Takes a call's JSON arguments apart into the typed parameters of a `#[tool]` function.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::resolve::fast::FastArguments;
use crate::resolve::slice::Slice;
use crate::shared::tool_error::{ArgumentProblem, ToolError};

/// The arguments object of one call, consumed parameter by parameter by generated code.
///
/// Only registry-core makes one (there is no public constructor and no `Default`), after a
/// run has validated the call: generated code only takes it apart.
#[doc(hidden)]
#[derive(Debug)]
pub struct Arguments(Taken);

#[derive(Debug)]
enum Taken {
    /// Validated as a JSON value (the slow path).
    Values(Vec<(String, Value)>),
    /// Passed the typed fast path's check: each parameter is deserialized from its slice
    /// of the text.
    Text(FastArguments),
}

/// A value to decode into a parameter.
enum Found<'a> {
    Value(Value),
    Text(&'a str),
}

impl Arguments {
    /// Wraps the arguments object of a call, validated by the run that executes it.
    pub(crate) fn new(object: Map<String, Value>) -> Self {
        // A list, not the map: a tool's few parameters are found faster by a scan than by
        // removing them from a tree one by one.
        Arguments(Taken::Values(object.into_iter().collect()))
    }

    /// Wraps arguments that passed the fast path's check.
    pub(crate) fn fast(arguments: FastArguments) -> Self {
        Arguments(Taken::Text(arguments))
    }

    fn take(&mut self, name: &str) -> Option<Found<'_>> {
        match &mut self.0 {
            Taken::Values(values) => {
                let index = values.iter().position(|(key, _)| key == name)?;
                Some(Found::Value(values.swap_remove(index).1))
            }
            Taken::Text(fast) => {
                let index = fast.shape.root.index(name)?;
                let range = fast.values.as_mut_slice().get_mut(index)?.take()?;
                Some(Found::Text(fast.slice(&range)))
            }
        }
    }

    /// Takes the required parameter `name`.
    pub fn required<T: DeserializeOwned>(&mut self, name: &str) -> Result<T, ToolError> {
        match self.take(name) {
            Some(found) => decode(name, found),
            None => Err(ToolError::argument(
                "",
                format!("missing required property {name:?}"),
            )),
        }
    }

    /// Takes the optional parameter `name`: absent and `null` are both `None`.
    pub fn optional<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, ToolError> {
        match self.take(name) {
            None | Some(Found::Value(Value::Null)) => Ok(None),
            Some(found) => decode(name, found).map(Some),
        }
    }

    /// Fails when the call gave properties that no parameter took.
    pub fn finish(self) -> Result<(), ToolError> {
        let none_left = match &self.0 {
            Taken::Values(values) => values.is_empty(),
            Taken::Text(fast) => fast.values.as_slice().iter().all(Option::is_none),
        };
        if none_left {
            return Ok(());
        }
        let mut left: Vec<&str> = match &self.0 {
            Taken::Values(values) => values.iter().map(|(key, _)| key.as_str()).collect(),
            Taken::Text(fast) => (fast.values.as_slice().iter().zip(&fast.shape.root.names))
                .filter(|(value, _)| value.is_some())
                .map(|(_, name)| &**name)
                .collect(),
        };
        left.sort_unstable();
        Err(ToolError::InvalidArguments(
            left.iter()
                .map(|key| ArgumentProblem::new("", format!("unknown property {key:?}")))
                .collect(),
        ))
    }
}

/// The parameter `name` from what the call gave: from its text, straight into `T` (its plain
/// values without `serde_json`'s parser: [`Slice`]); what
/// fails there is decoded again from its value, which is what the slow path does, so that
/// the error (its JSON pointer and message) is the slow path's to the letter.
fn decode<T: DeserializeOwned>(name: &str, found: Found<'_>) -> Result<T, ToolError> {
    match found {
        Found::Value(value) => decode_value(name, value),
        Found::Text(text) => T::deserialize(Slice(text)).or_else(|_| {
            let value = serde_json::from_str(text).map_err(|error| {
                ToolError::argument(
                    format!("/{}", crate::pointer::escape(name)),
                    error.to_string(),
                )
            })?;
            decode_value(name, value)
        }),
    }
}

fn decode_value<T: DeserializeOwned>(name: &str, value: Value) -> Result<T, ToolError> {
    // Most arguments decode: without tracking the path, which only an error needs.
    if let Ok(decoded) = T::deserialize(&value) {
        return Ok(decoded);
    }
    serde_path_to_error::deserialize(value).map_err(|error| {
        let mut pointer = format!("/{}", crate::pointer::escape(name));
        for segment in error.path().iter() {
            match segment {
                serde_path_to_error::Segment::Seq { index } => {
                    pointer.push_str(&format!("/{index}"));
                }
                serde_path_to_error::Segment::Map { key } => {
                    pointer.push('/');
                    pointer.push_str(&crate::pointer::escape(key));
                }
                serde_path_to_error::Segment::Enum { variant } => {
                    pointer.push('/');
                    pointer.push_str(&crate::pointer::escape(variant));
                }
                serde_path_to_error::Segment::Unknown => break,
            }
        }
        ToolError::argument(pointer, error.into_inner().to_string())
    })
}
