#[tool(public)]
/// Fail with a boxed error.
fn boxed_error(number: String) -> Result<i64, Box<dyn std::error::Error + Send + Sync>> {
    Ok(number.parse::<i64>()?)
}
