//! Integration tests of the workspace; see `tests/`.
//!
//! This library holds what the tests (and the `ui/pass` cases) share to call tools the only
//! way they can be called: through a run.

use registry_core::{ArgumentProblem, ErrorKind, Observation, Registry, Run, Subject};
use serde_json::Value;

/// The run id of the runs [`open_run`] opens.
pub const RUN_ID: &str = "run-1";

/// The tenant of the runs [`open_run`] opens.
pub const TENANT: &str = "tenant-a";

/// Opens the run [`RUN_ID`] of `registry` for a read-write subject of tenant [`TENANT`]
/// holding `scopes`: those the tools a test calls require.
pub fn open_run(registry: &Registry, scopes: &[&str]) -> Run {
    let subject = Subject::new(TENANT).with_scopes(scopes.iter().copied());
    registry.open_run(RUN_ID, &subject)
}

/// The result of a call that succeeded; panics, showing the observation, if it failed.
#[track_caller]
pub fn success(observation: Observation) -> Value {
    assert!(
        !observation.is_error(),
        "expected a result, got {observation:?}"
    );
    observation.into_content()
}

/// Every problem of a call refused for invalid arguments; panics, showing the observation,
/// if it was not.
#[track_caller]
pub fn problems(observation: &Observation) -> &[ArgumentProblem] {
    assert_eq!(
        observation.error_kind(),
        Some(ErrorKind::InvalidArguments),
        "expected invalid arguments, got {observation:?}"
    );
    observation.problems()
}

/// What a tool said when it ran and failed: the error text after
/// `the tool "<name>" failed: `. Panics, showing the observation, if the call did not end in
/// [`ErrorKind::ExecutionFailed`] with such a text.
#[track_caller]
pub fn failure(observation: &Observation) -> &str {
    assert_eq!(
        observation.error_kind(),
        Some(ErrorKind::ExecutionFailed),
        "expected a failure of the tool, got {observation:?}"
    );
    let prefix = format!("the tool \"{}\" failed: ", observation.tool_name());
    observation
        .error_text()
        .and_then(|text| text.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("expected a text starting {prefix:?}, got {observation:?}"))
}
