//! Takes a call's JSON arguments apart into the typed parameters of a `#[tool]` function.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::resolve::tool_error::{ArgumentProblem, ToolError};

/// The arguments object of one call, consumed parameter by parameter by generated code.
///
/// Only registry-core makes one (there is no public constructor and no `Default`), after a
/// run has validated the call: generated code only takes it apart.
#[doc(hidden)]
#[derive(Debug)]
pub struct Arguments(Vec<(String, Value)>);

impl Arguments {
    /// Wraps the arguments object of a call, validated by the run that executes it.
    pub(crate) fn new(object: Map<String, Value>) -> Self {
        // A list, not the map: a tool's few parameters are found faster by a scan than by
        // removing them from a tree one by one.
        Arguments(object.into_iter().collect())
    }

    fn take(&mut self, name: &str) -> Option<Value> {
        let index = self.0.iter().position(|(key, _)| key == name)?;
        Some(self.0.swap_remove(index).1)
    }

    /// Takes the required parameter `name`.
    pub fn required<T: DeserializeOwned>(&mut self, name: &str) -> Result<T, ToolError> {
        match self.take(name) {
            Some(value) => decode(name, value),
            None => Err(ToolError::argument(
                "",
                format!("missing required property {name:?}"),
            )),
        }
    }

    /// Takes the optional parameter `name`: absent and `null` are both `None`.
    pub fn optional<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, ToolError> {
        match self.take(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => decode(name, value).map(Some),
        }
    }

    /// Fails when the call gave properties that no parameter took.
    pub fn finish(mut self) -> Result<(), ToolError> {
        if self.0.is_empty() {
            return Ok(());
        }
        self.0.sort_by(|a, b| a.0.cmp(&b.0));
        Err(ToolError::InvalidArguments(
            self.0
                .iter()
                .map(|(key, _)| ArgumentProblem::new("", format!("unknown property {key:?}")))
                .collect(),
        ))
    }
}

fn decode<T: DeserializeOwned>(name: &str, value: Value) -> Result<T, ToolError> {
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
