#[tool[name = "x"]]
/// Doc.
fn f() {}
