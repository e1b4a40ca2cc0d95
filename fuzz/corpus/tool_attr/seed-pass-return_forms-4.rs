#[tool(public)]
/// Fail with a custom error type.
fn custom_error(key: String) -> Result<String, LookupError> {
    Err(LookupError::NotFound(key))
}
