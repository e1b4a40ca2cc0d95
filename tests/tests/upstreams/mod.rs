//! The published MCP servers the federation tests start as upstreams: pinned in
//! `package.json` and `package-lock.json` beside this file, installed with `npm ci` (the
//! versions of the lock file) the first time a test needs one.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../install_lock/mod.rs"]
mod install_lock;

/// The entry point `entry` (a path under `node_modules`) of an installed package; every
/// package is installed with `npm ci` first if it is missing.
pub fn installed(entry: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstreams");
    let path = dir.join("node_modules").join(entry);
    // One install at a time, in this process and across the processes of a test runner.
    let _one_at_a_time = install_lock::exclusive(&dir);
    if !path.exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
            .current_dir(&dir)
            .status()
            .expect("npm runs (install Node.js and npm)");
        assert!(status.success(), "npm ci failed in {}", dir.display());
    }
    assert!(path.exists(), "{} after npm ci", path.display());
    path
}
