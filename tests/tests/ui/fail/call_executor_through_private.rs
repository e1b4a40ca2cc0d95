// The finding of issue 18: a program walks the declarations that `#[tool]` submits, takes a
// tool's generated executor and calls it, so that a `needs_approval` tool runs with no run, no
// approval and no audit. The executor takes a `RunToken` and `Arguments`, which only
// registry-core can make, so this does not compile.
use registry_core::__private::{Arguments, Declaration, Execute, inventory};
use registry_core::{ToolContext, tool};

/// Deploy the current build.
#[tool(public, needs_approval, destructive)]
fn deploy() -> String {
    "deployed".into()
}

fn main() {
    for declaration in inventory::iter::<Declaration> {
        if let Execute::Sync(execute) = declaration.execute {
            let ctx = ToolContext::new("call_1", declaration.name);
            let _ = execute(&ctx, Arguments::new(serde_json::Map::new()));
        }
    }
}
