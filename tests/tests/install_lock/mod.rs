//! One `npm ci` at a time in a directory, across test processes: nextest runs every test in
//! a process of its own, and two `npm ci` in one directory delete each other's
//! `node_modules`.

use std::fs::{File, OpenOptions};
use std::path::Path;

/// Holds `dir/.npm-ci.lock` exclusively (an advisory lock, waited for) until the returned
/// file is dropped. The lock file is beside `node_modules`, which `npm ci` deletes.
pub fn exclusive(dir: &Path) -> File {
    let path = dir.join(".npm-ci.lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|error| panic!("{} could not be opened: {error}", path.display()));
    file.lock()
        .unwrap_or_else(|error| panic!("{} could not be locked: {error}", path.display()));
    file
}
