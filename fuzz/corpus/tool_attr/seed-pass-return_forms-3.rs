#[tool(public)]
/// Fail with a `String`.
fn string_error(fail: bool) -> Result<u8, String> {
    if fail {
        Err("it failed".to_owned())
    } else {
        Ok(1)
    }
}
