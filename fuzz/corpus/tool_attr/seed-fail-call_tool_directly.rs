#[tool(public)]
/// Say hello.
fn hello() -> String {
    "hello".into()
}
