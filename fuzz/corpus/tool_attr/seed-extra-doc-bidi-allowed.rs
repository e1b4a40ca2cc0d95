#[tool(scopes = "a:b", allow_description = "why")]
/// Delete ‮txt.exe, key sk-proj-4fG7hJ2kL9­mN3pQ8rS1tU6vW.
fn f() {}
