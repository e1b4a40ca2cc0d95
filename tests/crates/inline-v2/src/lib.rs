//! A second version of `versioned_lookup`, declared in `tests/tests/blocking.rs` too: one
//! crate declares a name once, so a new version of a declared tool in the same process comes
//! from another crate.

use registry_core::tool;

/// Look a key up (second version), taking `ms` milliseconds; report the thread this call ran
/// on.
#[tool(public)]
pub fn versioned_lookup(ms: u64) -> String {
    if ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    format!("{:?}", std::thread::current().id())
}
