#[tool(nmae = "x", rate_limt = "1/s", crate = "registry_core", foo(bar = 1))]
/// Doc.
fn f() {}
