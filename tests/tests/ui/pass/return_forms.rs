use std::fmt;

use registry_core::{Registry, ToolContext, ToolError, tool};
use serde_json::json;

/// Return a plain value.
#[tool]
fn plain() -> Vec<u8> {
    vec![1, 2]
}

/// Return nothing.
#[tool]
fn nothing() {}

/// Return nothing, spelled out.
#[tool]
fn unit() -> () {}

/// Fail with a `String`.
#[tool]
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
#[tool]
fn custom_error(key: String) -> Result<String, LookupError> {
    Err(LookupError::NotFound(key))
}

/// Fail with a boxed error.
#[tool]
fn boxed_error(number: String) -> Result<i64, Box<dyn std::error::Error + Send + Sync>> {
    Ok(number.parse::<i64>()?)
}

/// Fail with an `io::Result` alias.
#[tool]
fn alias_error() -> std::io::Result<()> {
    Err(std::io::Error::other("disk full"))
}

fn failure(outcome: Result<serde_json::Value, ToolError>) -> String {
    match outcome {
        Err(ToolError::Failed(message)) => message,
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let ctx = ToolContext::new("c1", "test");
    let call = |name: &str, args| registry.get(name).unwrap().call_blocking(&ctx, args);
    assert_eq!(call("plain", json!({})).unwrap(), json!([1, 2]));
    assert_eq!(call("nothing", json!({})).unwrap(), json!(null));
    assert_eq!(call("unit", json!({})).unwrap(), json!(null));
    assert_eq!(
        call("string_error", json!({"fail": false})).unwrap(),
        json!(1)
    );
    assert_eq!(
        failure(call("string_error", json!({"fail": true}))),
        "it failed"
    );
    assert_eq!(
        failure(call("custom_error", json!({"key": "k"}))),
        "no entry named \"k\""
    );
    assert_eq!(
        call("boxed_error", json!({"number": "42"})).unwrap(),
        json!(42)
    );
    assert!(failure(call("boxed_error", json!({"number": "x"}))).contains("invalid digit"));
    assert_eq!(failure(call("alias_error", json!({}))), "disk full");
}
