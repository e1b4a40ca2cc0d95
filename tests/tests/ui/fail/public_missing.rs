// add_public: leave (this case is the error for a tool that restricts nothing)
// A tool with no scopes and no tenants would be visible to every subject of every tenant: it
// must say so with `public`.
use registry_core::tool;

/// Tell the server's time.
#[tool(read_only)]
fn server_time() -> String {
    "12:00".into()
}

fn main() {}
