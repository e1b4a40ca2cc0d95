use registry_core::{Registry, tool};

/// Export the archive.
#[tool(public, task)]
fn export_archive() -> String {
    "exported".into()
}

/// Rebuild the search index from scratch.
#[tool(public, task = "required")]
fn rebuild_index() -> String {
    "rebuilt".into()
}

/// Read the build status.
#[tool(public)]
fn get_status(project: String) -> String {
    project
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let settings = |name: &str| registry.get(name).unwrap().settings().clone();

    let export = settings("export_archive");
    assert!(export.task && !export.task_required);
    // `task = "required"` implies `task`.
    let rebuild = settings("rebuild_index");
    assert!(rebuild.task && rebuild.task_required);
    let status = settings("get_status");
    assert!(!status.task && !status.task_required);
}
