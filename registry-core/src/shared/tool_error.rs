//! How a tool call can fail on the tool's side of the boundary.

use std::fmt;

use serde::Serialize;

/// Why a call to a tool produced no result.
///
/// The messages are written for the model: they say what was wrong so that it can correct
/// the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments do not fit the tool's schema; every problem is listed.
    #[error("invalid arguments: {}", join(.0))]
    InvalidArguments(Vec<ArgumentProblem>),
    /// The tool ran and returned an error; this is its text.
    #[error("{0}")]
    Failed(String),
    /// The tool's result could not be turned into JSON.
    #[error("the tool's result could not be converted to JSON: {0}")]
    Output(String),
    /// What the tool depends on could not be reached (a remote server down, a connection
    /// lost): the call is answered [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable),
    /// not as a failure of the tool.
    #[error("{0}")]
    Unavailable(String),
}

impl ToolError {
    /// An error of a tool, from anything that displays.
    pub fn failed(error: impl fmt::Display) -> Self {
        ToolError::Failed(error.to_string())
    }

    /// The tool could not reach what it depends on (see [`ToolError::Unavailable`]).
    pub fn unavailable(reason: impl fmt::Display) -> Self {
        ToolError::Unavailable(reason.to_string())
    }

    /// Invalid arguments with one problem.
    pub(crate) fn argument(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError::InvalidArguments(vec![ArgumentProblem::new(pointer, message)])
    }
}

fn join(problems: &[ArgumentProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// One thing wrong with a call's arguments: where (a JSON pointer into the arguments, empty
/// for the arguments object itself) and what was expected.
///
/// Displays as `/verbose: expected boolean, got string "yes"`, or without the pointer when it
/// is the root: `missing required property "project"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ArgumentProblem {
    /// A JSON pointer (RFC 6901) to the offending value; `""` for the arguments object.
    pub pointer: String,
    /// What is wrong there and what was expected.
    pub message: String,
}

impl ArgumentProblem {
    /// A problem at `pointer`.
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        ArgumentProblem {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ArgumentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.pointer, self.message)
        }
    }
}
