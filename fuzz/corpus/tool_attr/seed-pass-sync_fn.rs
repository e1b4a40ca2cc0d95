#[tool(public)]
/// Add two numbers.
fn add(a: i64, b: i64) -> i64 {
    a + b
}
