#[tool]
/// Say hello.
fn hello() -> String {
    "hello".into()
}
