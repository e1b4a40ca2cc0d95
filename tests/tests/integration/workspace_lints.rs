//! The lints are set in one place: the root `Cargo.toml`'s `[workspace.lints]`, which every
//! crate of the workspace inherits but this package of tests (its `Cargo.toml` says why).
//! registry-cedar is a workspace of its own, so its manifest holds a copy of the table, kept
//! equal here, and its members inherit that.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The `[workspace.lints.*]` tables of a manifest: their headers and entries, without comments
/// or blank lines.
fn workspace_lints(manifest: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut inside = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line.starts_with("[workspace.lints");
        }
        if inside && !line.is_empty() && !line.starts_with('#') {
            lines.push(line);
        }
    }
    lines
}

/// The manifests of the members a workspace's `members = [...]` names (relative to `dir`),
/// a trailing `/*` read as every folder with a `Cargo.toml`.
fn members(dir: &Path, manifest: &str) -> Vec<PathBuf> {
    let start = manifest
        .find("members = [")
        .unwrap_or_else(|| panic!("{}: no `members = [`", dir.display()));
    let list = &manifest[start + "members = [".len()..];
    let list = &list[..list.find(']').expect("`members` ends with `]`")];
    let mut manifests = Vec::new();
    for member in list.split(',').map(|m| m.trim().trim_matches('"')) {
        if member.is_empty() {
            continue;
        }
        if let Some(parent) = member.strip_suffix("/*") {
            let mut found: Vec<PathBuf> = std::fs::read_dir(dir.join(parent))
                .unwrap()
                .map(|entry| entry.unwrap().path().join("Cargo.toml"))
                .filter(|manifest| manifest.is_file())
                .collect();
            found.sort();
            manifests.extend(found);
        } else {
            manifests.push(dir.join(member).join("Cargo.toml"));
        }
    }
    manifests
}

#[test]
fn registry_cedar_holds_the_workspace_lint_table() {
    let root_manifest = read(&root().join("Cargo.toml"));
    let cedar_manifest = read(&root().join("registry-cedar/Cargo.toml"));
    let table = workspace_lints(&root_manifest);
    assert!(
        table.contains(&"missing_debug_implementations = \"warn\""),
        "{table:#?}"
    );
    assert_eq!(
        workspace_lints(&cedar_manifest),
        table,
        "registry-cedar/Cargo.toml's [workspace.lints] should be a copy of the root Cargo.toml's"
    );
}

#[test]
fn every_crate_inherits_the_workspace_lints() {
    let mut manifests = Vec::new();
    for workspace in [root(), root().join("registry-cedar")] {
        manifests.extend(members(&workspace, &read(&workspace.join("Cargo.toml"))));
    }
    assert!(manifests.len() > 10, "{manifests:#?}");
    // The one exception, this package: every target of it is a test.
    let tests_package = root().join("tests/Cargo.toml");
    assert!(manifests.contains(&tests_package), "{manifests:#?}");
    let without: Vec<String> = manifests
        .iter()
        .filter(|manifest| **manifest != tests_package)
        .filter(|manifest| !read(manifest).contains("\n[lints]\nworkspace = true\n"))
        .map(|manifest| manifest.display().to_string())
        .collect();
    assert!(
        without.is_empty(),
        "these crates should say `[lints]` `workspace = true` (and set no lint of their own): \
         {without:#?}"
    );
}
