use std::fmt;

use registry_core::{Registry, ToolCall, tool};
use registry_tests::{failure, open_run, success};
use serde_json::json;

/// Return a plain value.
#[tool(public)]
fn plain() -> Vec<u8> {
    vec![1, 2]
}

/// Return nothing.
#[tool(public)]
fn nothing() {}

/// Return nothing, spelled out.
#[tool(public)]
#[allow(clippy::unused_unit)] // the form under test
fn unit() -> () {}

/// Fail with a `String`.
#[tool(public)]
fn string_error(fail: bool) -> Result<u8, String> {
    if fail {
        Err("it failed".to_owned())
    } else {
        Ok(1)
    }
}

/// An error type of the kind thiserror derives.
#[derive(Debug)]
enum LookupError {
    NotFound(String),
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupError::NotFound(key) => write!(f, "no entry named {key:?}"),
        }
    }
}

impl std::error::Error for LookupError {}

/// Fail with a custom error type.
#[tool(public)]
fn custom_error(key: String) -> Result<String, LookupError> {
    Err(LookupError::NotFound(key))
}

/// Fail with a boxed error.
#[tool(public)]
fn boxed_error(number: String) -> Result<i64, Box<dyn std::error::Error + Send + Sync>> {
    Ok(number.parse::<i64>()?)
}

/// Fail with an `io::Result` alias.
#[tool(public)]
fn alias_error() -> std::io::Result<()> {
    Err(std::io::Error::other("disk full"))
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let run = open_run(&registry, &[]);
    let call = |name: &str, args| run.call_blocking(ToolCall::new("c1", name, args));
    assert_eq!(success(call("plain", json!({}))), json!([1, 2]));
    assert_eq!(success(call("nothing", json!({}))), json!(null));
    assert_eq!(success(call("unit", json!({}))), json!(null));
    assert_eq!(
        success(call("string_error", json!({"fail": false}))),
        json!(1)
    );
    assert_eq!(
        failure(&call("string_error", json!({"fail": true}))),
        "it failed"
    );
    assert_eq!(
        failure(&call("custom_error", json!({"key": "k"}))),
        "no entry named \"k\""
    );
    assert_eq!(
        success(call("boxed_error", json!({"number": "42"}))),
        json!(42)
    );
    assert!(failure(&call("boxed_error", json!({"number": "x"}))).contains("invalid digit"));
    assert_eq!(failure(&call("alias_error", json!({}))), "disk full");
}
