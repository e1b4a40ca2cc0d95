#[tool]
` submits, takes a
// tool's generated executor and calls it, so that a `needs_approval` tool runs with no run, no
// approval and no audit. The executor takes a `RunToken` and `Arguments`, which only
// registry-core can make, so this does not compile.
use registry_core::__private::{Arguments, Declaration, Execute, inventory}
