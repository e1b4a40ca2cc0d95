//! The published MCP servers the federation tests start as upstreams: pinned in
//! `package.json` and `package-lock.json` beside this file, installed with `npm ci` (the
//! versions of the lock file) the first time a test needs one.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The entry point `entry` (a path under `node_modules`) of an installed package; every
/// package is installed with `npm ci` first if it is missing.
pub fn installed(entry: &str) -> PathBuf {
    static INSTALLING: Mutex<()> = Mutex::new(());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstreams");
    let path = dir.join("node_modules").join(entry);
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
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
