#[tool(public)]
/// Match a value against a type.
fn r#match(r#type: String, r#async: Option<bool>) -> String {
    format!("{type} {async:?}", type = r#type, async = r#async)
}
