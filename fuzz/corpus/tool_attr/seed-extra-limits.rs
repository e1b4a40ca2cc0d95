#[tool(rate_limit = "4294967296/h", timeout = "18446744073709551615m")]
/// Doc.
fn f() {}
