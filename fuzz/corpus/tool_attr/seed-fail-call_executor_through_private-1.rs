#[tool(public, needs_approval, destructive)]
/// Deploy the current build.
fn deploy() -> String {
    "deployed".into()
}
