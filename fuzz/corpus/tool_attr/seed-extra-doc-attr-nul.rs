#[tool(scopes = "a:b")]
#[doc = "Read\0 the\r status.\u{180e}"]
fn f() {}
